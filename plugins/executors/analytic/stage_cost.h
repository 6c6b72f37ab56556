// stage_cost.h: the closed-form cost of one pipeline stage's rank, per micro-batch and per step.
//
// Ops of scope LAYER count once per layer the stage holds, EMBEDDING only on the first stage,
// HEAD only on the last, STEP everywhere. Within a phase, communication marked
// PP_OVERLAP_COMPUTE hides behind that phase's compute, slowing it by the profile's
// overlap_compute_slowdown while both run; whatever exceeds it is exposed. Critical
// communication is always exposed.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "paraplan/cost_model.hpp"
#include "paraplan/hardware.h"
#include "paraplan/sdk.hpp"

namespace analytic {

// The terms both run() and the search's figures (plan_figures.h) are built from, written once.
//
// A phase of one micro-batch: the compute stream's time (compute and the waits for the host),
// the critical communication, and the overlappable communication beside the compute stream,
// which slows it by `slowdown` while both run (cost::overlapped_elapsed_s; the host's waits are
// slowed as compute is, an approximation) and shows where it outlasts it. `uncontended_s` of it
// (transfers to host memory, on copy engines) slows nothing.
inline double phase_elapsed_s(double compute_stream_s, double critical_s, double overlappable_s, double slowdown,
                              double uncontended_s) {
  return critical_s +
         paraplan::cost::overlapped_elapsed_s(compute_stream_s, overlappable_s, overlappable_s - uncontended_s, slowdown);
}
// The step: m micro-batches at the slowest stage's pace, stretched by the schedule's bubble, then
// the longest tail (exposed per-step communication and the optimizer update).
inline double step_s(double micro_batches, double pace_s, double bubble_fraction, double tail_s) {
  return micro_batches * pace_s * (1.0 + bubble_fraction) + tail_s;
}
// Overlapped communication that slows no compute: a transfer to host memory runs on the copy
// engines, not on SMs (the simulator runs it on its host stream, beside nothing it slows).
inline bool uncontended(const pp_op& op) { return op.kind == PP_OP_HOST_TRANSFER && op.overlap == PP_OVERLAP_COMPUTE; }
// The shares of a chunk's layers that run different passes: the first ones set apart and the
// rest, or all alike (PlanView::op_share).
inline std::vector<paraplan::LayerShare> layer_shares(const paraplan::PlanView& plan) {
  if (plan.splits_layers()) return {paraplan::LayerShare::kFirst, paraplan::LayerShare::kRest};
  return {paraplan::LayerShare::kAll};
}
// A GPU's memory: model state, activations of its micro-batches in flight, the rest, and the
// runtime overhead every GPU loses.
inline double memory_bytes(double state_bytes, double activations_per_micro_batch, double in_flight, double other_bytes,
                           double overhead_bytes) {
  return state_bytes + in_flight * activations_per_micro_batch + other_bytes + overhead_bytes;
}
// The micro-batches a stage holds activations for: its own when the pipeline gave one.
inline double in_flight(const pp_stage& stage, const pp_pipeline& pipeline) {
  return stage.in_flight_micro_batches > 0 ? stage.in_flight_micro_batches : pipeline.in_flight_micro_batches;
}

// Per owner strategy; std::less<> lets the hot loop look an owner up by its char array without
// building a std::string for every op.
using OwnerSeconds = std::map<std::string, double, std::less<>>;

struct PhaseCost {
  double compute_s = 0;
  double host_wait_s = 0;           // the GPU idle, waiting for the host to issue (host_issue.hpp)
  OwnerSeconds critical_comm_s;     // by owner strategy
  OwnerSeconds overlappable_comm_s; // by owner strategy
  double overlap_slowdown = 0;      // the profile's overlap_compute_slowdown
  double uncontended_s = 0;         // overlappable transfers to host memory: copy engines, no SMs

  double critical_total() const;
  double overlappable_total() const;
  // compute + host wait + critical + what overlapped communication costs: the compute it slows
  // and the part of it the compute stream's time (its work and its waits) cannot hide.
  double elapsed_s() const;
  // How much of each owner's communication is exposed, sharing the unhidden part pro rata.
  OwnerSeconds exposed_by_owner() const;
  // The compute stream's time lost to the overlapped communication beside it.
  double contention_s() const;
};

struct StageCost {
  PhaseCost forward;       // one micro-batch
  PhaseCost backward;      // one micro-batch, recompute included
  PhaseCost step_forward;  // once per step, overlapping the first micro-batch's forward (gathers)
  PhaseCost step_backward; // once per step, overlapping the last micro-batch's backward
  PhaseCost step_tail;     // once per step after the last micro-batch (optimizer, STEP comm)
  double model_flops_per_micro_batch = 0;  // forward + backward GEMM/attention flops, no recompute
  double recompute_flops_per_micro_batch = 0;
  OwnerSeconds bytes_sent_per_step;  // by owner (bytes, not seconds), nccl-tests bus-bytes convention
  double weights_bytes = 0, gradients_bytes = 0, optimizer_bytes = 0, activations_bytes_per_micro_batch = 0,
         other_bytes = 0;

  double micro_batch_s() const { return forward.elapsed_s() + backward.elapsed_s(); }
  // Once per step: the first forward's parameter gathers and the gradient reduction left exposed,
  // then the optimizer update.
  double tail_s() const {
    return step_forward.elapsed_s() - step_forward.compute_s + step_backward.elapsed_s() - step_backward.compute_s +
           step_tail.elapsed_s();
  }
};

// Stage `stage`'s costs (the host's issue time included: the GPU's wait per layer pass): each op and item as often as the stage holds its scope and layer kind
// (paraplan::PlanView::multiplicity).
StageCost cost_stage(const paraplan::PlanView& plan, const pp_hardware_binding_v1& hardware, size_t stage);

}  // namespace analytic
