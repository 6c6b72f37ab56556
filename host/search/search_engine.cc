#include "host/search/search_engine.h"

#include <algorithm>
#include <concepts>
#include <optional>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>

#include "host/core/errors.h"
#include "host/plan/activation_offload.h"
#include "host/plan/captured_sync_check.h"
#include "host/plan/execution.h"
#include "host/plan/hardware_binding.h"
#include "host/plan/workload_builder.h"
#include "host/plugin/plugin_instance.h"
#include "host/core/divisors.h"
#include "host/core/joined.h"
#include "host/plan/strategy_application.h"
#include "host/plugin/abi_history.h"
#include "host/search/candidate_map.h"
#include "paraplan/sdk.hpp"

namespace paraplan::host {
namespace {

constexpr const char* kMemoryReason = "memory";
constexpr const char* kBatchReason = "batch";
constexpr const char* kMeshReason = "mesh";
// A plan that waits for the host inside a captured CUDA graph (host/plan/captured_sync_check.h).
constexpr const char* kCudaGraphReason = "cuda_graph";
// A plan that offloads activations as Megatron-LM cannot (host/plan/activation_offload.h).
constexpr const char* kOffloadReason = "cpu_offloading";

// One unit of work: the degrees of every slot, a micro-batch size and a recompute mode.
struct WorkItem {
  std::vector<int64_t> degrees;  // per slot; 0: not used
  int64_t data_parallel = 1;
  int64_t micro_batch = 1;
  pp_recompute recompute = PP_RECOMPUTE_NONE;
  bool partial_recompute = false;  // full recomputation of the fewest layers per chunk that fit
  std::vector<uint64_t> plans_below;  // plans_below[l]: plans formed by slots l.. (size slots + 1)
};

uint64_t compatible_options(const StrategySlot& slot, int64_t degree) {
  if (degree == 0) return 1;
  uint64_t count = 0;
  for (const StrategyOption& option : slot.options)
    if (!option.absent() && option.accepts(degree)) ++count;
  return count;
}

bool allows_absent(const StrategySlot& slot) {
  return std::any_of(slot.options.begin(), slot.options.end(), [](const StrategyOption& option) { return option.absent(); });
}

bool is_remainder(const StrategySlot& slot) { return slot.flags & PP_STRATEGY_TAKES_REMAINDER; }
bool subdivides(const StrategySlot& slot) { return slot.flags & PP_STRATEGY_SUBDIVIDES_DATA; }

// Every degree assignment whose product is the GPU count, in a fixed order.
class DegreeEnumerator {
 public:
  DegreeEnumerator(const SearchSpace& space, int64_t gpus) : space_(space), gpus_(gpus), degrees_(space.slots.size(), 0) {}

  std::vector<std::vector<int64_t>> all() {
    outer(0, 1);
    return found_;
  }

 private:
  // Slots that neither take the remainder nor subdivide data: any degree dividing what is left.
  void outer(size_t level, int64_t product) {
    if (level == space_.slots.size()) return remainder(product);
    const StrategySlot& slot = space_.slots[level];
    if (is_remainder(slot) || subdivides(slot)) return outer(level + 1, product);
    if (allows_absent(slot)) {
      degrees_[level] = 0;
      outer(level + 1, product);
    }
    for (int64_t degree : divisors(gpus_ / product))
      if (compatible_options(slot, degree) > 0) {
        degrees_[level] = degree;
        outer(level + 1, product * degree);
      }
    degrees_[level] = 0;
  }

  void remainder(int64_t product) {
    int64_t left = gpus_ / product;
    bool has_remainder = false;
    for (size_t level = 0; level < space_.slots.size(); ++level)
      if (is_remainder(space_.slots[level])) {
        has_remainder = true;
        if (compatible_options(space_.slots[level], left) == 0) return;
        degrees_[level] = left;
      }
    if (!has_remainder && left != 1) return;
    inner(0, has_remainder ? left : 1);
  }

