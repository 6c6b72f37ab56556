#include "stage_cost.h"

#include <algorithm>
#include <string_view>

#include "paraplan/cost_model.hpp"
#include "paraplan/host_issue.hpp"

namespace analytic {
namespace {

double sum(const OwnerSeconds& values) {
  double total = 0;
  for (const auto& [owner, value] : values) total += value;
  return total;
}

// nccl-tests bus bytes: what each rank puts on the wire for one collective of buffer size n.
double bytes_on_wire(const pp_op& op, double ranks) {
  if (op.kind == PP_OP_SEND_RECV) return op.bytes;
  if (ranks <= 1) return 0.0;
  double fraction = (ranks - 1.0) / ranks;
  return op.collective == PP_COLLECTIVE_ALL_REDUCE ? 2.0 * fraction * op.bytes : fraction * op.bytes;
}

void add_to(OwnerSeconds& totals, std::string_view owner, double value) {
  auto found = totals.find(owner);
  if (found == totals.end()) found = totals.emplace(std::string(owner), 0.0).first;
  found->second += value;
}

void add_to_phase(PhaseCost& phase, const pp_op& op, double seconds) {
  if (op.kind == PP_OP_COLLECTIVE || op.kind == PP_OP_SEND_RECV || op.kind == PP_OP_HOST_TRANSFER) {
    add_to(op.overlap == PP_OVERLAP_COMPUTE ? phase.overlappable_comm_s : phase.critical_comm_s, op.owner, seconds);
    if (uncontended(op)) phase.uncontended_s += seconds;
  } else {
    phase.compute_s += seconds;
  }
}

}  // namespace

double PhaseCost::critical_total() const { return sum(critical_comm_s); }
double PhaseCost::overlappable_total() const { return sum(overlappable_comm_s); }

double PhaseCost::elapsed_s() const {
  return phase_elapsed_s(compute_s + host_wait_s, critical_total(), overlappable_total(), overlap_slowdown, uncontended_s);
}

// elapsed = critical + max(O, S + lost) = critical + S + max(0, O - S) + max(0, lost - max(0, O - S)):
// the exposed part, then what the compute lost beyond it.
double PhaseCost::contention_s() const {
  const double stream = compute_s + host_wait_s, overlappable = overlappable_total();
  const double lost = paraplan::cost::overlap_contention_s(stream, overlappable - uncontended_s, overlap_slowdown);
  return std::max(0.0, lost - std::max(0.0, overlappable - stream));
}

OwnerSeconds PhaseCost::exposed_by_owner() const {
  OwnerSeconds exposed = critical_comm_s;
  double overlappable = overlappable_total();
  double unhidden = std::max(0.0, overlappable - compute_s - host_wait_s);
  for (const auto& [owner, seconds] : overlappable_comm_s)
    exposed[owner] += overlappable > 0 ? unhidden * seconds / overlappable : 0.0;
  return exposed;
}

StageCost cost_stage(const paraplan::PlanView& plan, const pp_hardware_binding_v1& hardware, size_t stage) {
  StageCost cost;
  const double micro_batches = static_cast<double>(plan.pipeline().micro_batches);
  for (size_t index = 0; index < plan.ops().size(); ++index) {
    const pp_op& op = plan.ops()[index];
    double times = plan.op_multiplicity(index, stage) * op.repeat;
    if (times == 0) continue;
    double seconds = times * paraplan::cost::op_time(plan, hardware, index);
    bool per_step = op.frequency == PP_PER_STEP;
    if (op.kind == PP_OP_COLLECTIVE || op.kind == PP_OP_SEND_RECV) {
      const pp_mesh_axis& axis = plan.axes()[static_cast<size_t>(op.axis)];
      add_to(cost.bytes_sent_per_step, op.owner,
          times * bytes_on_wire(op, static_cast<double>(axis.degree)) * (per_step ? 1.0 : micro_batches));
    }
    bool counts_as_model = op.kind == PP_OP_GEMM || op.kind == PP_OP_ATTENTION;
    switch (op.phase) {
      case PP_PHASE_FORWARD:
        if (counts_as_model) cost.model_flops_per_micro_batch += times * op.flops;
        add_to_phase(per_step ? cost.step_forward : cost.forward, op, seconds);
        break;
      case PP_PHASE_BACKWARD:
      case PP_PHASE_WEIGHT_GRADIENT:  // not used by ops, but counted as backward if a plugin does
        if (counts_as_model) cost.model_flops_per_micro_batch += times * op.flops;
        add_to_phase(per_step ? cost.step_backward : cost.backward, op, seconds);
        break;
      case PP_PHASE_RECOMPUTE:
        if (counts_as_model) cost.recompute_flops_per_micro_batch += times * op.flops;
        add_to_phase(cost.backward, op, seconds);
        break;
      case PP_PHASE_STEP:
        add_to_phase(cost.step_tail, op, seconds);
        break;
    }
  }
  for (size_t index = 0; index < plan.memory().size(); ++index) {
    const pp_memory_item& item = plan.memory()[index];
    double bytes = plan.memory_multiplicity(index, stage) * item.bytes;
    switch (item.kind) {
      case PP_MEMORY_PARAMETERS: cost.weights_bytes += bytes; break;
      case PP_MEMORY_GRADIENTS: cost.gradients_bytes += bytes; break;
      case PP_MEMORY_OPTIMIZER: cost.optimizer_bytes += bytes; break;
      case PP_MEMORY_ACTIVATIONS: cost.activations_bytes_per_micro_batch += bytes; break;
      case PP_MEMORY_OTHER: cost.other_bytes += bytes; break;
    }
  }
  const uint32_t kinds = plan.raw().layer_kind_count;
  for (uint32_t kind = kinds == 0 ? PP_EVERY_LAYER_KIND : 0; kinds == 0 || kind < kinds; ++kind) {
    for (paraplan::LayerShare share : layer_shares(plan)) {
      const double layers = plan.multiplicity(PP_SCOPE_LAYER, kind, stage, share);
      if (layers <= 0) continue;
      cost.forward.host_wait_s += layers * paraplan::issue::host_wait_s(plan, hardware, kind, PP_PHASE_FORWARD, nullptr, share);
      for (pp_phase phase : {PP_PHASE_BACKWARD, PP_PHASE_RECOMPUTE})
        cost.backward.host_wait_s += layers * paraplan::issue::host_wait_s(plan, hardware, kind, phase, nullptr, share);
    }
    if (kinds == 0) break;
  }
  // Per-step parameter gathers hide behind the first micro-batch's forward compute, per-step
  // gradient communication behind the last micro-batch's backward.
  cost.step_forward.compute_s = cost.forward.compute_s + cost.forward.host_wait_s;
  cost.step_backward.compute_s = cost.backward.compute_s + cost.backward.host_wait_s;
  const double slowdown = paraplan::cost::overlap_compute_slowdown(*hardware.profile);
  for (PhaseCost* phase : {&cost.forward, &cost.backward, &cost.step_forward, &cost.step_backward, &cost.step_tail})
    phase->overlap_slowdown = slowdown;
  return cost;
}

}  // namespace analytic
