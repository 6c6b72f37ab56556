// plan_ops.h: reading the plan for the simulator: which ops communicate and what they depend on
// (plan.h's conventions), the ops sorted by where a stage program runs them with their prices,
// each stage's chunk sizes and each stage's schedule steps.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "paraplan/hardware.h"
#include "paraplan/sdk.hpp"

namespace rank_program {

constexpr int kScopes = 4;  // PP_SCOPE_EMBEDDING .. PP_SCOPE_STEP, index scope - 1

inline bool communicates(const pp_op& op) {
  return op.kind == PP_OP_COLLECTIVE || op.kind == PP_OP_SEND_RECV || op.kind == PP_OP_HOST_TRANSFER;
}

// Canonical expert op names (plan.h): their time follows the rank's share of routed tokens.
inline bool is_expert(std::string_view name) {
  return name == PP_OP_EXPERT_UP || name == PP_OP_EXPERT_GATE || name == PP_OP_EXPERT_ACT ||
         name == PP_OP_EXPERT_DOWN || name == PP_OP_FP8_CAST_EXPERT;
}

// plan.h's roles by name: "param_*" gathers parameters before the scope's compute, "grad_*"
// reduces the scope's weight gradients after it.
inline bool gathers_parameters(const pp_op& op) {
  return communicates(op) && paraplan::has_prefix(op.name, PP_OP_PREFIX_PARAM);
}
inline bool reduces_gradients(const pp_op& op) {
  return communicates(op) && paraplan::has_prefix(op.name, PP_OP_PREFIX_GRAD);
}
// A parameter gather run once per step before the step's first forward (ZeRO-3 under
// pipelining keeps the gathered weights through the step): the first forward pass over its
// block issues it, not the tail.
inline bool gathers_once_per_step(const pp_op& op) {
  return gathers_parameters(op) && op.frequency == PP_PER_STEP && op.phase == PP_PHASE_FORWARD && op.scope != PP_SCOPE_STEP;
}

inline const char* transfer_word(const pp_op& op) {
  if (op.kind == PP_OP_SEND_RECV) return "send-recv";
  if (op.kind == PP_OP_HOST_TRANSFER) return "host copy";
  switch (op.collective) {
    case PP_COLLECTIVE_ALL_REDUCE: return "all-reduce";
    case PP_COLLECTIVE_ALL_GATHER: return "all-gather";
    case PP_COLLECTIVE_REDUCE_SCATTER: return "reduce-scatter";
    case PP_COLLECTIVE_ALL_TO_ALL: return "all-to-all";
    case PP_COLLECTIVE_BROADCAST: return "broadcast";
    default: return "collective";
  }
}

// The plan's ops sorted by where the program runs them, each with its price.
struct OpTable {
  std::vector<double> seconds;  // per plan op: one instance times repeat
  std::vector<double> one;      // per plan op: one instance
  std::vector<uint32_t> per_micro_batch[kScopes][3];  // [scope][forward, backward, recompute]
  std::vector<uint32_t> per_step[kScopes];            // frequency PER_STEP, phases other than STEP
  std::vector<uint32_t> tail;                         // phase STEP
  std::vector<uint32_t> boundary[2];                  // STEP scope, per micro-batch: [forward, backward]
};

OpTable sort_ops(const paraplan::PlanView& plan, const pp_hardware_binding_v1& hardware);

// Layers of each chunk of each stage, as the plan places them (every kind together).
std::vector<std::vector<int64_t>> chunk_layers(const paraplan::PlanView& plan, int64_t chunks);

// The kind of every layer, in model order (virtual stage 0's layers first), checked against the
// plan's per-kind counts: what a stage program runs for each layer.
std::vector<uint32_t> layer_kinds_in_order(const paraplan::PlanView& plan,
                                           const std::vector<std::vector<int64_t>>& chunk_layers);

// Steps of every stage; a plan without a pipeline runs its micro-batches one after the other.
std::vector<std::vector<pp_schedule_step>> steps_by_stage(const paraplan::PlanView& plan);

}  // namespace rank_program
