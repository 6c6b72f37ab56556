#include "plan_ops.h"

#include <algorithm>
#include <string>

#include "paraplan/cost_model.hpp"

namespace rank_program {
namespace {

int phase_slot(pp_phase phase) {
  switch (phase) {
    case PP_PHASE_FORWARD: return 0;
    case PP_PHASE_RECOMPUTE: return 2;
    default: return 1;
  }
}

}  // namespace

OpTable sort_ops(const paraplan::PlanView& plan, const pp_hardware_binding_v1& hardware) {
  OpTable table;
  const auto ops = plan.ops();
  for (uint32_t i = 0; i < ops.size(); ++i) {
    const pp_op& op = ops[i];
    const double one = paraplan::cost::op_time(plan, hardware, op);
    table.one.push_back(one);
    table.seconds.push_back(one * std::max<uint32_t>(op.repeat, 1));
    const size_t scope = static_cast<size_t>(op.scope - 1);
    if (op.phase == PP_PHASE_STEP)
      table.tail.push_back(i);
    else if (op.frequency == PP_PER_STEP)
      table.per_step[scope].push_back(i);
    else if (op.scope == PP_SCOPE_STEP)
      table.boundary[op.phase == PP_PHASE_FORWARD ? 0 : 1].push_back(i);
    else
      table.per_micro_batch[scope][phase_slot(op.phase)].push_back(i);
  }
  return table;
}

std::vector<std::vector<int64_t>> chunk_layers(const paraplan::PlanView& plan, int64_t chunks) {
  // Rank programs run every layer's ops alike; a stack of several kinds would need each layer's
  // own (not walked yet: refused rather than run as if every layer were the first kind).
  if (plan.raw().layer_kind_count > 1)
    throw paraplan::Error(PP_ERROR_UNSUPPORTED, "the model has " + std::to_string(plan.raw().layer_kind_count) +
                                                    " kinds of layer; rank programs walk uniform models only so far");
  std::vector<std::vector<int64_t>> layers;
  for (const pp_stage& stage : plan.stages()) {
    std::vector<int64_t> split;
    for (int64_t chunk = 0; chunk < chunks; ++chunk)
      split.push_back(stage.layers / chunks + (chunk < stage.layers % chunks ? 1 : 0));
    layers.push_back(split);
  }
  return layers;
}

std::vector<std::vector<pp_schedule_step>> steps_by_stage(const paraplan::PlanView& plan) {
  std::vector<std::vector<pp_schedule_step>> steps(plan.stages().size());
  if (plan.steps().empty()) {
    if (plan.stages().size() > 1)
      throw paraplan::Error(PP_ERROR_UNSUPPORTED,
                            "the plan has " + std::to_string(plan.stages().size()) +
                                " pipeline stages but lists no schedule steps to simulate");
    for (int32_t micro_batch = 0; micro_batch < plan.pipeline().micro_batches; ++micro_batch) {
      steps[0].push_back({sizeof(pp_schedule_step), 0, micro_batch, 0, PP_PHASE_FORWARD});
      steps[0].push_back({sizeof(pp_schedule_step), 0, micro_batch, 0, PP_PHASE_BACKWARD});
    }
    return steps;
  }
  for (const pp_schedule_step& step : plan.steps()) {
    if (step.stage < 0 || static_cast<size_t>(step.stage) >= steps.size())
      throw paraplan::Error(PP_ERROR_INVALID_ARGUMENT, "a schedule step names stage " + std::to_string(step.stage) +
                                                           " of a " + std::to_string(steps.size()) + "-stage plan");
    steps[static_cast<size_t>(step.stage)].push_back(step);
  }
  return steps;
}

}  // namespace rank_program
