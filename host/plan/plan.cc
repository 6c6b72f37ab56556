#include "host/plan/plan.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "host/core/errors.h"
#include "paraplan/sdk.hpp"

namespace paraplan::host {
namespace {

// Copies a plugin-supplied struct: at least as large as in ABI 1.0 (where each of these began),
// with whatever a later struct holds beyond ours ignored. Returns false when it is too small.
template <typename Struct>
bool copy_versioned(const Struct* source, Struct& target) {
  if (!source || source->struct_size < sizeof(Struct)) return false;
  std::memcpy(&target, source, sizeof(Struct));
  target.struct_size = sizeof(Struct);
  return true;
}

template <size_t N>
bool terminated(const char (&field)[N]) {
  for (char letter : field)  // names are short: this stops long before N
    if (letter == '\0') return true;
  return false;
}

bool finite_non_negative(double value) { return std::isfinite(value) && value >= 0; }

// A plugin's enum field as the integer it holds: reading an out-of-range value through the enum
// type is undefined behaviour, so the checks below never do until the value is known valid.
template <typename Enum>
int32_t raw(const Enum& field) {
  static_assert(sizeof(Enum) == sizeof(int32_t));
  int32_t value;
  std::memcpy(&value, &field, sizeof value);
  return value;
}

// Why `op` cannot join the plan ("" when it can): every enum in range, every number finite and
// not negative, names terminated, communication on an existing axis.
std::string op_problem(const pp_op& op, size_t axis_count) {
  if (!terminated(op.name) || !terminated(op.owner)) return "its name or owner is not NUL-terminated";
  // Named only when refused: a search checks every op a strategy edits.
  const auto which = [&] { return "op '" + std::string(op.name) + "'"; };
  auto out_of = [&](const char* field, long long value, const char* range) {
    return which() + " has " + field + " " + std::to_string(value) + ", not " + range;
  };
  if (op.name[0] == '\0') return "an op has an empty name";
  if (raw(op.kind) < PP_OP_GEMM || raw(op.kind) > PP_OP_HOST_TRANSFER) return out_of("kind", raw(op.kind), "1-6");
  if (raw(op.phase) < PP_PHASE_FORWARD || raw(op.phase) > PP_PHASE_RECOMPUTE) return out_of("phase", raw(op.phase), "1-4");
  if (raw(op.scope) < PP_SCOPE_EMBEDDING || raw(op.scope) > PP_SCOPE_STEP) return out_of("scope", raw(op.scope), "1-4");
  if (raw(op.frequency) != PP_PER_MICRO_BATCH && raw(op.frequency) != PP_PER_STEP) return out_of("frequency", raw(op.frequency), "1-2");
  if (raw(op.dtype) < 0 || raw(op.dtype) > PP_DTYPE_NVFP4) return out_of("dtype", raw(op.dtype), "0-6");
  if (raw(op.collective) < PP_COLLECTIVE_NONE || raw(op.collective) > PP_COLLECTIVE_BROADCAST)
    return out_of("collective", raw(op.collective), "0-5");
  if (op.kind == PP_OP_COLLECTIVE && op.collective == PP_COLLECTIVE_NONE) return which() + " is a collective of kind NONE";
  if (raw(op.overlap) != PP_OVERLAP_NONE && raw(op.overlap) != PP_OVERLAP_COMPUTE) return out_of("overlap", raw(op.overlap), "0-1");
  if (op.repeat == 0 || op.repeat > kMaxRepeat) return out_of("repeat", op.repeat, "1-1000000");
  const std::pair<const char*, double> numbers[] = {{"m", op.m}, {"n", op.n}, {"k", op.k}, {"count", op.count},
                                                    {"flops", op.flops}, {"bytes", op.bytes}};
  for (const auto& [field, value] : numbers)
    if (!finite_non_negative(value))
      return which() + " has " + field + " = " + std::to_string(value) + ", not a finite number >= 0";
  const bool communicates = op.kind == PP_OP_COLLECTIVE || op.kind == PP_OP_SEND_RECV;
  // An op may name an axis that a later strategy has not created yet only by index; require it now.
  if (communicates && (op.axis < 0 || static_cast<size_t>(op.axis) >= axis_count))
    return which() + " communicates over axis " + std::to_string(op.axis) + ", but the plan has " +
           std::to_string(axis_count) + " axes";
  return "";
}

std::string memory_problem(const pp_memory_item& item) {
  if (!terminated(item.name) || !terminated(item.owner)) return "a memory item's name or owner is not NUL-terminated";
  const auto which = [&] { return "memory item '" + std::string(item.name) + "'"; };
  if (item.name[0] == '\0') return "a memory item has an empty name";
  if (raw(item.kind) < PP_MEMORY_PARAMETERS || raw(item.kind) > PP_MEMORY_OTHER)
    return which() + " has kind " + std::to_string(raw(item.kind)) + ", not 1-5";
  if (raw(item.scope) < PP_SCOPE_EMBEDDING || raw(item.scope) > PP_SCOPE_STEP)
    return which() + " has scope " + std::to_string(raw(item.scope)) + ", not 1-4";
  if (!finite_non_negative(item.bytes)) return which() + " has bytes = " + std::to_string(item.bytes) + ", not a finite number >= 0";
  return "";
}


}  // namespace

Plan::Plan(const pp_model& model, const pp_training& training, const pp_cluster& cluster, int64_t data_parallel_size)
    : stack_(LayerStack::of(model)),
      model_(model),
      model_name_(model.name ? model.name : "custom"),
      training_(training),
      cluster_(cluster),
      data_parallel_size_(data_parallel_size) {
  model_.name = model_name_.c_str();
  if (model.struct_size < sizeof(pp_model) || model.layer_kind_count == 0) {
    // What a 1.5 model said, and the 1.6 defaults for the rest.
    model_.tied_embeddings = 0;
    model_.dropout = kDefaultDropout;
    model_.rotary_base = model_.norm_epsilon = 0;
    model_.position_embedding = PP_POSITION_EMBEDDING_UNSPECIFIED;
  }
  model_.struct_size = sizeof(pp_model);
  stack_.attach(model_);
  reset(training, data_parallel_size);
  api_ = pp_plan_api_v1{sizeof(pp_plan_api_v1), this, &Plan::get_view, &Plan::add_axis, &Plan::set_op,
                        &Plan::insert_op, &Plan::remove_op, &Plan::set_memory, &Plan::add_memory,
                        &Plan::set_pipeline, &Plan::set_schedule, &Plan::insert_layer_op,
                        &Plan::add_layer_memory, &Plan::set_layer_counts};
}

void Plan::reset(const pp_training& training, int64_t data_parallel_size) {
  training_ = training;
  data_parallel_size_ = data_parallel_size;
  state_.axes.clear();
  changed_everything();
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
  state_.stages.assign(1, pp_stage{sizeof(pp_stage), stack_layers(), 1, 1, 1.0});
  state_.op_kinds.clear();
  state_.memory_kinds.clear();
  fill_layer_counts_in_order();
}

void Plan::add_workload_op(const pp_op& op, uint32_t layer_kind) {
  changed_op(state_.ops.size());
  state_.ops.push_back(op);
  state_.op_kinds.push_back(op.scope == PP_SCOPE_LAYER ? layer_kind : PP_EVERY_LAYER_KIND);
}

void Plan::add_workload_memory(const pp_memory_item& item, uint32_t layer_kind) {
  changed_memory(state_.memory.size());
  state_.memory.push_back(item);
  state_.memory_kinds.push_back(item.scope == PP_SCOPE_LAYER ? layer_kind : PP_EVERY_LAYER_KIND);
}

void Plan::set_workload(const std::vector<pp_op>& ops, const std::vector<uint32_t>& op_kinds,
                        const std::vector<pp_memory_item>& memory, const std::vector<uint32_t>& memory_kinds) {
  changed_everything();
  state_.ops = ops;
  state_.op_kinds = op_kinds;
  state_.memory = memory;
  state_.memory_kinds = memory_kinds;
}

// The virtual stages take the model's layers in order (chunk c of stage s is the one
// paraplan::virtual_stage_of names), each stage's layers split over its chunks by
// paraplan::even_chunk_layers.
void Plan::fill_layer_counts_in_order() {
  const size_t stages = state_.stages.size(), kinds = stack_.kinds().size();
  const size_t chunks = static_cast<size_t>(std::max<int64_t>(1, state_.pipeline.virtual_stages));
  state_.layer_counts.assign(stages * chunks * kinds, 0);
  std::vector<size_t> chunk_in_order(stages * chunks);  // virtual stage -> chunk * stages + stage
  for (size_t chunk = 0; chunk < chunks; ++chunk)
    for (size_t stage = 0; stage < stages; ++stage) {
      const int64_t virtual_stage = paraplan::virtual_stage_of(state_.pipeline, static_cast<int64_t>(stage),
                                                               static_cast<int64_t>(chunk));
      chunk_in_order[static_cast<size_t>(virtual_stage)] = chunk * stages + stage;
    }
  size_t next = 0;
  for (const size_t entry : chunk_in_order) {
    const size_t stage = entry % stages, chunk = entry / stages;
    const int64_t here = paraplan::even_chunk_layers(state_.stages[stage].layers, static_cast<int64_t>(chunks),
                                                     static_cast<int64_t>(chunk));
    for (int64_t i = 0; i < here && next < stack_.sequence().size(); ++i, ++next)
      ++state_.layer_counts[entry * kinds + stack_.sequence()[next]];
  }
}

uint32_t Plan::inferred_kind(uint32_t index) const {
  for (uint32_t i = index; i-- > 0;)
    if (state_.ops[i].scope == PP_SCOPE_LAYER) return state_.op_kinds[i];
  for (size_t i = index; i < state_.ops.size(); ++i)
    if (state_.ops[i].scope == PP_SCOPE_LAYER) return state_.op_kinds[i];
  return PP_EVERY_LAYER_KIND;
}

Plan::ChangeMark Plan::changes_since(size_t mark) const {
  ChangeMark since{0, SIZE_MAX, SIZE_MAX};
  for (size_t i = mark; i < marks_.size(); ++i) {
    since.first_op = std::min(since.first_op, marks_[i].first_op);
    since.first_memory = std::min(since.first_memory, marks_[i].first_memory);
  }
  return since;
}

void Plan::mark(State& state) {
  state.mark = marks_.size();
  state.mark_id = next_mark_id_++;
  marks_.push_back({state.mark_id, SIZE_MAX, SIZE_MAX});
}

void Plan::save(State& state) {
  const uint64_t id = state.mark_id;
  const size_t at = state.mark;
  state.axes = state_.axes;
  state.ops = state_.ops;
  state.memory = state_.memory;
  state.pipeline = state_.pipeline;
  state.stages = state_.stages;
  state.steps = state_.steps;
  state.op_kinds = state_.op_kinds;
  state.memory_kinds = state_.memory_kinds;
  state.layer_counts = state_.layer_counts;
  // Saved again over an outstanding snapshot: the edits since then still count for the states
  // saved before it, so they fold into the mark before its own.
  if (at < marks_.size() && marks_[at].id == id) {
    const ChangeMark since = changes_since(at);
    marks_.resize(at);
    changed_op(since.first_op);
    changed_memory(since.first_memory);
  }
  mark(state);
}

void Plan::restore(State& state) {
  const bool outstanding = state.mark < marks_.size() && marks_[state.mark].id == state.mark_id;
  // Not outstanding: everything may differ, so everything is copied.
  const ChangeMark since = outstanding ? changes_since(state.mark) : ChangeMark{0, 0, 0};
  const size_t first_op = since.first_op, first_memory = since.first_memory;
  // Only what changed since the state was marked: the prefix before it is equal.
  const auto copy_from = [](auto& into, const auto& from, size_t first) {
    first = std::min(first, from.size());
    into.resize(from.size());
    std::copy(from.begin() + static_cast<std::ptrdiff_t>(first), from.end(), into.begin() + static_cast<std::ptrdiff_t>(first));
  };
  copy_from(state_.ops, state.ops, first_op);
  copy_from(state_.op_kinds, state.op_kinds, first_op);
  copy_from(state_.memory, state.memory, first_memory);
  copy_from(state_.memory_kinds, state.memory_kinds, first_memory);
  state_.axes = state.axes;
  state_.pipeline = state.pipeline;
  state_.stages = state.stages;
  state_.steps = state.steps;
  state_.layer_counts = state.layer_counts;
  if (outstanding) {
    // The plan is the state again: the marks after its own describe edits now undone.
    marks_.resize(state.mark + 1);
    marks_.back().first_op = marks_.back().first_memory = SIZE_MAX;
    return;
  }
  // Copied whole, which may differ from any older state anywhere.
  changed_everything();
  mark(state);
}

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
  view.op_layer_kinds = state_.op_kinds.data();
  view.memory_layer_kinds = state_.memory_kinds.data();
  view.layer_kind_count = static_cast<uint32_t>(stack_.kinds().size());
  view.layer_counts = state_.layer_counts.data();
  view.layer_count_entries = state_.layer_counts.size();
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
  try {
    return self(plan).add_axis_checked(name, degree, parent, owner);
  } catch (...) {
    return -1;
  }
}

