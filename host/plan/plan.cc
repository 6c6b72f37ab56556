#include "host/plan/plan.h"

#include <algorithm>
#include <cstring>

#include "host/core/errors.h"

namespace paraplan::host {
namespace {

// Copies a plugin-supplied struct that may be older (shorter) than ours: unknown trailing fields
// keep `fallback`'s values. A struct claiming to be smaller than its first field is refused.
template <typename Struct>
bool copy_versioned(const Struct* source, Struct& target, const Struct& fallback) {
  if (!source || source->struct_size < sizeof(uint32_t)) return false;
  target = fallback;
  std::memcpy(&target, source, std::min<size_t>(source->struct_size, sizeof(Struct)));
  target.struct_size = sizeof(Struct);
  return true;
}

template <size_t N>
bool terminated(const char (&field)[N]) {
  return std::memchr(field, '\0', N) != nullptr;
}

bool valid_op(const pp_op& op, size_t axis_count) {
  if (!terminated(op.name) || !terminated(op.owner) || op.repeat == 0) return false;
  if (op.kind < PP_OP_GEMM || op.kind > PP_OP_HOST_TRANSFER) return false;
  if (op.phase < PP_PHASE_FORWARD || op.phase > PP_PHASE_RECOMPUTE) return false;
  if (op.scope < PP_SCOPE_EMBEDDING || op.scope > PP_SCOPE_STEP) return false;
  bool communicates = op.kind == PP_OP_COLLECTIVE || op.kind == PP_OP_SEND_RECV;
  // An op may name an axis that a later strategy has not created yet only by index; require it now.
  if (communicates && (op.axis < 0 || static_cast<size_t>(op.axis) >= axis_count)) return false;
  return op.flops >= 0 && op.bytes >= 0;
}

pp_op default_op() {
  pp_op op{};
  op.struct_size = sizeof(pp_op);
  op.frequency = PP_PER_MICRO_BATCH;
  op.axis = -1;
  op.repeat = 1;
  return op;
}

}  // namespace

Plan::Plan(const pp_model& model, const pp_training& training, const pp_cluster& cluster, int64_t data_parallel_size)
    : model_(model),
      model_name_(model.name ? model.name : "custom"),
      training_(training),
      cluster_(cluster),
      data_parallel_size_(data_parallel_size) {
  model_.name = model_name_.c_str();
  reset(training, data_parallel_size);
  api_ = pp_plan_api_v1{sizeof(pp_plan_api_v1), this, &Plan::get_view, &Plan::add_axis, &Plan::set_op,
                        &Plan::insert_op, &Plan::remove_op, &Plan::set_memory, &Plan::add_memory,
                        &Plan::set_pipeline, &Plan::set_schedule};
}

void Plan::reset(const pp_training& training, int64_t data_parallel_size) {
  training_ = training;
  data_parallel_size_ = data_parallel_size;
  state_.axes.clear();
  state_.ops.clear();
  state_.memory.clear();
  state_.steps.clear();
  state_.pipeline = pp_pipeline{};
  state_.pipeline.struct_size = sizeof(pp_pipeline);
  state_.pipeline.schedule = PP_SCHEDULE_NONE;
  state_.pipeline.stages = 1;
  state_.pipeline.virtual_stages = 1;
  state_.pipeline.micro_batches = training.global_batch / (training.micro_batch * data_parallel_size);
  state_.pipeline.bubble_fraction = 0.0;
  state_.pipeline.in_flight_micro_batches = 1.0;
  state_.stages.assign(1, pp_stage{sizeof(pp_stage), model_.layers, 1, 1, 1.0});
}

void Plan::save(State& state) const { state = state_; }

void Plan::restore(const State& state) { state_ = state; }

pp_plan_view_v1 Plan::view() const {
  pp_plan_view_v1 view{};
  view.struct_size = sizeof(view);
  view.model = &model_;
  view.training = &training_;
  view.cluster = &cluster_;
  view.axes = state_.axes.data();
  view.axis_count = static_cast<uint32_t>(state_.axes.size());
  view.ops = state_.ops.data();
  view.op_count = static_cast<uint32_t>(state_.ops.size());
  view.memory = state_.memory.data();
  view.memory_count = static_cast<uint32_t>(state_.memory.size());
  view.pipeline = &state_.pipeline;
  view.stages = state_.stages.data();
  view.stage_count = static_cast<uint32_t>(state_.stages.size());
  view.steps = state_.steps.data();
  view.step_count = state_.steps.size();
  view.data_parallel_size = data_parallel_size_;
  return view;
}

void Plan::get_view(void* plan, pp_plan_view_v1* out) {
  if (!out || out->struct_size < sizeof(uint32_t)) return;
  pp_plan_view_v1 view = self(plan).view();
  size_t size = std::min<size_t>(out->struct_size, sizeof(view));
  std::memcpy(out, &view, size);
  out->struct_size = static_cast<uint32_t>(size);
}

int32_t Plan::add_axis(void* plan, const char* name, int64_t degree, const char* parent, const char* owner) {
  Plan& target = self(plan);
  if (!name || !*name || std::strlen(name) >= PP_AXIS_NAME_CAPACITY || degree < 1) return -1;
  if (parent && std::strlen(parent) >= PP_AXIS_NAME_CAPACITY) return -1;
  for (const pp_mesh_axis& axis : target.state_.axes)
    if (std::strcmp(axis.name, name) == 0) return -1;
  pp_mesh_axis axis{};
  axis.struct_size = sizeof(axis);
  std::strncpy(axis.name, name, PP_AXIS_NAME_CAPACITY - 1);
  if (parent) std::strncpy(axis.parent, parent, PP_AXIS_NAME_CAPACITY - 1);
  if (owner) std::strncpy(axis.owner, owner, PP_OWNER_CAPACITY - 1);
  axis.degree = degree;
  axis.stride = 0;
  target.state_.axes.push_back(axis);
  return static_cast<int32_t>(target.state_.axes.size() - 1);
}

pp_status Plan::set_op(void* plan, uint32_t index, const pp_op* op) {
  Plan& target = self(plan);
  if (index >= target.state_.ops.size()) return PP_ERROR_INVALID_ARGUMENT;
  pp_op copy;
  if (!copy_versioned(op, copy, target.state_.ops[index]) || !valid_op(copy, target.state_.axes.size()))
    return PP_ERROR_INVALID_ARGUMENT;
  target.state_.ops[index] = copy;
  return PP_OK;
}

pp_status Plan::insert_op(void* plan, uint32_t index, const pp_op* op) {
  Plan& target = self(plan);
  if (index > target.state_.ops.size()) return PP_ERROR_INVALID_ARGUMENT;
  pp_op copy;
  if (!copy_versioned(op, copy, default_op()) || !valid_op(copy, target.state_.axes.size())) return PP_ERROR_INVALID_ARGUMENT;
  target.state_.ops.insert(target.state_.ops.begin() + index, copy);
  return PP_OK;
}

pp_status Plan::remove_op(void* plan, uint32_t index) {
  Plan& target = self(plan);
  if (index >= target.state_.ops.size()) return PP_ERROR_INVALID_ARGUMENT;
  target.state_.ops.erase(target.state_.ops.begin() + index);
  return PP_OK;
}

pp_status Plan::set_memory(void* plan, uint32_t index, const pp_memory_item* item) {
  Plan& target = self(plan);
  if (index >= target.state_.memory.size()) return PP_ERROR_INVALID_ARGUMENT;
  pp_memory_item copy;
  if (!copy_versioned(item, copy, target.state_.memory[index]) || !terminated(copy.name) || copy.bytes < 0)
    return PP_ERROR_INVALID_ARGUMENT;
  target.state_.memory[index] = copy;
  return PP_OK;
}

pp_status Plan::add_memory(void* plan, const pp_memory_item* item) {
  Plan& target = self(plan);
  pp_memory_item copy;
  pp_memory_item fallback{};
  fallback.struct_size = sizeof(fallback);
  if (!copy_versioned(item, copy, fallback) || !terminated(copy.name) || !terminated(copy.owner) || copy.bytes < 0)
    return PP_ERROR_INVALID_ARGUMENT;
  target.state_.memory.push_back(copy);
  return PP_OK;
}

pp_status Plan::set_pipeline(void* plan, const pp_pipeline* pipeline, const pp_stage* stages, uint32_t count) {
  Plan& target = self(plan);
  pp_pipeline copy;
  if (!copy_versioned(pipeline, copy, target.state_.pipeline)) return PP_ERROR_INVALID_ARGUMENT;
  if (copy.stages < 1 || copy.virtual_stages < 1 || copy.micro_batches < 1 || count != copy.stages || !stages)
    return PP_ERROR_INVALID_ARGUMENT;
  std::vector<pp_stage> layout;
  int64_t layers = 0;
  for (uint32_t i = 0; i < count; ++i) {
    pp_stage stage;
    if (!copy_versioned(&stages[i], stage, pp_stage{sizeof(pp_stage), 0, 0, 0, 0.0}) || stage.layers < 0 ||
        stage.in_flight_micro_batches < 0)
      return PP_ERROR_INVALID_ARGUMENT;
    layers += stage.layers;
    layout.push_back(stage);
  }
  if (layers != target.model_.layers) return PP_ERROR_INVALID_ARGUMENT;  // every layer placed exactly once
  target.state_.pipeline = copy;
  target.state_.stages = std::move(layout);
  return PP_OK;
}

pp_status Plan::set_schedule(void* plan, const pp_schedule_step* steps, uint64_t count) {
  Plan& target = self(plan);
  if (count > 0 && !steps) return PP_ERROR_INVALID_ARGUMENT;
  std::vector<pp_schedule_step> copy;
  copy.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    pp_schedule_step step;
    if (!copy_versioned(&steps[i], step, pp_schedule_step{sizeof(pp_schedule_step), 0, 0, 0, PP_PHASE_FORWARD}))
      return PP_ERROR_INVALID_ARGUMENT;
    if (step.stage < 0 || step.stage >= target.state_.pipeline.stages) return PP_ERROR_INVALID_ARGUMENT;
    if (step.phase < PP_PHASE_FORWARD || step.phase > PP_PHASE_WEIGHT_GRADIENT || step.micro_batch < 0 || step.chunk < 0)
      return PP_ERROR_INVALID_ARGUMENT;
    copy.push_back(step);
  }
  target.state_.steps = std::move(copy);
  return PP_OK;
}

