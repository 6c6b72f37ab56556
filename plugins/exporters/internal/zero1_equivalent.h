// plugins/exporters/internal/zero1_equivalent.h: whether a plan's sharded data parallelism moves
// its state as the distributed optimizer (ZeRO-1) does, read from the plan's own ops.
//
// An engine without ZeRO-2/3 under pipeline parallelism (Megatron-LM's distributed optimizer,
// DeepSpeed's pipeline engine) runs such a plan as ZeRO-1. That is exact when the plan already
// reduce-scatters gradients once per step and gathers weights only after the update: ZeRO-2
// under pp is priced so (plugins/strategies/internal/zero_sharding.h, syncs_per_step), with whole
// gradients held through the step as ZeRO-1 holds them. ZeRO-3 under pp is not: its weights are
// gathered in the step's first forward and held as a separate buffer.
#pragma once

#include <string_view>

#include "paraplan/sdk.hpp"

namespace paraplan::exporters {

// `owner`: the data-parallel strategy's name (fsdp or hsdp).
inline bool moves_state_as_zero1(const PlanView& plan, std::string_view owner) {
  bool reduces = false;
  for (const pp_op& op : plan.ops()) {
    if (std::string_view(op.owner) != owner || op.kind != PP_OP_COLLECTIVE) continue;
    const std::string_view name(op.name);
    if (name == PP_OP_GRAD_REDUCE_SCATTER) {
      if (op.frequency != PP_PER_STEP) return false;
      reduces = true;
    } else if (name == PP_OP_PARAM_ALL_GATHER && op.phase != PP_PHASE_STEP) {
      return false;
    }
  }
  return reduces;
}

}  // namespace paraplan::exporters