  // Slots carved out of the ranks of a stage (expert parallelism: cp x dp, or tp x cp x dp):
  // degrees dividing the GPU count, which the strategy checks against the ranks it carves.
  void inner(size_t level, int64_t data_parallel) {
    if (level == space_.slots.size()) {
      found_.push_back(degrees_);
      return;
    }
    const StrategySlot& slot = space_.slots[level];
    if (!subdivides(slot)) return inner(level + 1, data_parallel);
    if (allows_absent(slot)) {
      degrees_[level] = 0;
      inner(level + 1, data_parallel);
    }
    for (int64_t degree : divisors(gpus_))
      if (degree > 1 && compatible_options(slot, degree) > 0) {
        degrees_[level] = degree;
        inner(level + 1, data_parallel);
      }
    degrees_[level] = 0;
  }

  const SearchSpace& space_;
  int64_t gpus_;
  std::vector<int64_t> degrees_;
  std::vector<std::vector<int64_t>> found_;
};

std::vector<WorkItem> work_items(const SearchSpace& space, int64_t gpus) {
  std::vector<WorkItem> items;
  for (const std::vector<int64_t>& degrees : DegreeEnumerator(space, gpus).all()) {
    WorkItem item;
    item.degrees = degrees;
    for (size_t level = 0; level < space.slots.size(); ++level)
      if (degrees[level] > 0 && (space.slots[level].flags & PP_STRATEGY_SPLITS_BATCH)) item.data_parallel *= degrees[level];
    item.plans_below.assign(space.slots.size() + 1, 1);
    for (size_t level = space.slots.size(); level-- > 0;)
      item.plans_below[level] = item.plans_below[level + 1] * compatible_options(space.slots[level], degrees[level]);
    for (int64_t micro_batch : space.micro_batches)
      for (pp_recompute recompute : space.recomputes) {
        item.micro_batch = micro_batch;
        item.recompute = recompute;
        item.partial_recompute = false;
        items.push_back(item);
        if (recompute == PP_RECOMPUTE_FULL && space.partial_recompute) {
          item.partial_recompute = true;
          items.push_back(item);
        }
      }
  }
  return items;
}

// Orders the top K by the objective, then by enumeration order.
struct RankOrder {
  Objective objective;
  bool operator()(const RankedPlan& a, const RankedPlan& b) const {
    if (objective == Objective::kMemory && a.figures.memory_per_gpu_bytes != b.figures.memory_per_gpu_bytes)
      return a.figures.memory_per_gpu_bytes < b.figures.memory_per_gpu_bytes;
    if (a.figures.step_s != b.figures.step_s) return a.figures.step_s < b.figures.step_s;
    return a.index < b.index;
  }
};

// Reads the search figures from an executor's run() keys (an executor without evaluate()).
struct FiguresSink {
  pp_plan_figures figures{sizeof(pp_plan_figures), 0, 0, 0, 0, 0};
  pp_result_sink_v1 sink() {
    return pp_result_sink_v1{sizeof(pp_result_sink_v1), this,
                             [](void* self, const char* key, double value) {
                               pp_plan_figures& out = static_cast<FiguresSink*>(self)->figures;
                               if (!key) return;
                               std::string_view name(key);
                               if (name == "time.step_s") out.step_s = value;
                               if (name == "memory.per_gpu_bytes") out.memory_per_gpu_bytes = value;
                               if (name == "memory.capacity_bytes") out.memory_capacity_bytes = value;
                               if (name == "throughput.tokens_per_s_per_gpu") out.tokens_per_s_per_gpu = value;
                               if (name == "throughput.mfu") out.mfu = value;
                             },
                             [](void*, const char*, int32_t) {}, [](void*, const char*, const char*) {}};
  }
};

// One thread's state: its own plugin instances, plan and results.
class Worker {
 public:
  Worker(const Recipe& recipe, const PluginCatalog& catalog, const SearchSpace& space, const SearchSettings& settings,
         int64_t gpus_per_node, bool prices_plans = true)
      : recipe_(recipe),
        space_(space),
        settings_(settings),
        hardware_(open_hardware(recipe, catalog)),
        binding_(hardware_->binding()),
        cluster_{sizeof(pp_cluster), recipe.cluster.num_gpus, gpus_per_node},
        plan_(recipe.model.shape, recipe.training, cluster_, 1),
        saved_(space.slots.size()),
        chosen_(space.slots.size(), 0),
        instances_(space.slots.size()) {
    usable_memory_ = hardware_->profile().memory_bytes * (1.0 - settings.memory_headroom);
    for (size_t level = 0; level < space.slots.size(); ++level) instances_[level].resize(space.slots[level].options.size());
    if (!prices_plans) return;  // compose_ranked: composing needs no executor
    const LoadedPlugin& plugin = catalog.require(settings.executor, PP_KIND_EXECUTOR);
    require_plan_reader(plugin, recipe, "executor");
    ParamValues params = ParamValues::bind(*plugin.metadata, executor_table(), "executor." + settings.executor, recipe.file);
    executor_ = std::make_unique<PluginInstance>(plugin, std::move(params), "executor '" + settings.executor + "'");
    const pp_executor_v1& functions = *plugin.metadata->executor;
    evaluate_ = holds_fields_of(plugin.abi_minor(), functions.struct_size, 1, &AbiMinorSizes::executor) ? functions.evaluate
                                                                                                       : nullptr;
    wants_schedule_ = functions.flags & PP_EXECUTOR_WALKS_SCHEDULE;
  }

