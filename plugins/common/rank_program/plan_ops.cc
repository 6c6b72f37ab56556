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
    const double one = paraplan::cost::op_time(plan, hardware, i);
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
  std::vector<std::vector<int64_t>> layers;
  for (size_t stage = 0; stage < plan.stages().size(); ++stage) {
    std::vector<int64_t> split;
    for (int64_t chunk = 0; chunk < chunks; ++chunk)
      split.push_back(plan.layers_on_chunk(stage, static_cast<size_t>(chunk), PP_EVERY_LAYER_KIND));
    layers.push_back(split);
  }
  return layers;
}

std::vector<uint32_t> layer_kinds_in_order(const paraplan::PlanView& plan,
                                           const std::vector<std::vector<int64_t>>& chunk_layers) {
  const pp_model& model = plan.model();
  const paraplan::LayerKinds kinds(model);
  const size_t p = plan.stages().size(), chunks = p > 0 ? chunk_layers[0].size() : 0;
  std::vector<uint32_t> order;
  for (size_t virtual_stage = 0; virtual_stage < p * chunks; ++virtual_stage) {
    const paraplan::StageChunk runs = paraplan::stage_chunk_of(plan.pipeline(), static_cast<int64_t>(virtual_stage));
    const size_t stage = static_cast<size_t>(runs.stage), chunk = static_cast<size_t>(runs.chunk);
    std::vector<int64_t> held(kinds.size(), 0);
    for (int64_t i = 0; i < chunk_layers[stage][chunk]; ++i) {
      const int64_t layer = static_cast<int64_t>(order.size());
      if (layer >= model.layer_sequence_length)
        throw paraplan::Error(PP_ERROR_INVALID_ARGUMENT, "the plan's stages hold more layers than the model's " +
                                                             std::to_string(model.layer_sequence_length));
      const uint32_t kind = kinds.kind_of_layer(layer);
      order.push_back(kind);
      ++held[kind];
    }
    // Stages hold layers in model order: each chunk's kinds are those of its run of layers.
    for (uint32_t kind = 0; kind < kinds.size(); ++kind)
      if (held[kind] != plan.layers_on_chunk(stage, chunk, kind))
        throw paraplan::Error(PP_ERROR_UNSUPPORTED, "virtual stage " + std::to_string(virtual_stage) + " holds " +
                                                        std::to_string(plan.layers_on_chunk(stage, chunk, kind)) +
                                                        " layers of kind " + std::to_string(kind) +
                                                        ", not the model's layers in order; rank programs run layers in model order");
  }
  return order;
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
