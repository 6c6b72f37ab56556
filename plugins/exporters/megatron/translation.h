// translation.h: a plan in Megatron-LM's terms: the flags of pretrain_gpt.py, grouped the way the
// launch script lists them, and what Megatron-LM cannot express.
//
// Every flag name is one that Megatron-LM's megatron/training/arguments.py defines (the
// argparse groups "network size", "training", "mixed precision", "distributed", "moe",
// "tokenizer", "data and dataloader", "Transformer-Engine"); the unit test keeps the list.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "paraplan/sdk.hpp"

namespace paraplan_megatron {

// One bash array of the launch script: its flags in order, a value-less flag is a switch.
struct FlagGroup {
  std::string array;    // MODEL_ARGS
  std::string comment;  // the comment line above the flags
  std::vector<std::pair<std::string, std::string>> flags;

  void add(const std::string& flag) { flags.emplace_back(flag, ""); }
  void add(const std::string& flag, const std::string& value) { flags.emplace_back(flag, value); }
  void add(const std::string& flag, int64_t value) { flags.emplace_back(flag, std::to_string(value)); }
};

struct Translation {
  FlagGroup model{"MODEL_ARGS", "model shape", {}};
  FlagGroup batch{"BATCH_ARGS", "batch", {}};
  FlagGroup precision{"PRECISION_ARGS", "precision", {}};
  FlagGroup parallelism{"PARALLEL_ARGS", "parallelism", {}};
  FlagGroup recompute{"RECOMPUTE_ARGS", "activation recomputation", {}};
  FlagGroup moe{"MOE_ARGS", "mixture of experts", {}};
  FlagGroup training{"TRAINING_ARGS", "training run", {}};
  FlagGroup data{"DATA_ARGS", "data: mock samples and a null tokenizer of the model's vocabulary", {}};
  std::vector<std::string> unexpressed;  // one line each, for ArtifactSink::unexpressed
  // Tensor or context parallelism without torch FSDP2: Megatron-LM requires
  // CUDA_DEVICE_MAX_CONNECTIONS=1 before Blackwell (arguments.py, validate_args).
  bool ordered_launches = false;

  // The groups in script order, empty ones included (the script leaves those out).
  std::vector<const FlagGroup*> groups() const {
    return {&model, &batch, &precision, &parallelism, &recompute, &moe, &training, &data};
  }
};

// Model shape, batch, precision, recompute, the MoE model shape, training run and data flags.
void translate_model(const paraplan::PlanView& plan, int64_t train_iters, Translation& out);

// Tensor, sequence/context, pipeline, expert and data parallelism from the plan's axes and
// pipeline and the strategies' settings; strategies Megatron-LM does not know are unexpressed.
void translate_parallelism(const paraplan::PlanView& plan, const paraplan::ExportContext& context, Translation& out);

// A Megatron-LM float argument: 1 -> "1.0", 1.25 -> "1.25".
std::string decimal(double value);

}  // namespace paraplan_megatron
