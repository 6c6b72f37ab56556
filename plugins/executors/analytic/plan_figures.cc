#include "plan_figures.h"

#include <algorithm>
#include <array>
#include <vector>

#include "paraplan/cost_model.hpp"
#include "stage_cost.h"

namespace analytic {
namespace {

// Where an op's time goes (stage_cost.cc puts it in the same places).
enum Bucket { kForward, kBackward, kStepBackward, kStepTail, kBucketCount };
constexpr int kScopeCount = 4;  // PP_SCOPE_EMBEDDING .. PP_SCOPE_STEP, index scope - 1

struct Sums {
  double compute = 0, critical = 0, overlappable = 0;
};
using ScopeSums = std::array<std::array<Sums, kBucketCount>, kScopeCount>;

Bucket bucket_of(const pp_op& op) {
  const bool per_step = op.frequency == PP_PER_STEP;
  switch (op.phase) {
    case PP_PHASE_FORWARD: return per_step ? kStepBackward : kForward;
    case PP_PHASE_STEP: return kStepTail;
    case PP_PHASE_RECOMPUTE: return kBackward;
    default: return per_step ? kStepBackward : kBackward;
  }
}

bool communicates(const pp_op& op) {
  return op.kind == PP_OP_COLLECTIVE || op.kind == PP_OP_SEND_RECV || op.kind == PP_OP_HOST_TRANSFER;
}

void add(ScopeSums& sums, const pp_op& op, double seconds) {
  Sums& slot = sums[static_cast<size_t>(op.scope - 1)][bucket_of(op)];
  if (!communicates(op))
    slot.compute += seconds;
  else if (op.overlap == PP_OVERLAP_COMPUTE)
    slot.overlappable += seconds;
  else
    slot.critical += seconds;
}

// A stage shape: what its time depends on (in-flight activations only change its memory).
struct StageShape {
  double weight[kScopeCount];
};

double elapsed(const Sums& phase) {
  return phase.compute + phase.critical + std::max(0.0, phase.overlappable - phase.compute);
}

Sums combine(const ScopeSums& sums, const StageShape& shape, Bucket bucket) {
  Sums total;
  for (int scope = 0; scope < kScopeCount; ++scope) {
    const Sums& part = sums[static_cast<size_t>(scope)][bucket];
    total.compute += shape.weight[scope] * part.compute;
    total.critical += shape.weight[scope] * part.critical;
    total.overlappable += shape.weight[scope] * part.overlappable;
  }
  return total;
}

double memory_per_gpu(const paraplan::PlanView& plan, double overhead_bytes) {
  double state[kScopeCount] = {}, activations[kScopeCount] = {};
  for (const pp_memory_item& item : plan.memory())
    (item.kind == PP_MEMORY_ACTIVATIONS ? activations : state)[item.scope - 1] += item.bytes;
  double fullest = 0;
  for (const pp_stage& stage : plan.stages()) {
    double in_flight = stage.in_flight_micro_batches > 0 ? stage.in_flight_micro_batches
                                                         : plan.pipeline().in_flight_micro_batches;
    double bytes = overhead_bytes;
    for (pp_scope scope : {PP_SCOPE_EMBEDDING, PP_SCOPE_LAYER, PP_SCOPE_HEAD, PP_SCOPE_STEP}) {
      double times = multiplicity(scope, stage);
      bytes += times * (state[scope - 1] + in_flight * activations[scope - 1]);
    }
    fullest = std::max(fullest, bytes);
  }
  return fullest;
}

}  // namespace

void plan_figures(const paraplan::PlanView& plan, const pp_hardware_binding_v1& given, double overhead_bytes,
                  std::span<const int64_t> strides, uint32_t layouts, pp_plan_figures* figures) {
  const pp_hardware_profile profile = paraplan::cost::fit_to_cluster(*given.profile, plan.cluster());
  pp_hardware_binding_v1 hardware = given;
  hardware.profile = &profile;
  const double memory = memory_per_gpu(plan, overhead_bytes);
  for (uint32_t i = 0; i < std::max<uint32_t>(layouts, 1); ++i) {
    figures[i] = pp_plan_figures{sizeof(pp_plan_figures), 0, memory, profile.memory_bytes, 0, 0};
  }
  if (layouts == 0) return;

  // Everything but communication, once.
  ScopeSums fixed{};
  std::vector<const pp_op*> communication;
  for (const pp_op& op : plan.ops()) {
    if (communicates(op) && op.kind != PP_OP_HOST_TRANSFER) {
      communication.push_back(&op);
      continue;
    }
    add(fixed, op, op.repeat * paraplan::cost::op_time(plan, hardware, op));
  }
  std::vector<StageShape> shapes;
  for (const pp_stage& stage : plan.stages()) {
    StageShape shape{};
    for (int scope = 0; scope < kScopeCount; ++scope)
      shape.weight[scope] = multiplicity(static_cast<pp_scope>(scope + 1), stage);
    bool seen = std::any_of(shapes.begin(), shapes.end(), [&](const StageShape& other) {
      return std::equal(std::begin(shape.weight), std::end(shape.weight), std::begin(other.weight));
    });
    if (!seen) shapes.push_back(shape);
  }

  const pp_pipeline& pipeline = plan.pipeline();
  const double micro_batches = static_cast<double>(pipeline.micro_batches);
  const double gpus = static_cast<double>(plan.cluster().num_gpus);
  const double tokens = static_cast<double>(plan.training().global_batch) * static_cast<double>(plan.model().seq_len);
  const double model_flops = paraplan::cost::model_flops_per_step(plan.model(), plan.training());
  const double peak = paraplan::cost::peak_flops(profile, PP_DTYPE_BF16);
  const size_t axis_count = plan.axes().size();
  for (uint32_t layout = 0; layout < layouts; ++layout) {
    ScopeSums sums = fixed;
    const int64_t* layout_strides = strides.data() + size_t{layout} * axis_count;
    for (const pp_op* op : communication) add(sums, *op, op->repeat * paraplan::cost::op_time(plan, hardware, *op, layout_strides));
    double pace = 0, tail = 0;
    for (const StageShape& shape : shapes) {
      Sums backward = combine(sums, shape, kBackward);
      pace = std::max(pace, elapsed(combine(sums, shape, kForward)) + elapsed(backward));
      // Per-step gradient communication hides behind the last micro-batch's backward compute.
      Sums step_backward = combine(sums, shape, kStepBackward);
      step_backward.compute = backward.compute;
      tail = std::max(tail, elapsed(step_backward) - step_backward.compute + elapsed(combine(sums, shape, kStepTail)));
    }
    const double step = micro_batches * pace * (1.0 + pipeline.bubble_fraction) + tail;
    pp_plan_figures& out = figures[layout];
    out.step_s = step;
    out.tokens_per_s_per_gpu = tokens / step / gpus;
    out.mfu = model_flops / step / gpus / peak;
  }
}

}  // namespace analytic