  void process(const WorkItem& item, uint64_t item_index) {
    item_ = &item;
    ordinal_ = item_index << 32;
    if (recipe_.training.global_batch % (item.micro_batch * item.data_parallel) != 0) {
      reject(kBatchReason,
             "training.global_batch = " + std::to_string(recipe_.training.global_batch) +
                 " is not divisible by micro_batch x data-parallel size = " + std::to_string(item.micro_batch) + " x " +
                 std::to_string(item.data_parallel),
             item.plans_below[0]);
      return;
    }
    pp_training training = recipe_.training;
    training.micro_batch = item.micro_batch;
    training.recompute = item.recompute;
    if (item.partial_recompute) training.recompute_num_layers = 1;  // leaf() chooses the count
    plan_.reset(training, item.data_parallel);
    load_workload(training);
    descend(0);
  }

  // The plan of `ranked`, composed again on a fresh Plan.
  ComposedPlan compose(const RankedPlan& ranked, bool wants_schedule) {
    pp_training training = recipe_.training;
    training.micro_batch = ranked.micro_batch;
    training.recompute = ranked.recompute;
    training.recompute_num_layers = ranked.recompute_num_layers;
    int64_t data_parallel = 1;
    for (size_t level = 0; level < space_.slots.size(); ++level)
      if (ranked.degrees[level] > 0 && (space_.slots[level].flags & PP_STRATEGY_SPLITS_BATCH))
        data_parallel *= ranked.degrees[level];
    ComposedPlan composed;
    composed.plan = std::make_unique<Plan>(recipe_.model.shape, training, cluster_, data_parallel);
    build_workload(*composed.plan, WorkloadOptions{recipe_.flash_attention, recipe_.fp32_main_grads});
    for (size_t level = 0; level < space_.slots.size(); ++level) {
      if (ranked.degrees[level] == 0) continue;
      PluginInstance& strategy = instance(level, ranked.options[level]);
      apply(strategy, *composed.plan, training, ranked.degrees[level], wants_schedule);
      composed.strategies.push_back({strategy.plugin().name(), ranked.degrees[level], strategy.params().summary(), false,
                                     strategy.params().texts()});
    }
    add_activation_offload(*composed.plan, recipe_.file);
    composed.plan->lay_out_mesh(ranked.mesh_order);
    return composed;
  }

  double usable_memory() const { return usable_memory_; }

  std::vector<RankedPlan> best;  // a heap: the worst kept plan on top
  CandidateMap map;              // with SearchSettings::map_candidates
  std::map<std::string, Rejection> rejected;
  uint64_t valid_plans = 0, priced_plans = 0, layouts = 0, plans_done = 0;
  double smallest_rejected_memory = std::numeric_limits<double>::infinity();

 private:
  const toml::table* executor_table() const {
    return recipe_.executor_table ? recipe_.executor_table->get_as<toml::table>(settings_.executor) : nullptr;
  }

