#include "host/plan/activation_offload.h"

#include <vector>

#include "host/core/errors.h"
#include "paraplan/sdk.hpp"

namespace paraplan::host {

void add_activation_offload(Plan& plan, const std::string& file) {
  const int64_t offloaded = cpu_offloading_num_layers(plan.training());
  if (offloaded == 0) return;
  const std::string key = file + ": training.cpu_offloading_num_layers = " + std::to_string(offloaded);
  // TransformerConfig refuses cpu_offloading with pipeline_model_parallel_size > 1.
  if (plan.stages().size() > 1)
    throw PlanError(key + ": Megatron-LM offloads activations only without pipeline parallelism, and the plan has " +
                    std::to_string(plan.stages().size()) + " pipeline stages");
  // ... and cpu_offloading_num_layers >= num_layers: the last layer's activations are needed at once.
  if (offloaded >= plan.model().layers)
    throw PlanError(key + ": must be less than the model's " + std::to_string(plan.model().layers) +
                    " layers (the last layer's backward starts as its forward ends)");

  const LayerKinds kinds(plan.model());
  std::vector<double> bytes(kinds.size(), 0.0);
  const std::vector<pp_memory_item>& items = plan.memory_items();
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].scope != PP_SCOPE_LAYER || items[i].kind != PP_MEMORY_ACTIVATIONS) continue;
    const uint32_t kind = plan.memory_layer_kinds()[i];
    for (uint32_t k = 0; k < kinds.size(); ++k)
      if (kind == PP_EVERY_LAYER_KIND || kind == k) bytes[k] += items[i].bytes;
  }
  for (uint32_t k = 0; k < kinds.size(); ++k) {
    if (bytes[k] <= 0) continue;
    // Appended: the copy out runs after the layer's forward ops, the copy back (backward runs a
    // layer's list in reverse) before its backward ops.
    for (const auto& [phase, name] : {std::pair{PP_PHASE_FORWARD, PP_OP_ACTIVATION_OFFLOAD},
                                      std::pair{PP_PHASE_BACKWARD, PP_OP_ACTIVATION_RELOAD}}) {
      pp_op op = make_op(PP_OP_HOST_TRANSFER, phase, PP_SCOPE_LAYER, name, "model");
      op.bytes = bytes[k];
      op.overlap = PP_OVERLAP_COMPUTE;
      plan.add_workload_op(op, k);
    }
  }
}

}  // namespace paraplan::host