int32_t Plan::add_axis_checked(const char* name, int64_t degree, const char* parent, const char* owner) {
  Plan& target = *this;
  auto refused = [&](const std::string& problem) {
    target.refuse("add_axis: " + problem);
    return -1;
  };
  if (!name || strnlen(name, PP_AXIS_NAME_CAPACITY) == 0 || strnlen(name, PP_AXIS_NAME_CAPACITY) >= PP_AXIS_NAME_CAPACITY)
    return refused("an axis name must have 1-" + std::to_string(PP_AXIS_NAME_CAPACITY - 1) + " characters");
  if (degree < 1 || degree > target.cluster_.num_gpus)
    return refused("axis '" + std::string(name) + "' has degree " + std::to_string(degree) + ", not 1-" +
                   std::to_string(target.cluster_.num_gpus) + " (the GPU count)");
  if (parent && strnlen(parent, PP_AXIS_NAME_CAPACITY) >= PP_AXIS_NAME_CAPACITY) return refused("a parent name is too long");
  if (owner && strnlen(owner, PP_OWNER_CAPACITY) >= PP_OWNER_CAPACITY) return refused("an owner name is too long");
  if (target.state_.axes.size() >= 64) return refused("the plan already has 64 axes");
  for (const pp_mesh_axis& axis : target.state_.axes)
    if (std::strcmp(axis.name, name) == 0) return refused("axis '" + std::string(name) + "' exists already");
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

pp_status Plan::refuse(const std::string& problem) {
  if (refusal_.empty()) refusal_ = problem;
  return PP_ERROR_INVALID_ARGUMENT;
}

// Every callback a plugin calls: no exception may unwind into the plugin's frames.
template <typename Body>
pp_status Plan::guarded(void* plan, Body&& body) noexcept {
  try {
    return body(self(plan));
  } catch (...) {
    try {
      return self(plan).refuse("the host ran out of memory for the plan");
    } catch (...) {
      return PP_ERROR_INTERNAL;
    }
  }
}

pp_status Plan::set_op(void* plan, uint32_t index, const pp_op* op) {
  return guarded(plan, [&](Plan& target) {
    if (index >= target.state_.ops.size()) return target.refuse("set_op: no op " + std::to_string(index));
    pp_op copy;
    if (!copy_versioned(op, copy)) return target.refuse("set_op: an op smaller than ABI 1.0's pp_op (or NULL)");
    if (std::string problem = op_problem(copy, target.state_.axes.size()); !problem.empty())
      return target.refuse("set_op: " + problem);
    target.changed_op(index);
    target.state_.ops[index] = copy;
    if (copy.scope != PP_SCOPE_LAYER) target.state_.op_kinds[index] = PP_EVERY_LAYER_KIND;
    return PP_OK;
  });
}

pp_status Plan::insert_op(void* plan, uint32_t index, const pp_op* op) {
  return guarded(plan, [&](Plan& target) {
    // A 1.5 plugin's op joins the layer kind of its neighbours (it was inserted among them).
    const uint32_t kind = index <= target.state_.ops.size() ? target.inferred_kind(index) : PP_EVERY_LAYER_KIND;
    return target.insert_op_of_kind("insert_op", index, op, kind);
  });
}

pp_status Plan::insert_layer_op(void* plan, uint32_t index, const pp_op* op, uint32_t layer_kind) {
  return guarded(plan, [&](Plan& target) { return target.insert_op_of_kind("insert_layer_op", index, op, layer_kind); });
}

pp_status Plan::insert_op_of_kind(const char* call, uint32_t index, const pp_op* op, uint32_t layer_kind) {
  const auto name = [call] { return std::string(call); };  // spelled only when refused
  if (index > state_.ops.size()) return refuse(name() + ": index " + std::to_string(index) + " is past the end");
  if (state_.ops.size() >= kMaxOps) return refuse(name() + ": the plan already has " + std::to_string(kMaxOps) + " ops");
  if (layer_kind != PP_EVERY_LAYER_KIND && layer_kind >= stack_.kinds().size())
    return refuse(name() + ": layer kind " + std::to_string(layer_kind) + ", but the model has " +
                  std::to_string(stack_.kinds().size()));
  pp_op copy;
  if (!copy_versioned(op, copy)) return refuse(name() + ": an op smaller than ABI 1.0's pp_op (or NULL)");
  if (std::string problem = op_problem(copy, state_.axes.size()); !problem.empty()) return refuse(name() + ": " + problem);
  changed_op(index);
  state_.ops.insert(state_.ops.begin() + index, copy);
  state_.op_kinds.insert(state_.op_kinds.begin() + index, copy.scope == PP_SCOPE_LAYER ? layer_kind : PP_EVERY_LAYER_KIND);
  return PP_OK;
}

pp_status Plan::remove_op(void* plan, uint32_t index) {
  return guarded(plan, [&](Plan& target) {
    if (index >= target.state_.ops.size()) return target.refuse("remove_op: no op " + std::to_string(index));
    target.changed_op(index);
    target.state_.ops.erase(target.state_.ops.begin() + index);
    target.state_.op_kinds.erase(target.state_.op_kinds.begin() + index);
    return PP_OK;
  });
}

pp_status Plan::set_memory(void* plan, uint32_t index, const pp_memory_item* item) {
  return guarded(plan, [&](Plan& target) {
    if (index >= target.state_.memory.size()) return target.refuse("set_memory: no memory item " + std::to_string(index));
    pp_memory_item copy;
    if (!copy_versioned(item, copy)) return target.refuse("set_memory: an item smaller than ABI 1.0's (or NULL)");
    if (std::string problem = memory_problem(copy); !problem.empty()) return target.refuse("set_memory: " + problem);
    target.changed_memory(index);
    target.state_.memory[index] = copy;
    return PP_OK;
  });
}

pp_status Plan::add_memory(void* plan, const pp_memory_item* item) {
  // A 1.5 plugin's LAYER item is held by every layer, whatever its kind.
  return guarded(plan, [&](Plan& target) { return target.add_memory_of_kind("add_memory", item, PP_EVERY_LAYER_KIND); });
}

pp_status Plan::add_layer_memory(void* plan, const pp_memory_item* item, uint32_t layer_kind) {
  return guarded(plan, [&](Plan& target) { return target.add_memory_of_kind("add_layer_memory", item, layer_kind); });
}

pp_status Plan::add_memory_of_kind(const char* call, const pp_memory_item* item, uint32_t layer_kind) {
  const auto name = [call] { return std::string(call); };  // spelled only when refused
  if (state_.memory.size() >= kMaxOps)
    return refuse(name() + ": the plan already has " + std::to_string(kMaxOps) + " memory items");
  if (layer_kind != PP_EVERY_LAYER_KIND && layer_kind >= stack_.kinds().size())
    return refuse(name() + ": layer kind " + std::to_string(layer_kind) + ", but the model has " +
                  std::to_string(stack_.kinds().size()));
  pp_memory_item copy;
  if (!copy_versioned(item, copy)) return refuse(name() + ": an item smaller than ABI 1.0's (or NULL)");
  if (std::string problem = memory_problem(copy); !problem.empty()) return refuse(name() + ": " + problem);
  changed_memory(state_.memory.size());
  state_.memory.push_back(copy);
  state_.memory_kinds.push_back(copy.scope == PP_SCOPE_LAYER ? layer_kind : PP_EVERY_LAYER_KIND);
  return PP_OK;
}

pp_status Plan::set_layer_counts(void* plan, const int64_t* counts, uint64_t count) {
  return guarded(plan, [&](Plan& target) {
    const size_t stages = target.state_.stages.size(), kinds = target.stack_.kinds().size();
    const size_t chunks = static_cast<size_t>(target.state_.pipeline.virtual_stages);
    if (!counts || count != stages * chunks * kinds)
      return target.refuse("set_layer_counts: " + std::to_string(count) + " entries for " + std::to_string(stages) +
                           " stages x " + std::to_string(chunks) + " chunks x " + std::to_string(kinds) + " layer kinds");
    std::vector<int64_t> per_kind(kinds, 0);
    for (size_t stage = 0; stage < stages; ++stage) {
      int64_t held = 0;
      for (size_t chunk = 0; chunk < chunks; ++chunk)
        for (size_t kind = 0; kind < kinds; ++kind) {
          const int64_t value = counts[(chunk * stages + stage) * kinds + kind];
          if (value < 0 || value > target.stack_.kinds()[kind].count)
            return target.refuse("set_layer_counts: stage " + std::to_string(stage) + " chunk " + std::to_string(chunk) +
                                 " holds " + std::to_string(value) + " layers of kind '" + target.stack_.kinds()[kind].name +
                                 "', which the model has " + std::to_string(target.stack_.kinds()[kind].count) + " of");
          held += value;  // each term at most the kind's count: no overflow
          per_kind[kind] += value;
        }
      if (held != target.state_.stages[stage].layers)
        return target.refuse("set_layer_counts: stage " + std::to_string(stage) + " holds " + std::to_string(held) +
                             " layers by kind, but " + std::to_string(target.state_.stages[stage].layers) + " by set_pipeline");
    }
    for (size_t kind = 0; kind < kinds; ++kind)
      if (per_kind[kind] != target.stack_.kinds()[kind].count)
        return target.refuse("set_layer_counts: the stages hold " + std::to_string(per_kind[kind]) + " layers of kind '" +
                             target.stack_.kinds()[kind].name + "', the model has " +
                             std::to_string(target.stack_.kinds()[kind].count));
    target.state_.layer_counts.assign(counts, counts + count);
    return PP_OK;
  });
}

pp_status Plan::set_pipeline(void* plan, const pp_pipeline* pipeline, const pp_stage* stages, uint32_t count) {
  return guarded(plan, [&](Plan& target) {
    pp_pipeline copy;
    if (!copy_versioned(pipeline, copy)) return target.refuse("set_pipeline: a pipeline smaller than ABI 1.0's (or NULL)");
    if (raw(copy.schedule) < PP_SCHEDULE_NONE || raw(copy.schedule) > PP_SCHEDULE_DUALPIPE_V)
      return target.refuse("set_pipeline: schedule " + std::to_string(raw(copy.schedule)) + ", not 0-5");
    if (copy.schedule == PP_SCHEDULE_DUALPIPE_V && copy.virtual_stages != 2)
      return target.refuse("set_pipeline: DualPipe-V places 2 chunks on every stage, not " +
                           std::to_string(copy.virtual_stages));
    if (copy.stages < 1 || copy.stages > target.cluster_.num_gpus || copy.virtual_stages < 1 ||
        copy.virtual_stages > std::max<int64_t>(1, target.stack_layers()) || copy.micro_batches < 1 ||
        copy.micro_batches > kMaxMicroBatches)
      return target.refuse("set_pipeline: " + std::to_string(copy.stages) + " stages of " +
                           std::to_string(copy.virtual_stages) + " chunks over " + std::to_string(copy.micro_batches) +
                           " micro-batches is out of range (stages 1-GPUs, chunks 1-layers, micro-batches >= 1)");
    if (!finite_non_negative(copy.bubble_fraction) || !finite_non_negative(copy.in_flight_micro_batches))
      return target.refuse("set_pipeline: the bubble fraction and micro-batches in flight must be finite numbers >= 0");
    if (count != copy.stages || !stages)
      return target.refuse("set_pipeline: " + std::to_string(count) + " stage entries for " + std::to_string(copy.stages) + " stages");
    std::vector<pp_stage> layout;
    int64_t layers = 0;
    for (uint32_t i = 0; i < count; ++i) {
      pp_stage stage;
      if (!copy_versioned(&stages[i], stage)) return target.refuse("set_pipeline: a stage smaller than ABI 1.0's");
      if (stage.layers < 0 || stage.layers > target.stack_layers() || !finite_non_negative(stage.in_flight_micro_batches) ||
          (stage.has_embedding != 0 && stage.has_embedding != 1) || (stage.has_head != 0 && stage.has_head != 1))
        return target.refuse("set_pipeline: stage " + std::to_string(i) + " is malformed (layers " +
                             std::to_string(stage.layers) + ", flags 0/1, micro-batches in flight finite and >= 0)");
      layers += stage.layers;  // each term is at most the model's layers: no overflow
      layout.push_back(stage);
    }
    // A pipeline plugin that places the decoder layers only (pp_model.layers, as before 1.6)
    // leaves the multi-token-prediction modules to the last stage, where Megatron-LM puts them.
    const int64_t mtp = target.stack_.mtp_layers();
    if (mtp > 0 && layers == target.model_.layers) {
      layout.back().layers += mtp;
      layers += mtp;
    }
    if (layers != target.stack_layers())  // every layer placed exactly once
      return target.refuse("set_pipeline: the stages hold " + std::to_string(layers) + " layers, the model has " +
                           std::to_string(target.stack_layers()));
    target.state_.pipeline = copy;
    target.state_.stages = std::move(layout);
    target.fill_layer_counts_in_order();
    return PP_OK;
  });
}

pp_status Plan::set_schedule(void* plan, const pp_schedule_step* steps, uint64_t count) {
  return guarded(plan, [&](Plan& target) {
    if (count > 0 && !steps) return target.refuse("set_schedule: steps without an array");
    const pp_pipeline& pipeline = target.state_.pipeline;
    // A step per micro-batch, chunk and pass (forward, backward, weight gradient) per stage at most.
    const double most = 3.0 * static_cast<double>(pipeline.stages) * static_cast<double>(pipeline.virtual_stages) *
                        static_cast<double>(pipeline.micro_batches);
    if (static_cast<double>(count) > most)
      return target.refuse("set_schedule: " + std::to_string(count) + " steps, more than 3 per micro-batch, chunk and stage");
    std::vector<pp_schedule_step> copy;
    copy.reserve(count);
    for (uint64_t i = 0; i < count; ++i) {
      pp_schedule_step step;
      if (!copy_versioned(&steps[i], step)) return target.refuse("set_schedule: a step smaller than ABI 1.0's");
      if (step.stage < 0 || step.stage >= pipeline.stages || step.micro_batch < 0 ||
          step.micro_batch >= pipeline.micro_batches || step.chunk < 0 || step.chunk >= pipeline.virtual_stages ||
          raw(step.phase) < PP_PHASE_FORWARD || raw(step.phase) > PP_PHASE_WEIGHT_GRADIENT ||
          raw(step.phase) == PP_PHASE_STEP || raw(step.phase) == PP_PHASE_RECOMPUTE)
        return target.refuse("set_schedule: step " + std::to_string(i) + " (stage " + std::to_string(step.stage) +
                             ", micro-batch " + std::to_string(step.micro_batch) + ", chunk " + std::to_string(step.chunk) +
                             ", phase " + std::to_string(raw(step.phase)) + ") is out of the pipeline's range");
      copy.push_back(step);
    }
    target.state_.steps = std::move(copy);
    return PP_OK;
  });
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

bool try_mesh_strides(std::span<const pp_mesh_axis> axes, std::span<const size_t> top_level_order, int64_t num_gpus,
                      int64_t* strides, std::string* why) {
  // The reason is formatted only for a caller that reads it.
  auto refuse = [&](auto&& reason) {
    if (why) *why = reason();
    return false;
  };
  std::fill(strides, strides + axes.size(), int64_t{0});
  int64_t stride = 1;
  for (size_t index : top_level_order) {
    strides[index] = stride;
    stride *= axes[index].degree;
  }
  if (stride != num_gpus)
    return refuse([&] {
      return "the mesh covers " + std::to_string(stride) + " GPUs but the cluster has " + std::to_string(num_gpus);
    });
  // Children subdivide their parent innermost-first, in creation order. A parent is one
  // top-level axis or a region of several (paraplan::axis_region) whose axes must follow one
  // another in the layout: each one's stride the previous one's times its degree.
  std::vector<std::string> parents;
  for (const pp_mesh_axis& axis : axes)
    if (axis.parent[0] != '\0' && std::find(parents.begin(), parents.end(), axis.parent) == parents.end())
      parents.emplace_back(axis.parent);
  for (const std::string& parent : parents) {
    const std::vector<std::string_view> names = paraplan::axis_region(parent.c_str());
    const bool region = names.size() > 1;
    int64_t parent_stride = 0, parent_degree = 1;
    std::vector<std::string_view> spanned;
    auto spanned_text = [&] {
      std::string text;
      for (std::string_view name : spanned) text += (text.empty() ? "" : ", ") + std::string(name);
      return text;
    };
    for (std::string_view name : names) {
      auto member = std::find_if(axes.begin(), axes.end(), [&](const pp_mesh_axis& axis) {
        return axis.parent[0] == '\0' && name == axis.name;
      });
      if (member == axes.end()) {
        if (!region) break;  // its children keep stride 0: refused below, naming each of them
        return refuse([&] {
          return "mesh region '" + parent + "' names an axis '" + std::string(name) + "' that no strategy created";
        });
      }
      const int64_t stride = strides[static_cast<size_t>(member - axes.begin())];
      if (parent_stride == 0) {
        parent_stride = stride;
      } else if (stride != parent_stride * parent_degree) {
        return refuse([&] {
          return "axes inside '" + parent + "' need " + spanned_text() + " and " + std::string(name) +
                 " next to each other in the mesh order (innermost first), as in Megatron-LM's tp-cp-ep-dp-pp";
        });
      }
      parent_degree *= member->degree;
      spanned.push_back(name);
    }
    if (parent_stride == 0) continue;
    int64_t child_stride = parent_stride, covered = 1;
    for (size_t child = 0; child < axes.size(); ++child) {
      if (parent != axes[child].parent) continue;
      strides[child] = child_stride;
      child_stride *= axes[child].degree;
      covered *= axes[child].degree;
    }
    if (parent_degree % covered != 0)
      return refuse([&] {
        return "axes inside '" + parent + "' have degree product " + std::to_string(covered) +
               ", which does not divide " +
               (region ? "the " + std::to_string(parent_degree) + " ranks " + spanned_text() + " span"
                       : "its degree " + std::to_string(parent_degree));
      });
  }
  for (size_t i = 0; i < axes.size(); ++i)
    if (strides[i] == 0)
      return refuse([&] {
        return "mesh axis '" + std::string(axes[i].name) + "' subdivides an axis '" + axes[i].parent +
               "' that no strategy created";
      });
  return true;
}

void mesh_strides(std::span<const pp_mesh_axis> axes, std::span<const size_t> top_level_order, int64_t num_gpus,
                  int64_t* strides) {
  std::string why;
  if (!try_mesh_strides(axes, top_level_order, num_gpus, strides, &why)) throw PlanError(why);
}

std::string Plan::axis_named_otherwise(const std::string& strategy) const {
  // One axis only: a strategy over several (hsdp's shards and replicas) has a degree no one of
  // them is. fsdp's "dp" is what its name says; sp's "cp" (ring, all-to-all) is not.
  const pp_mesh_axis* owned = nullptr;
  for (const pp_mesh_axis& axis : state_.axes) {
    if (strategy != axis.owner) continue;
    if (owned) return "";
    owned = &axis;
  }
  return owned && !strategy.ends_with(owned->name) ? owned->name : "";
}

}  // namespace paraplan::host