  PluginInstance& instance(size_t level, uint32_t option_index) {
    std::unique_ptr<PluginInstance>& slot = instances_[level][option_index];
    if (!slot) {
      const StrategyOption& option = space_.slots[level].options[option_index];
      ParamValues params = ParamValues::bind(*option.plugin->metadata, option.values, option.key_path, recipe_.file);
      slot = std::make_unique<PluginInstance>(
          *option.plugin, std::move(params),
          "strategy '" + option.plugin->name() + "'" + (option.label.empty() ? "" : " (" + option.label + ")"));
    }
    return *slot;
  }

  // Validates and applies; a refusal of the plan comes back in `refusal_`, not as an exception.
  bool apply(PluginInstance& strategy, Plan& plan, const pp_training& training, int64_t degree, bool wants_schedule) {
    pp_strategy_context context{sizeof(pp_strategy_context), degree, &recipe_.model.shape, &training, &cluster_,
                                wants_schedule ? 1 : 0};
    const pp_strategy_v1& functions = *strategy.metadata().strategy;
    if (functions.validate) {
      strategy.invoke_or_refuse(
          [&](pp_error* error) { return functions.validate(strategy.handle(), &context, error); }, refusal_);
      if (refusal_) return false;
    }
    apply_strategy_or_refuse(strategy, context, plan, refusal_);
    return !refusal_;
  }

  // The unsharded workload depends only on the micro-batch and recompute mode (full of every layer
  // or of some, whatever their count): built once each.
  void load_workload(const pp_training& training) {
    const int key = static_cast<int>(training.recompute) * 2 + (paraplan::recompute_num_layers(training) > 0 ? 1 : 0);
    auto found = std::find_if(workloads_.begin(), workloads_.end(), [&](const CachedWorkload& cached) {
      return cached.micro_batch == training.micro_batch && cached.recompute == key;
    });
    if (found == workloads_.end()) {
      build_workload(plan_, WorkloadOptions{recipe_.flash_attention, recipe_.fp32_main_grads});
      workloads_.push_back({training.micro_batch, key, plan_.op_list(), plan_.op_layer_kinds(), plan_.memory_items(),
                            plan_.memory_layer_kinds()});
      return;
    }
    plan_.set_workload(found->ops, found->op_kinds, found->memory, found->memory_kinds);
  }

  void descend(size_t level) {
    if (level == space_.slots.size()) return leaf();
    const int64_t degree = item_->degrees[level];
    const StrategySlot& slot = space_.slots[level];
    if (degree == 0) {
      chosen_[level] = 0;
      return descend(level + 1);
    }
    const uint64_t count = compatible_options(slot, degree);
    uint64_t tried = 0;
    for (uint32_t index = 0; index < slot.options.size(); ++index) {
      const StrategyOption& option = slot.options[index];
      if (option.absent() || !option.accepts(degree)) continue;
      // The plan as the earlier strategies left it, for this slot's next option.
      if (count > 1 && tried == 0) plan_.save(saved_[level]);
      if (tried > 0) plan_.restore(saved_[level]);
      ++tried;
      chosen_[level] = index;
      PluginInstance& strategy = instance(level, index);
      if (!apply(strategy, plan_, plan_.training(), degree, wants_schedule_)) {
        reject(option.plugin->name(), [&] { return strategy.message_of(refusal_); }, item_->plans_below[level + 1]);
        continue;
      }
      descend(level + 1);
    }
  }

  void leaf() {
    try {
      add_activation_offload(plan_, recipe_.file);
    } catch (const PlanError& failure) {
      reject(kOffloadReason, failure.what(), 1);
      return;
    }
    try {
      check_captured_host_syncs(plan_, recipe_.file);
    } catch (const PlanError& failure) {
      reject(kCudaGraphReason, failure.what(), 1);
      return;
    }
    const pp_plan_view_v1 view = plan_.view();
    if (item_->partial_recompute && !choose_recomputed_layers(view)) return;
    pp_plan_figures memory{};
    run_executor(view, nullptr, 0, &memory);
    ++priced_plans;
    if (!(memory.memory_per_gpu_bytes <= usable_memory_)) {
      smallest_rejected_memory = std::min(smallest_rejected_memory, memory.memory_per_gpu_bytes);
      reject(kMemoryReason, "", 1);
      return;
    }
    uint32_t count = 0;
    try {
      count = lay_out();
    } catch (const PlanError& failure) {
      reject(kMeshReason, failure.what(), 1);
      return;
    }
    figures_.resize(count);
    run_executor(view, strides_.data(), count, figures_.data());
    for (const pp_plan_figures& figures : figures_) check_figures(figures);
    uint32_t winner = 0;
    for (uint32_t i = 1; i < count; ++i)
      if (figures_[i].step_s < figures_[winner].step_s) winner = i;
    ++valid_plans;
    layouts += count;
    keep(figures_[winner], winner, count);
    ++ordinal_;
    ++plans_done;
  }

