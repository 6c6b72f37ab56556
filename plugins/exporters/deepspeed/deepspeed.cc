// DeepSpeed exporter: the plan as a DeepSpeed config and launch script.
//
// Files:
//   ds_config.json     the DeepSpeed config (nlohmann::json): batch sizes, precision,
//                      zero_optimization, pipeline, activation_checkpointing, and where the plan has
//                      them tensor_parallel (AutoTP) and sequence_parallel_size (Ulysses)
//   run_deepspeed.sh   the `deepspeed` launcher over the cluster's nodes
//
// Batch identity (DeepSpeedConfig._batch_assertion): train_batch_size = train_micro_batch_size_per_gpu
// x gradient_accumulation_steps x data-parallel size; gradient_accumulation_steps is the plan's
// micro-batches per data-parallel rank (with a pipeline, the micro-batches one step pushes through it).
//
// Mapping:
//   fsdp stage s -> zero_optimization.stage s; overlap -> overlap_comm; bucket_parameters ->
//   reduce_bucket_size (and allgather_bucket_size at stages 1-2), one layer's parameters where it
//   is 0 (gradient_buckets.h); stage 3: stage3_prefetch_bucket_size = prefetch layers' parameters,
//   its per-submodule gathers reported
//   hsdp stage 3 -> ZeRO-3 with MiCS (mics_shard_size = shard group, replicas across groups);
//   hsdp stages 1, 2 -> unexpressed (MiCS needs ZeRO-3), ZeRO-s over all data-parallel ranks
//   pp -> pipeline {stages, partition}; the training script builds PipelineModule(num_stages=p);
//   DeepSpeed's pipeline engine runs 1F1B only and takes ZeRO stage 0 or 1: stages 2-3 exported
//   as 1, reported unless the plan already prices them as 1 (ZeRO-2 under pp: zero1_equivalent.h)
//   recompute full -> activation_checkpointing (+ pipeline.activation_checkpoint_interval 1);
//   selective -> unexpressed
//   tp -> tensor_parallel.autotp_size, reported (AutoTP, not Megatron TP); sp ulysses ->
//   sequence_parallel_size; ring attention, Megatron sequence parallelism, expert parallelism -> unexpressed
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "paraplan/host_issue.hpp"
#include "paraplan/sdk.hpp"
#include "plugins/exporters/internal/gradient_buckets.h"
#include "plugins/exporters/internal/zero1_equivalent.h"

namespace {

using json = nlohmann::ordered_json;

class DeepSpeed : public paraplan::Exporter {
 public:
  static paraplan::PluginInfo info() {
    return {"deepspeed",
            "1.0.0",
            "DeepSpeed config (ds_config.json) and a deepspeed launcher script",
            {paraplan::ParamSpec::String("train_script", "train.py",
                                         "the training script run_deepspeed.sh launches"),
             paraplan::ParamSpec::Int("steps_per_print", 10, "steps_per_print written into ds_config.json")
                 .at_least(1)}};
  }

  explicit DeepSpeed(const paraplan::Params& params)
      : train_script_(params.string_value("train_script")), steps_per_print_(params.int_value("steps_per_print")) {}

