// plugins/exporters/internal/gradient_buckets.h: the gradient buckets a plan's data-parallel
// strategy was priced with, as an engine's bucket size (in parameters) says them.
//
// fsdp and hsdp reduce a layer's gradients in ceil(P / bucket_parameters) collectives, or one per
// layer when bucket_parameters is 0 (plugins/strategies/internal/zero_sharding.h). An engine that
// buckets by size (Megatron-LM's --ddp-bucket-size, DeepSpeed's reduce_bucket_size) runs the
// latter with a bucket of the largest layer's parameters: one bucket a layer.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "paraplan/sdk.hpp"

namespace paraplan::exporters {

// Parameters of the largest layer whose gradients the strategy `owner` reduces on a rank: its
// weights' all-gather over "dp" (2 bytes a parameter, all its buckets), or at stage 0, which
// gathers nothing, the layer's parameters as held (unsharded there).
inline double largest_layer_parameters(const PlanView& plan, std::string_view owner) {
  const int32_t dp_axis = plan.axis_index(PP_AXIS_DP);
  double largest = 0;
  for (const pp_op& op : plan.ops())
    if (op.kind == PP_OP_COLLECTIVE && op.scope == PP_SCOPE_LAYER && op.axis == dp_axis &&
        std::string_view(op.owner) == owner && std::string_view(op.name) == PP_OP_PARAM_ALL_GATHER)
      largest = std::max(largest, op.bytes * std::max<uint32_t>(op.repeat, 1) / kComputeWeightBytes);
  if (largest > 0) return largest;
  // Per layer kind: its own items and those every layer holds.
  const uint32_t kinds = std::max<uint32_t>(plan.raw().layer_kind_count, 1);
  std::vector<double> bytes(kinds, 0.0);
  for (size_t i = 0; i < plan.memory().size(); ++i) {
    const pp_memory_item& item = plan.memory()[i];
    if (item.scope != PP_SCOPE_LAYER || item.kind != PP_MEMORY_PARAMETERS) continue;
    const uint32_t kind = plan.memory_layer_kind(i);
    for (uint32_t k = 0; k < kinds; ++k)
      if (kind == PP_EVERY_LAYER_KIND || kind == k) bytes[k] += item.bytes;
  }
  return *std::max_element(bytes.begin(), bytes.end()) / stored_weight_bytes(plan.training());
}

// The strategy's bucket_parameters setting (0: one bucket per layer).
inline double bucket_parameters(const ExportContext::Strategy& strategy) {
  const std::string setting = strategy.setting(PP_DP_PARAM_BUCKET_PARAMETERS);
  return setting.empty() ? 0.0 : std::stod(setting);
}

// The bucket size an engine that buckets by size is given for the strategy's settings: its
// bucket_parameters, or one layer's parameters where that is 0.
inline double bucket_size_parameters(const PlanView& plan, const ExportContext::Strategy& strategy) {
  const double bucket = bucket_parameters(strategy);
  return bucket > 0 ? bucket : largest_layer_parameters(plan, strategy.name);
}

}  // namespace paraplan::exporters