  // Partial recomputation: the fewest layers per chunk that fit, since each recomputed layer adds
  // to the step and every kept one to memory; between 1 and one less than the fullest chunk's
  // layers (all of them is the plan of full recomputation). A plan whose chunks hold one layer
  // each has no partial form: skipped, not rejected. With no count fitting, the most is left set
  // and the caller rejects the plan for memory.
  bool choose_recomputed_layers(const pp_plan_view_v1& view) {
    const paraplan::PlanView plan(view);
    int64_t fullest = 0;
    for (size_t stage = 0; stage < plan.stages().size(); ++stage)
      for (size_t chunk = 0; chunk < static_cast<size_t>(plan.pipeline().virtual_stages); ++chunk)
        fullest = std::max(fullest, plan.layers_on_chunk(stage, chunk, PP_EVERY_LAYER_KIND));
    if (fullest <= 1) {
      ++ordinal_;
      ++plans_done;
      return false;
    }
    int64_t low = 1, high = fullest - 1;
    while (low < high) {
      const int64_t middle = low + (high - low) / 2;
      plan_.set_recompute_num_layers(middle);
      pp_plan_figures memory{};
      run_executor(view, nullptr, 0, &memory);
      if (memory.memory_per_gpu_bytes <= usable_memory_)
        high = middle;
      else
        low = middle + 1;
    }
    plan_.set_recompute_num_layers(low);
    return true;
  }

  // A plan is ranked by these: an executor that reports a step that is not a positive finite time,
  // or memory that is not a finite amount, has a bug the ranking must not hide.
  void check_figures(const pp_plan_figures& figures) const {
    const bool valid = std::isfinite(figures.step_s) && figures.step_s > 0 && std::isfinite(figures.memory_per_gpu_bytes) &&
                       figures.memory_per_gpu_bytes >= 0 && std::isfinite(figures.tokens_per_s_per_gpu) &&
                       std::isfinite(figures.mfu);
    if (!valid)
      throw InputError(executor_->context() + ": reported a step of " + std::to_string(figures.step_s) + " s and " +
                       std::to_string(figures.memory_per_gpu_bytes) +
                       " bytes per GPU for a plan; search figures must be finite, the step time positive");
  }

  void run_executor(const pp_plan_view_v1& view, const int64_t* strides, uint32_t count, pp_plan_figures* out) {
    if (evaluate_) {
      executor_->invoke(
          [&](pp_error* error) { return evaluate_(executor_->handle(), &view, &binding_, strides, count, out, error); });
      return;
    }
    // An executor without the batched call: run() once per layout (once for memory alone).
    std::vector<pp_mesh_axis> original = plan_.axes();
    for (uint32_t layout = 0; layout < std::max<uint32_t>(count, 1); ++layout) {
      std::vector<pp_mesh_axis> axes = original;
      for (size_t axis = 0; strides && axis < axes.size(); ++axis) axes[axis].stride = strides[layout * axes.size() + axis];
      pp_plan_view_v1 laid = view;
      laid.axes = axes.data();
      FiguresSink sink;
      pp_result_sink_v1 results = sink.sink();
      executor_->invoke([&](pp_error* error) {
        return executor_->metadata().executor->run(executor_->handle(), &laid, &binding_, &results, error);
      });
      out[layout] = sink.figures;
    }
  }