  void export_plan(const paraplan::PlanView& plan, const pp_hardware_binding_v1&,
                   const paraplan::ExportContext& context, const paraplan::ArtifactSink& artifacts) override {
    // Only what the 1.5 model fields say is translated so far: refuse the rest, never drop it.
    if (const std::string beyond = paraplan::beyond_uniform_transformer(plan.model()); !beyond.empty())
      throw paraplan::Error(PP_ERROR_UNSUPPORTED, "the model has " + beyond + ", which the DeepSpeed export does not write yet");
    const pp_training& training = plan.training();
    const pp_pipeline& pipeline = plan.pipeline();
    std::vector<std::string> unexpressed;

    const int64_t tp = plan.axis_degree(PP_AXIS_TP), cp = plan.axis_degree(PP_AXIS_CP);
    const int64_t pp = plan.axis_degree(PP_AXIS_PP), ep = plan.axis_degree(PP_AXIS_EP);
    const int64_t dp = plan.data_parallel_size();
    const int64_t accumulation = std::max<int64_t>(1, pipeline.micro_batches);

    json config;
    config["train_batch_size"] = training.micro_batch * accumulation * dp;
    config["train_micro_batch_size_per_gpu"] = training.micro_batch;
    config["gradient_accumulation_steps"] = accumulation;
    if (training.micro_batch * accumulation * dp != training.global_batch)
      unexpressed.push_back("global_batch " + std::to_string(training.global_batch) +
                            " is not micro_batch x micro-batches x dp; train_batch_size set to " +
                            std::to_string(training.micro_batch * accumulation * dp));
    config["steps_per_print"] = steps_per_print_;
    config["gradient_clipping"] = 1.0;

    // precision
    if (training.precision == PP_PRECISION_FP16) {
      config["fp16"] = json{{"enabled", true}, {"loss_scale", 0}, {"initial_scale_power", 16}};
    } else {
      config["bf16"] = json{{"enabled", true}};
      if (paraplan::quantised_precision(training.precision))
        unexpressed.push_back("precision " + std::string(paraplan::precision_name(training.precision)) +
                              ": ds_config has no low-precision GEMM switch (they come from Transformer Engine "
                              "layers in the model); exported as bf16");
    }

    if (paraplan::master_weights_in_place(training))
      unexpressed.push_back("training.master_weights = \"in_place\": DeepSpeed's bf16 optimizer keeps bf16 weights and "
                            "an fp32 copy in its optimizer state: the job holds 2 bytes per parameter more model state "
                            "than was evaluated");
    if (paraplan::fp8_attention(training))
      unexpressed.push_back("training.fp8_attention: ds_config has no FP8 attention; the job runs attention in 16 bits, "
                            "slower than was evaluated");
    if (paraplan::moe_fused_mlp(training))
      unexpressed.push_back("training.moe_fused_mlp: DeepSpeed's MoE runs the experts' GEMMs and activation as separate "
                            "kernels, slower than was evaluated");
    if (paraplan::elementwise_kernels(training) == PP_ELEMENTWISE_EAGER)
      unexpressed.push_back("training.elementwise_kernels = \"eager\": ds_config does not say how the training script's "
                            "norms, rotary and GLU run; the plan assumed PyTorch eager kernels");
    if (paraplan::issue::cuda_graph_modules(training) != 0)
      unexpressed.push_back("cuda_graph_modules: ds_config captures no CUDA graphs of Megatron-LM's modules; the job "
                            "issues the ops the plan replays from graphs eagerly (slower where the host bounds it)");

    // ZeRO
    const auto* fsdp = context.strategy(PP_STRATEGY_FSDP);
    const auto* hsdp = context.strategy(PP_STRATEGY_HSDP);
    int64_t stage = 0;
    bool overlap = true;
    int64_t mics_group = 0;
    const auto* sharding = hsdp ? hsdp : fsdp;
    if (hsdp) {
      stage = hsdp->integer(PP_DP_PARAM_STAGE, 3);
      overlap = hsdp->flag(PP_DP_PARAM_OVERLAP);
      const int64_t group = plan.axis_degree(PP_AXIS_DP);
      if (stage == 3) {
        mics_group = group;
      } else {
        unexpressed.push_back("hsdp stage " + std::to_string(stage) + " (shard group " + std::to_string(group) +
                              "): DeepSpeed's hybrid sharding (MiCS, mics_shard_size) needs ZeRO-3; exported as "
                              "ZeRO-" + std::to_string(stage) + " over all " + std::to_string(dp) +
                              " data-parallel ranks");
      }
    } else if (fsdp) {
      stage = fsdp->integer(PP_DP_PARAM_STAGE, 0);
      overlap = fsdp->flag(PP_DP_PARAM_OVERLAP);
    }
    if (pp > 1 && stage >= 2) {
      // ZeRO-2 under pp already moves its state as ZeRO-1 does; ZeRO-3's held weights do not.
      const char* owner = hsdp ? PP_STRATEGY_HSDP : PP_STRATEGY_FSDP;
      if (!paraplan::exporters::moves_state_as_zero1(plan, owner))
        unexpressed.push_back("ZeRO-" + std::to_string(stage) +
                              " with pipeline parallelism: DeepSpeed's pipeline engine takes ZeRO stage 0 or 1 only; "
                              "exported as ZeRO-1");
      stage = 1;
      mics_group = 0;
    }
    json zero{{"stage", stage}};
    if (stage > 0) {
      zero["overlap_comm"] = overlap;
      zero["contiguous_gradients"] = true;
      if (stage <= 2) {
        zero["reduce_scatter"] = true;
        zero["allgather_partitions"] = true;
      }
      if (mics_group > 0) {
        zero["mics_shard_size"] = mics_group;
        zero["mics_hierarchical_params_gather"] = false;
      }
      // Buckets in elements (zero/config.py): the plan's, or one layer's parameters where it
      // reduces one collective per layer; ZeRO-3 prefetches `prefetch` layers' parameters.
      const auto bucket = static_cast<int64_t>(std::llround(paraplan::exporters::bucket_size_parameters(plan, *sharding)));
      zero["reduce_bucket_size"] = bucket;
      if (stage <= 2) {
        zero["allgather_bucket_size"] = bucket;
      } else {
        const int64_t prefetch = sharding->integer(PP_DP_PARAM_PREFETCH, 1);
        zero["stage3_prefetch_bucket_size"] = static_cast<int64_t>(
            std::llround(static_cast<double>(prefetch) * paraplan::exporters::largest_layer_parameters(plan, sharding->name)));
        unexpressed.push_back("ZeRO-3 weight gathers: DeepSpeed gathers each submodule's weights as the forward and "
                              "backward reach it (several all-gathers a layer), priced as one a layer");
      }
    }
    config["zero_optimization"] = zero;

    // pipeline
    const bool full_recompute = training.recompute == PP_RECOMPUTE_FULL;
    if (pp > 1) {
      config["pipeline"] = json{{"stages", pp},
                                {"partition", "uniform"},
                                {"seed_layers", false},
                                {"activation_checkpoint_interval", full_recompute ? 1 : 0},
                                {"pipe_partitioned", tp > 1},
                                {"grad_partitioned", tp > 1}};
      switch (pipeline.schedule) {
        case PP_SCHEDULE_GPIPE:
          unexpressed.push_back("pp schedule gpipe: DeepSpeed's pipeline engine runs 1F1B (TrainSchedule) only; "
                                "exported as 1F1B");
          break;
        case PP_SCHEDULE_INTERLEAVED_1F1B:
          unexpressed.push_back("pp schedule interleaved-1f1b (" + std::to_string(pipeline.virtual_stages) +
                                " virtual stages): DeepSpeed's pipeline engine has no interleaving (one chunk per "
                                "rank); exported as 1F1B over " +
                                std::to_string(pp) + " stages");
          break;
        case PP_SCHEDULE_ZERO_BUBBLE:
          unexpressed.push_back("pp schedule zero-bubble: DeepSpeed's pipeline engine has no zero-bubble schedule; "
                                "exported as 1F1B");
          break;
        case PP_SCHEDULE_DUALPIPE_V:
          unexpressed.push_back("pp schedule dualpipe-v: DeepSpeed's pipeline engine has no DualPipe schedule (one "
                                "chunk per rank); exported as 1F1B over " +
                                std::to_string(pp) + " stages");
          break;
        default:
          break;
      }
    }

    // activation recomputation
    if (full_recompute) {
      config["activation_checkpointing"] = json{{"partition_activations", tp > 1},
                                                {"cpu_checkpointing", false},
                                                {"contiguous_memory_optimization", false},
                                                {"number_checkpoints", nullptr},
                                                {"synchronize_checkpoint_boundary", false},
                                                {"profile", false}};
      if (const int64_t partial = paraplan::recompute_num_layers(training); partial > 0)
        unexpressed.push_back("recompute_num_layers = " + std::to_string(partial) +
                              ": DeepSpeed checkpoints every layer (or every k-th, activation_checkpoint_interval), "
                              "not each stage's first layers; exported as every layer, which recomputes more than "
                              "was evaluated");
    } else if (training.recompute == PP_RECOMPUTE_SELECTIVE) {
      unexpressed.push_back(paraplan::recomputed_modules(training) == PP_RECOMPUTE_TORCHTITAN_OP
                                ? "recompute_modules = [\"torchtitan_op\"]: DeepSpeed checkpoints whole layers only "
                                  "(activation_checkpointing); left off, the job keeps every activation"
                                : "recompute selective: DeepSpeed checkpoints whole layers only "
                                  "(activation_checkpointing); left off, flash attention recomputes the attention core");
    }

    if (const int64_t offloaded = paraplan::cpu_offloading_num_layers(training); offloaded > 0)
      unexpressed.push_back("cpu_offloading_num_layers = " + std::to_string(offloaded) +
                            ": DeepSpeed offloads only the checkpoints of recomputed layers "
                            "(activation_checkpointing.cpu_checkpointing), not a layer's activations; the job "
                            "holds them on the GPU, more memory than was evaluated");

    // tensor, sequence and context parallelism
    const auto* tp_strategy = context.strategy(PP_STRATEGY_TP);
    const auto* sp = context.strategy(PP_STRATEGY_SP);
    const std::string sp_mode = sp ? sp->setting("mode") : "";
    if (tp > 1) {
      config["tensor_parallel"] = json{{"autotp_size", tp}};
      unexpressed.push_back("tp " + std::to_string(tp) +
                            ": DeepSpeed's engine has tensor parallelism only as AutoTP for Hugging Face models "
                            "(tensor_parallel.autotp_size = " + std::to_string(tp) +
                            ", emitted); Megatron-style TP (vocabulary-parallel embedding and loss) needs "
                            "Megatron-DeepSpeed --tensor-model-parallel-size " + std::to_string(tp));
      if (sp && (sp_mode == "megatron" || sp->flag("megatron_sp")))
        unexpressed.push_back("sp megatron (sequence-sharded norms and dropout with TP): AutoTP has no sequence "
                              "parallelism; needs Megatron-DeepSpeed --sequence-parallel");
      if (tp_strategy && tp_strategy->flag(PP_TP_PARAM_OVERLAP))
        unexpressed.push_back("tp overlap: DeepSpeed has no overlap of tensor-parallel collectives with GEMMs");
    }
    if (cp > 1) {
      if (sp_mode == "ulysses") {
        config["sequence_parallel_size"] = cp;
      } else {
        unexpressed.push_back("sp mode ring (context parallelism " + std::to_string(cp) +
                              "): DeepSpeed has no ring attention; its sequence parallelism is Ulysses "
                              "(sequence_parallel_size, all-to-all over heads), not emitted");
      }
    }

    // expert parallelism
    if (ep > 1) {
      const auto* ep_strategy = context.strategy(PP_STRATEGY_EP);
      const std::string capacity = ep_strategy ? ep_strategy->setting("capacity_factor") : "";
      unexpressed.push_back("ep " + std::to_string(ep) +
                            ": DeepSpeed-MoE takes expert parallelism in the model code, not in ds_config: "
                            "deepspeed.moe.layer.MoE(num_experts=" + std::to_string(plan.model().moe_experts) +
                            ", ep_size=" + std::to_string(ep) + ", k=" + std::to_string(plan.model().moe_top_k) +
                            (capacity.empty() ? "" : ", capacity_factor=" + capacity) + ")");
      if (ep_strategy && (ep_strategy->setting("dispatcher") == "flex" || ep_strategy->flag("overlap")))
        unexpressed.push_back("ep dispatcher flex and ep overlap: DeepSpeed-MoE dispatches by all-to-all on the "
                              "critical path");
    }
    if (training.optimizer == PP_OPTIMIZER_SGD)
      unexpressed.push_back("optimizer sgd: no optimizer section written; pass torch.optim.SGD to "
                            "deepspeed.initialize");

    artifacts.text_file("ds_config.json", config.dump(2) + "\n");
    artifacts.text_file("run_deepspeed.sh", launch_script(plan, context, pp, ep));
    for (const std::string& line : unexpressed) artifacts.unexpressed(line);
  }

