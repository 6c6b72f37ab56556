// paraplan/host/plan/workload_builder.h: model + training settings -> the unsharded workload.
//
// Fills a fresh Plan with the ops and memory of ONE device running the whole model on one
// micro-batch, before any strategy divides it: per-layer GEMMs with their shapes, the attention
// core, memory-bound kernels, the embedding and output head, the optimizer update, and the
// parameter, gradient, optimizer-state and activation memory. docs/cost-model.md gives every
// formula with its source; the canonical names are listed in sdk/include/paraplan/plan.h.
#pragma once

#include "host/plan/plan.h"

namespace paraplan::host {

struct WorkloadOptions {
  bool flash_attention = true;  // removes the 5·a·s²·b attention-score activations
  bool fp32_main_grads = true;  // Megatron-LM accumulates gradients in fp32 (4 bytes), ZeRO in 2
};

void build_workload(Plan& plan, const WorkloadOptions& options);

// The dtype a recipe's precision runs its linear layers' GEMMs in (attention stays bf16/fp16).
pp_dtype gemm_dtype(const pp_training& training);

// Parameters of a uniform model's layer, of the embedding and of the output head (a layered
// model's first kind; host/model/parameter_count.h counts every kind). Experts (MoE layers)
// are counted apart: expert parallelism shards them, not the dense part.
struct ParameterCounts {
  double per_layer = 0;      // dense part of a layer: attention, router, norms (and the MLP if dense)
  double experts_per_layer = 0;
  double embedding = 0;
  double head = 0;
  double total(int64_t layers) const {
    return (per_layer + experts_per_layer) * static_cast<double>(layers) + embedding + head;
  }
};
ParameterCounts count_parameters(const pp_model& model);

}  // namespace paraplan::host