  // Fills strides_ with one stride set per layout; returns how many.
  // The layouts depend only on the plan's axes (names, parents, degrees, in order): the plans
  // a prefix leads to mostly share them, so the last axes' layouts are kept.
  uint32_t lay_out() {
    const std::vector<pp_mesh_axis>& axes = plan_.axes();
    const auto same = [](const pp_mesh_axis& a, const pp_mesh_axis& b) {
      return a.degree == b.degree && std::strncmp(a.name, b.name, sizeof a.name) == 0 &&
             std::strncmp(a.parent, b.parent, sizeof a.parent) == 0;
    };
    if (laid_out_ && std::equal(axes.begin(), axes.end(), laid_out_axes_.begin(), laid_out_axes_.end(), same)) {
      if (laid_out_refusal_) throw PlanError(*laid_out_refusal_);
      return static_cast<uint32_t>(layout_orders_.size());
    }
    laid_out_ = false;
    laid_out_axes_ = axes;
    laid_out_refusal_.reset();
    try {
      const uint32_t count = lay_out_anew();
      laid_out_ = true;
      return count;
    } catch (const PlanError& refusal) {
      laid_out_ = true;
      laid_out_refusal_ = refusal.what();
      throw;
    }
  }

  uint32_t lay_out_anew() {
    const std::vector<pp_mesh_axis>& axes = plan_.axes();
    if (!space_.search_mesh_order || axes.empty()) {
      strides_.resize(axes.size());
      top_level_ = top_level_axes_in_order(axes, recipe_.cluster.mesh_order);
      mesh_strides(axes, top_level_, cluster_.num_gpus, strides_.data());
      layout_orders_.assign(1, top_level_);
      return 1;
    }
    // Axes of degree 1 place nothing; the others are tried in every order, the conventional
    // (Megatron-LM) order first, so it wins ties.
    std::vector<size_t> moving, fixed;
    for (size_t axis : top_level_axes_in_order(axes, default_mesh_order()))
      (axes[axis].degree > 1 ? moving : fixed).push_back(axis);
    std::vector<size_t> permutation(moving.size());
    for (size_t i = 0; i < permutation.size(); ++i) permutation[i] = i;
    layout_orders_.clear();
    uint32_t count = 0;
    std::optional<std::string> refused;  // the first layout the plan's axes cannot take (a region split apart)
    do {
      top_level_.clear();
      for (size_t position : permutation) top_level_.push_back(moving[position]);
      top_level_.insert(top_level_.end(), fixed.begin(), fixed.end());
      strides_.resize((count + 1) * axes.size());
      std::string why;
      if (!try_mesh_strides(axes, top_level_, cluster_.num_gpus, strides_.data() + count * axes.size(),
                            refused ? nullptr : &why)) {
        if (!refused) refused = std::move(why);
        continue;
      }
      layout_orders_.push_back(top_level_);
      ++count;
    } while (std::next_permutation(permutation.begin(), permutation.end()));
    if (count == 0 && refused) throw PlanError(*refused);
    strides_.resize(count * axes.size());
    return count;
  }

  void keep(const pp_plan_figures& figures, uint32_t layout, uint32_t count) {
    if (settings_.map_candidates) map.offer(figures, ordinal_, [&] { return ranked(figures, layout, count); });
    RankOrder order{settings_.objective};
    RankedPlan candidate;
    candidate.figures = figures;
    candidate.index = ordinal_;
    if (best.size() >= settings_.top && !order(candidate, best.front())) return;
    best.push_back(ranked(figures, layout, count));
    std::push_heap(best.begin(), best.end(), order);
    if (best.size() > settings_.top) {
      std::pop_heap(best.begin(), best.end(), order);
      best.pop_back();
    }
  }

  // The plan being priced, with what it takes to build it again.
  RankedPlan ranked(const pp_plan_figures& figures, uint32_t layout, uint32_t count) const {
    RankedPlan candidate;
    candidate.figures = figures;
    candidate.index = ordinal_;
    candidate.degrees = item_->degrees;
    candidate.options = chosen_;
    candidate.axes.resize(item_->degrees.size());
    for (size_t level = 0; level < item_->degrees.size(); ++level)
      if (item_->degrees[level] > 0)
        candidate.axes[level] = plan_.axis_named_otherwise(space_.slots[level].options[chosen_[level]].plugin->name());
    candidate.micro_batch = item_->micro_batch;
    candidate.recompute = item_->recompute;
    candidate.recompute_num_layers = paraplan::recompute_num_layers(plan_.training());
    for (size_t axis : layout_orders_[layout]) candidate.mesh_order.emplace_back(plan_.axes()[axis].name);
    candidate.layouts = count;
    return candidate;
  }

