#include "plan_figures.h"

#include <algorithm>
#include <array>
#include <vector>

#include "paraplan/cost_model.hpp"
#include "paraplan/host_issue.hpp"
#include "stage_cost.h"

namespace analytic {
namespace {

// Where an op's time goes (stage_cost.cc puts it in the same places).
enum Bucket { kForward, kBackward, kStepForward, kStepBackward, kStepTail, kBucketCount };

struct Sums {
  double compute = 0, critical = 0, overlappable = 0;
  double uncontended = 0;  // of overlappable: transfers to host memory, which slow no compute
};
// Sums per slot: an op counts as often as its slot repeats on a stage. Slots: embedding, head,
// step, then per share of a chunk's layers (all; under partial recomputation also the recomputed
// and the kept ones, PlanView::op_share) the layer ops every kind has and one slot per layer kind.
enum FixedSlot { kEmbedding, kHead, kStep, kFirstLayerSlot };
using SlotSums = std::vector<std::array<Sums, kBucketCount>>;


// The plan's slots: the fixed ones, then each share's layer slots.
struct SlotLayout {
  explicit SlotLayout(const paraplan::PlanView& plan)
      : per_share(1 + size_t{plan.raw().layer_kind_count}), shares(plan.splits_layers() ? 3 : 1) {}
  size_t count() const { return kFirstLayerSlot + shares * per_share; }
  size_t of(pp_scope scope, uint32_t kind, paraplan::LayerShare share = paraplan::LayerShare::kAll) const {
    switch (scope) {
      case PP_SCOPE_EMBEDDING: return kEmbedding;
      case PP_SCOPE_HEAD: return kHead;
      case PP_SCOPE_STEP: return kStep;
      case PP_SCOPE_LAYER:
        return kFirstLayerSlot + static_cast<size_t>(share) * per_share + (kind == PP_EVERY_LAYER_KIND ? 0 : 1 + size_t{kind});
    }
    return kStep;
  }
  size_t per_share, shares;
};

Bucket bucket_of(const pp_op& op) {
  const bool per_step = op.frequency == PP_PER_STEP;
  switch (op.phase) {
    case PP_PHASE_FORWARD: return per_step ? kStepForward : kForward;
    case PP_PHASE_STEP: return kStepTail;
    case PP_PHASE_RECOMPUTE: return kBackward;
    default: return per_step ? kStepBackward : kBackward;
  }
}

bool communicates(const pp_op& op) {
  return op.kind == PP_OP_COLLECTIVE || op.kind == PP_OP_SEND_RECV || op.kind == PP_OP_HOST_TRANSFER;
}

void add(SlotSums& sums, size_t slot, const pp_op& op, double seconds) {
  Sums& part = sums[slot][bucket_of(op)];
  if (!communicates(op))
    part.compute += seconds;
  else if (op.overlap == PP_OVERLAP_COMPUTE) {
    part.overlappable += seconds;
    if (uncontended(op)) part.uncontended += seconds;
  } else
    part.critical += seconds;
}

// A stage shape: how often each slot repeats on it (in-flight activations only change memory).
using StageShape = std::vector<double>;

StageShape shape_of(const paraplan::PlanView& plan, const SlotLayout& slots, size_t stage) {
  const uint32_t kinds = plan.raw().layer_kind_count;
  StageShape shape(slots.count());
  shape[kEmbedding] = plan.multiplicity(PP_SCOPE_EMBEDDING, PP_EVERY_LAYER_KIND, stage);
  shape[kHead] = plan.multiplicity(PP_SCOPE_HEAD, PP_EVERY_LAYER_KIND, stage);
  shape[kStep] = 1.0;
  for (size_t s = 0; s < slots.shares; ++s) {
    const paraplan::LayerShare share = static_cast<paraplan::LayerShare>(s);
    shape[slots.of(PP_SCOPE_LAYER, PP_EVERY_LAYER_KIND, share)] =
        plan.multiplicity(PP_SCOPE_LAYER, PP_EVERY_LAYER_KIND, stage, share);
    for (uint32_t kind = 0; kind < kinds; ++kind)
      shape[slots.of(PP_SCOPE_LAYER, kind, share)] = plan.multiplicity(PP_SCOPE_LAYER, kind, stage, share);
  }
  return shape;
}

double elapsed(const Sums& phase, double slowdown) {
  return phase_elapsed_s(phase.compute, phase.critical, phase.overlappable, slowdown, phase.uncontended);
}

Sums combine(const SlotSums& sums, const StageShape& shape, Bucket bucket) {
  Sums total;
  for (size_t slot = 0; slot < shape.size(); ++slot) {
    const Sums& part = sums[slot][bucket];
    total.compute += shape[slot] * part.compute;
    total.critical += shape[slot] * part.critical;
    total.overlappable += shape[slot] * part.overlappable;
    total.uncontended += shape[slot] * part.uncontended;
  }
  return total;
}

// One layer kind's pass in one phase as the host issues it (host_issue.hpp), with the entries
// whose GPU time depends on the layout.
struct IssuedPass {
  size_t slot;
  Bucket bucket;
  std::vector<paraplan::issue::IssuedOp> ops;
  std::vector<size_t> communicating;  // positions in ops
};

// Op `index`'s seconds on the compute stream: its price, or 0 for overlapped communication,
// which runs on a stream of its own (host_issue.hpp).
double compute_stream_s(const paraplan::PlanView& plan, const std::vector<double>& seconds, size_t index) {
  return paraplan::issue::holds_compute_stream(plan.ops()[index]) ? seconds[index] : 0.0;
}

// `seconds`: each op's price, all instances; communication's is still 0 here, and its entries
// (`communicating`) are priced per layout by the caller.
std::vector<IssuedPass> issued_passes(const paraplan::PlanView& plan, const SlotLayout& slots,
                                      const pp_hardware_profile& profile, const std::vector<double>& seconds) {
  std::vector<IssuedPass> passes;
  if (paraplan::issue::host_op_overhead_s(profile) <= 0) return passes;
  const auto on_stream = [&](size_t op) { return compute_stream_s(plan, seconds, op); };
  const std::vector<paraplan::LayerShare> shares = layer_shares(plan);
  for (paraplan::issue::LayerPass& listed : paraplan::issue::every_layer_pass(plan, profile, shares, on_stream)) {
    IssuedPass pass{slots.of(PP_SCOPE_LAYER, listed.kind, listed.share),
                    listed.phase == PP_PHASE_FORWARD ? kForward : kBackward, std::move(listed.ops), {}};
    for (size_t i = 0; i < pass.ops.size(); ++i)
      if (pass.ops[i].communicates) pass.communicating.push_back(i);
    passes.push_back(std::move(pass));
  }
  return passes;
}

// `shapes`: each stage's, in stage order.
double memory_per_gpu(const paraplan::PlanView& plan, const SlotLayout& slots, const std::vector<StageShape>& shapes,
                      double overhead_bytes) {
  std::vector<double> state(slots.count()), activations(slots.count());
  for (size_t i = 0; i < plan.memory().size(); ++i) {
    const pp_memory_item& item = plan.memory()[i];
    (item.kind == PP_MEMORY_ACTIVATIONS ? activations : state)[slots.of(item.scope, plan.memory_layer_kind(i),
                                                                        plan.memory_share(i))] += item.bytes;
  }
  double fullest = 0;
  for (size_t stage = 0; stage < plan.stages().size(); ++stage) {
    const StageShape& shape = shapes[stage];
    double held_state = 0, held_activations = 0;
    for (size_t slot = 0; slot < slots.count(); ++slot) {
      held_state += shape[slot] * state[slot];
      held_activations += shape[slot] * activations[slot];
    }
    fullest = std::max(fullest, memory_bytes(held_state, held_activations,
                                             in_flight(plan.stages()[stage], plan.pipeline()), 0.0, overhead_bytes));
  }
  return fullest;
}

}  // namespace

void plan_figures(const paraplan::PlanView& plan, const pp_hardware_binding_v1& given, double overhead_bytes,
                  std::span<const int64_t> strides, uint32_t layouts, pp_plan_figures* figures) {
  const pp_hardware_profile profile = paraplan::cost::fit_to_cluster(*given.profile, plan.cluster());
  pp_hardware_binding_v1 hardware = given;
  hardware.profile = &profile;
  const SlotLayout slots(plan);
  std::vector<StageShape> stage_shapes;
  for (size_t stage = 0; stage < plan.stages().size(); ++stage) stage_shapes.push_back(shape_of(plan, slots, stage));
  const double memory = memory_per_gpu(plan, slots, stage_shapes, overhead_bytes);
  for (uint32_t i = 0; i < std::max<uint32_t>(layouts, 1); ++i) {
    figures[i] = pp_plan_figures{sizeof(pp_plan_figures), 0, memory, profile.memory_bytes, 0, 0};
  }
  if (layouts == 0) return;

  // Everything but communication, once; each op's slot, once.
  SlotSums fixed(slots.count());
  std::vector<uint32_t> communication;
  std::vector<size_t> op_slots(plan.ops().size());
  std::vector<double> seconds(plan.ops().size(), 0.0);  // communication's is priced per layout
  for (uint32_t i = 0; i < plan.ops().size(); ++i) {
    const pp_op& op = plan.ops()[i];
    op_slots[i] = slots.of(op.scope, plan.op_layer_kind(i), plan.op_share(i));
    if (communicates(op) && op.kind != PP_OP_HOST_TRANSFER) {
      communication.push_back(i);
      continue;
    }
    seconds[i] = op.repeat * paraplan::cost::op_time(plan, hardware, i);
    add(fixed, op_slots[i], op, seconds[i]);
  }
  std::vector<IssuedPass> passes = issued_passes(plan, slots, profile, seconds);
  std::vector<StageShape> shapes;  // the distinct ones: stages of one shape time alike
  for (StageShape& shape : stage_shapes)
    if (std::find(shapes.begin(), shapes.end(), shape) == shapes.end()) shapes.push_back(std::move(shape));

  const pp_pipeline& pipeline = plan.pipeline();
  const double micro_batches = static_cast<double>(pipeline.micro_batches);
  const double gpus = static_cast<double>(plan.cluster().num_gpus);
  const double tokens = static_cast<double>(plan.training().global_batch) * static_cast<double>(plan.model().seq_len);
  const double model_flops = paraplan::cost::model_flops_per_step(plan.model(), plan.training());
  const double peak = paraplan::cost::peak_flops(profile, PP_DTYPE_BF16);
  const double slowdown = paraplan::cost::overlap_compute_slowdown(profile);
  const size_t axis_count = plan.axes().size();
  for (uint32_t layout = 0; layout < layouts; ++layout) {
    SlotSums sums = fixed;
    const int64_t* layout_strides = strides.data() + size_t{layout} * axis_count;
    for (uint32_t i : communication) {
      const pp_op& op = plan.ops()[i];
      seconds[i] = op.repeat * paraplan::cost::op_time(plan, hardware, i, layout_strides);
      add(sums, op_slots[i], op, seconds[i]);
    }
    // The GPU idles while the host issues its work: as compute, overlapped communication runs on.
    for (IssuedPass& pass : passes) {
      for (size_t at : pass.communicating) pass.ops[at].gpu_s = compute_stream_s(plan, seconds, pass.ops[at].index);
      sums[pass.slot][pass.bucket].compute += paraplan::issue::idle_s(pass.ops);
    }
    double pace = 0, tail = 0;
    for (const StageShape& shape : shapes) {
      Sums forward = combine(sums, shape, kForward), backward = combine(sums, shape, kBackward);
      pace = std::max(pace, elapsed(forward, slowdown) + elapsed(backward, slowdown));
      // Per-step parameter gathers hide behind the first micro-batch's forward compute, per-step
      // gradient communication behind the last micro-batch's backward.
      Sums step_forward = combine(sums, shape, kStepForward), step_backward = combine(sums, shape, kStepBackward);
      step_forward.compute = forward.compute;
      step_backward.compute = backward.compute;
      tail = std::max(tail, elapsed(step_forward, slowdown) - step_forward.compute + elapsed(step_backward, slowdown) -
                                step_backward.compute + elapsed(combine(sums, shape, kStepTail), slowdown));
    }
    const double step = step_s(micro_batches, pace, pipeline.bubble_fraction, tail);
    pp_plan_figures& out = figures[layout];
    out.step_s = step;
    out.tokens_per_s_per_gpu = tokens / step / gpus;
    out.mfu = model_flops / step / gpus / peak;
  }
}

}  // namespace analytic