 private:
  std::string launch_script(const paraplan::PlanView& plan, const paraplan::ExportContext& context, int64_t pp,
                            int64_t ep) const {
    const pp_cluster& cluster = plan.cluster();
    const int64_t per_node = cluster.gpus_per_node > 0 ? std::min(cluster.gpus_per_node, cluster.num_gpus)
                                                       : cluster.num_gpus;
    const int64_t nodes = per_node > 0 ? (cluster.num_gpus + per_node - 1) / per_node : 1;
    std::ostringstream out;
    out << "#!/usr/bin/env bash\n"
        << "# DeepSpeed launch for " << context.recipe_name() << " (paraplan export): " << nodes
        << " node(s) x " << per_node << " GPUs.\n";
    if (nodes > 1)
      out << "# HOSTFILE lists the " << nodes << " nodes, one line each: \"<hostname> slots=" << per_node
          << "\" (DeepSpeed's hostfile format).\n";
    out << "# The training script parses deepspeed.add_config_arguments(parser) and calls deepspeed.initialize.\n";
    if (pp > 1)
      out << "# It builds the model as PipelineModule(layers=..., num_stages=" << pp
          << ", partition_method=\"uniform\") and steps with engine.train_batch().\n";
    if (ep > 1)
      out << "# Its MoE layers are deepspeed.moe.layer.MoE(..., ep_size=" << ep << ").\n";
    out << "set -euo pipefail\n"
        << "HERE=\"$(cd \"$(dirname \"${BASH_SOURCE[0]}\")\" && pwd)\"\n"
        << "TRAIN_SCRIPT=\"${TRAIN_SCRIPT:-" << train_script_ << "}\"\n";
    if (nodes > 1) out << "HOSTFILE=\"${HOSTFILE:-$HERE/hostfile}\"\n";
    out << "deepspeed " << (nodes > 1 ? "--hostfile \"$HOSTFILE\" " : "") << "--num_nodes " << nodes
        << " --num_gpus " << per_node << " \\\n"
        << "  \"$TRAIN_SCRIPT\" --deepspeed --deepspeed_config \"$HERE/ds_config.json\" \"$@\"\n";
    return out.str();
  }

  std::string train_script_;
  int64_t steps_per_print_;
};

}  // namespace

PARAPLAN_PLUGIN(DeepSpeed)