  void reject(const std::string& reason, const std::string& message, uint64_t plans) {
    reject(reason, [&] { return message; }, plans);
  }
  // The message is only made when it becomes the reason's example (the first in enumeration order).
  template <std::invocable Message>
  void reject(const std::string& reason, Message&& message, uint64_t plans) {
    Rejection& entry = rejected[reason];
    entry.plans += plans;
    if (ordinal_ < entry.example_index) {
      entry.example_index = ordinal_;
      entry.example = message();
    }
    ordinal_ += plans;
    plans_done += plans;
  }

  struct CachedWorkload {
    int64_t micro_batch;
    int recompute;
    std::vector<pp_op> ops;
    std::vector<uint32_t> op_kinds;
    std::vector<pp_memory_item> memory;
    std::vector<uint32_t> memory_kinds;
  };

  const Recipe& recipe_;
  const SearchSpace& space_;
  const SearchSettings& settings_;
  std::unique_ptr<HardwareBinding> hardware_;
  pp_hardware_binding_v1 binding_;
  pp_cluster cluster_;
  Plan plan_;
  std::vector<Plan::State> saved_;
  std::vector<uint32_t> chosen_;
  std::vector<std::vector<std::unique_ptr<PluginInstance>>> instances_;
  std::unique_ptr<PluginInstance> executor_;
  decltype(pp_executor_v1::evaluate) evaluate_ = nullptr;
  bool wants_schedule_ = false;
  double usable_memory_ = 0;
  std::vector<CachedWorkload> workloads_;
  const WorkItem* item_ = nullptr;
  uint64_t ordinal_ = 0;
  Refusal refusal_;  // the last strategy call's refusal of the plan, kept without throwing
  std::vector<int64_t> strides_;
  std::vector<size_t> top_level_;
  std::vector<std::vector<size_t>> layout_orders_;
  // What lay_out() last computed from: its axes, and the refusal when they had no layout.
  bool laid_out_ = false;
  std::vector<pp_mesh_axis> laid_out_axes_;
  std::optional<std::string> laid_out_refusal_;
  std::vector<pp_plan_figures> figures_;
};

int64_t checked_gpus_per_node(const Recipe& recipe, const HardwareBinding& hardware) {
  const int64_t per_node = gpus_per_node(recipe, hardware);
  require_whole_nodes(recipe, per_node);
  return per_node;
}

}  // namespace

const char* recompute_name(pp_recompute recompute) {
  switch (recompute) {
    case PP_RECOMPUTE_SELECTIVE: return "selective";
    case PP_RECOMPUTE_FULL: return "full";
    default: return "none";
  }
}

std::string recompute_text(const RankedPlan& plan) {
  if (plan.recompute != PP_RECOMPUTE_FULL || plan.recompute_num_layers == 0) return recompute_name(plan.recompute);
  return "full, first " + std::to_string(plan.recompute_num_layers) + " layer" + (plan.recompute_num_layers == 1 ? "" : "s") +
         " of each chunk";
}

std::string describe_strategies(const SearchSpace& space, const RankedPlan& plan) {
  std::string text;
  for (size_t level = 0; level < space.slots.size(); ++level) {
    if (plan.degrees[level] == 0) continue;
    const StrategyOption& option = space.slots[level].options[plan.options[level]];
    // A degree named by its axis where the strategy names it otherwise: "cp=16 (sp mode=ring)".
    const std::string axis = level < plan.axes.size() ? plan.axes[level] : "";
    const std::string label = axis.empty() ? option.label : option.plugin->name() + (option.label.empty() ? "" : " " + option.label);
    text += (text.empty() ? "" : " ") + (axis.empty() ? option.plugin->name() : axis) + "=" + std::to_string(plan.degrees[level]);
    if (!label.empty()) text += " (" + label + ")";
  }
  return text;
}

std::string ranked_plan_text(const SearchSpace& space, const RankedPlan& plan) {
  return describe_strategies(space, plan) + "; micro_batch " + std::to_string(plan.micro_batch) + ", recompute " +
         recompute_text(plan) + ", mesh " + joined(plan.mesh_order, "-");
}

SearchResult run_search(const Recipe& recipe, const PluginCatalog& catalog, const SearchSettings& settings) {
  const auto start = std::chrono::steady_clock::now();
  SearchResult result;
  result.space = build_search_space(recipe, catalog);
  // An executor from before 1.6 cannot tell the recomputed layers from the kept ones (nor the
  // offloaded: require_plan_reader refuses those recipes outright).
  if (!reads_layer_stack(catalog.require(settings.executor, PP_KIND_EXECUTOR))) result.space.partial_recompute = false;
  const std::unique_ptr<HardwareBinding> hardware = open_hardware(recipe, catalog);
  const int64_t per_node = checked_gpus_per_node(recipe, *hardware);
  result.hardware_profile = hardware->profile();
  result.gpus_per_node = per_node;
  result.skipped = drop_inapplicable_strategies(result.space, recipe, per_node);
  const std::vector<WorkItem> items = work_items(result.space, recipe.cluster.num_gpus);
  uint64_t total = 0;
  for (const WorkItem& item : items) total += item.plans_below[0];

  unsigned threads = settings.threads ? settings.threads : std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<size_t>(threads, std::max<size_t>(items.size(), 1)));
  result.threads = threads;
  std::vector<std::unique_ptr<Worker>> workers;
  for (unsigned i = 0; i < threads; ++i)
    workers.push_back(std::make_unique<Worker>(recipe, catalog, result.space, settings, per_node));

  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::atomic<uint64_t> done{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto work = [&](Worker& worker) {
    try {
      for (size_t index = next++; index < items.size() && !failed; index = next++) {
        uint64_t before = worker.plans_done;
        worker.process(items[index], index);
        done += worker.plans_done - before;
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      failed = true;
    }
  };
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < threads; ++i) pool.emplace_back(work, std::ref(*workers[i]));
  if (settings.progress) {
    // The calling thread reports progress while it works its share in small pieces.
    std::thread reporter;
    std::atomic<bool> finished{false};
    reporter = std::thread([&] {
      while (!finished) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        if (!finished) settings.progress(done, total);
      }
    });
    work(*workers[0]);
    for (std::thread& thread : pool) thread.join();
    finished = true;
    reporter.join();
    settings.progress(done, total);
  } else {
    work(*workers[0]);
    for (std::thread& thread : pool) thread.join();
  }
  if (failure) std::rethrow_exception(failure);