void Plan::lay_out_mesh(const std::vector<std::string>& mesh_order) {
  std::vector<int64_t> strides(state_.axes.size());
  mesh_strides(state_.axes, top_level_axes_in_order(state_.axes, mesh_order), cluster_.num_gpus, strides.data());
  for (size_t i = 0; i < state_.axes.size(); ++i) state_.axes[i].stride = strides[i];
}

std::vector<size_t> top_level_axes_in_order(std::span<const pp_mesh_axis> axes, const std::vector<std::string>& names) {
  auto rank = [&](const pp_mesh_axis& axis) {
    auto found = std::find(names.begin(), names.end(), axis.name);
    return found == names.end() ? names.size() : static_cast<size_t>(found - names.begin());
  };
  std::vector<size_t> top_level;
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i].parent[0] == '\0') top_level.push_back(i);
  std::stable_sort(top_level.begin(), top_level.end(),
                   [&](size_t a, size_t b) { return rank(axes[a]) < rank(axes[b]); });
  return top_level;
}

void mesh_strides(std::span<const pp_mesh_axis> axes, std::span<const size_t> top_level_order, int64_t num_gpus,
                  int64_t* strides) {
  std::fill(strides, strides + axes.size(), int64_t{0});
  int64_t stride = 1;
  for (size_t index : top_level_order) {
    strides[index] = stride;
    stride *= axes[index].degree;
  }
  if (stride != num_gpus)
    throw PlanError("the mesh covers " + std::to_string(stride) + " GPUs but the cluster has " +
                    std::to_string(num_gpus));
  // Children subdivide their parent innermost-first, in creation order.
  for (size_t parent = 0; parent < axes.size(); ++parent) {
    if (axes[parent].parent[0] != '\0') continue;
    int64_t child_stride = strides[parent];
    int64_t covered = 1;
    for (size_t child = 0; child < axes.size(); ++child) {
      if (std::strcmp(axes[child].parent, axes[parent].name) != 0) continue;
      strides[child] = child_stride;
      child_stride *= axes[child].degree;
      covered *= axes[child].degree;
    }
    if (covered > 1 && axes[parent].degree % covered != 0)
      throw PlanError("axes inside '" + std::string(axes[parent].name) + "' have degree product " +
                      std::to_string(covered) + ", which does not divide its degree " +
                      std::to_string(axes[parent].degree));
  }
  for (size_t i = 0; i < axes.size(); ++i)
    if (strides[i] == 0)
      throw PlanError("mesh axis '" + std::string(axes[i].name) + "' subdivides an axis '" + axes[i].parent +
                      "' that no strategy created");
}

}  // namespace paraplan::host