  RankOrder order{settings.objective};
  double smallest = std::numeric_limits<double>::infinity();
  for (const std::unique_ptr<Worker>& worker : workers) {
    result.top.insert(result.top.end(), worker->best.begin(), worker->best.end());
    if (worker != workers.front()) workers.front()->map.merge(worker->map);
    result.valid_plans += worker->valid_plans;
    result.priced_plans += worker->priced_plans;
    result.layouts += worker->layouts;
    smallest = std::min(smallest, worker->smallest_rejected_memory);
    for (const auto& [reason, rejection] : worker->rejected) {
      Rejection& merged = result.rejected[reason];
      merged.plans += rejection.plans;
      if (rejection.example_index < merged.example_index) {
        merged.example_index = rejection.example_index;
        merged.example = rejection.example;
      }
    }
  }
  std::sort(result.top.begin(), result.top.end(), order);
  if (result.top.size() > settings.top) result.top.resize(settings.top);
  result.front = workers.front()->map.front();
  result.cells = workers.front()->map.cells();
  result.plans = total;
  result.smallest_rejected_memory_bytes = std::isinf(smallest) ? 0 : smallest;
  result.usable_memory_bytes = workers.front()->usable_memory();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

ComposedPlan compose_ranked(const Recipe& recipe, const PluginCatalog& catalog, const SearchResult& result,
                            const RankedPlan& plan, bool wants_schedule) {
  SearchSettings settings;
  Worker worker(recipe, catalog, result.space, settings, checked_gpus_per_node(recipe, *open_hardware(recipe, catalog)),
                /*prices_plans=*/false);
  return worker.compose(plan, wants_schedule);
}

}  // namespace paraplan::host
