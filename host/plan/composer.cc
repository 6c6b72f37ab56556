#include "host/plan/composer.h"

#include <algorithm>

#include "host/core/checked_math.h"
#include "host/core/edit_distance.h"
#include "host/core/errors.h"
#include "host/plan/activation_offload.h"
#include "host/plan/captured_sync_check.h"
#include "host/plan/strategy_application.h"
#include "host/plan/workload_builder.h"
#include "host/recipe/source_location.h"

namespace paraplan::host {
namespace {

struct PendingStrategy {
  std::unique_ptr<PluginInstance> instance;
  std::optional<int64_t> degree;
  uint32_t flags = 0;
  int32_t apply_order = 0;
  bool added_by_default = false;
  std::string name;
};

std::string entry_context(const Recipe& recipe, const StrategyEntry& entry) {
  return location_of(recipe.file, entry.table) + ": " + entry.key_path + " '" + entry.name + "'";
}

std::vector<PendingStrategy> bind_strategies(const Recipe& recipe, const PluginCatalog& catalog) {
  std::vector<PendingStrategy> pending;
  for (const StrategyEntry& entry : recipe.strategies) {
    const LoadedPlugin* plugin = nullptr;
    try {
      plugin = &catalog.require(entry.name, PP_KIND_STRATEGY);
    } catch (const InputError& failure) {
      throw InputError(location_of(recipe.file, entry.table->get("name")) + ": " + entry.key_path +
                       ".name: " + failure.what());
    }
    ParamValues params = ParamValues::bind(*plugin->metadata, entry.table, entry.key_path, recipe.file, {"name", "degree"});
    PendingStrategy strategy;
    strategy.name = entry.name;
    strategy.degree = entry.degree;
    strategy.flags = plugin->metadata->strategy->flags;
    strategy.apply_order = plugin->metadata->strategy->apply_order;
    strategy.instance = std::make_unique<PluginInstance>(*plugin, std::move(params), entry_context(recipe, entry));
    pending.push_back(std::move(strategy));
  }
  return pending;
}

const LoadedPlugin* default_data_parallel(const PluginCatalog& catalog) {
  for (const LoadedPlugin* plugin : catalog.of_kind(PP_KIND_STRATEGY))
    if (plugin->metadata->strategy->flags & PP_STRATEGY_DEFAULT_DATA_PARALLEL) return plugin;
  return nullptr;
}

void resolve_degrees(const Recipe& recipe, const PluginCatalog& catalog, std::vector<PendingStrategy>& strategies) {
  const int64_t gpus = recipe.cluster.num_gpus;
  // No degree may exceed the GPU count: ranks with different roles are at most all the GPUs.
  for (const PendingStrategy& strategy : strategies)
    if (strategy.degree && *strategy.degree > gpus)
      throw PlanError(strategy.instance->context() + ": degree " + std::to_string(*strategy.degree) +
                      " exceeds cluster.num_gpus = " + std::to_string(gpus));
  int64_t product = 1;
  PendingStrategy* remainder = nullptr;
  for (PendingStrategy& strategy : strategies) {
    if (!strategy.degree && (strategy.flags & PP_STRATEGY_TAKES_REMAINDER)) {
      if (remainder)
        throw PlanError(recipe.file + ": strategies '" + remainder->name + "' and '" + strategy.name +
                        "' both omit their degree; only one may take the remaining GPUs");
      remainder = &strategy;
      continue;
    }
    if (!strategy.degree) strategy.degree = 1;
    if (strategy.flags & PP_STRATEGY_SUBDIVIDES_DATA) continue;
    // Each degree is at most the GPU count, so a product past it cannot divide it either.
    const std::optional<int64_t> next = checked_product(product, *strategy.degree);
    if (!next || *next > gpus)
      throw PlanError(recipe.file + ": the strategy degrees multiply to more than cluster.num_gpus = " +
                      std::to_string(gpus) + " (at '" + strategy.name + "' = " + std::to_string(*strategy.degree) + ")");
    product = *next;
  }
  std::string degrees;
  for (const PendingStrategy& strategy : strategies)
    if (strategy.degree && !(strategy.flags & PP_STRATEGY_SUBDIVIDES_DATA))
      degrees += (degrees.empty() ? "" : " x ") + strategy.name + "=" + std::to_string(*strategy.degree);
  if (gpus % product != 0)
    throw PlanError(recipe.file + ": strategy degrees " + degrees + " = " + std::to_string(product) +
                    " do not divide cluster.num_gpus = " + std::to_string(gpus));
  const int64_t left = gpus / product;
  if (remainder) {
    remainder->degree = left;
    return;
  }
  bool has_remainder_taker = std::any_of(strategies.begin(), strategies.end(), [](const PendingStrategy& strategy) {
    return strategy.flags & PP_STRATEGY_TAKES_REMAINDER;
  });
  if (has_remainder_taker) {
    if (left != 1)
      throw PlanError(recipe.file + ": strategy degrees " + degrees + " = " + std::to_string(product) +
                      " but cluster.num_gpus = " + std::to_string(gpus) +
                      "; make them match or omit the data-parallel degree");
    return;
  }
  const LoadedPlugin* fallback = default_data_parallel(catalog);
  if (!fallback) {
    if (left == 1) return;
    throw PlanError(recipe.file + ": " + std::to_string(left) +
                    " GPUs are left for data parallelism, but no loaded strategy plugin provides it; add one to the recipe");
  }
  PendingStrategy strategy;
  strategy.name = fallback->name();
  strategy.degree = left;
  strategy.flags = fallback->metadata->strategy->flags;
  strategy.apply_order = fallback->metadata->strategy->apply_order;
  strategy.added_by_default = true;
  strategy.instance = std::make_unique<PluginInstance>(
      *fallback, ParamValues::bind(*fallback->metadata, nullptr, strategy.name, recipe.file),
      recipe.file + ": default data-parallel strategy '" + strategy.name + "'");
  strategies.push_back(std::move(strategy));
}

// A mesh_order entry that names no axis is fine when it is a conventional axis this plan lacks
// (no context parallelism, say), but one that looks like a typo of an axis that exists would
// silently change the layout.
void check_mesh_order(const Recipe& recipe, const Plan& plan) {
  std::vector<std::string> axes;
  for (const pp_mesh_axis& axis : plan.axes()) axes.emplace_back(axis.name);
  const std::vector<std::string> conventional = default_mesh_order();
  for (const std::string& name : recipe.cluster.mesh_order) {
    if (std::find(axes.begin(), axes.end(), name) != axes.end()) continue;
    if (std::find(conventional.begin(), conventional.end(), name) != conventional.end()) continue;
    std::string suggestion = closest_match(name, axes);
    bool listed = std::find(recipe.cluster.mesh_order.begin(), recipe.cluster.mesh_order.end(), suggestion) !=
                  recipe.cluster.mesh_order.end();
    if (!suggestion.empty() && !listed)
      throw InputError(location_of(recipe.file, recipe.document->at_path("cluster.mesh_order").node()) +
                       ": cluster.mesh_order: '" + name + "' names no mesh axis (did you mean '" + suggestion + "'?)");
  }
}

// The product of the batch-splitting degrees; PlanError when it leaves int64 (it exceeds the GPU
// count long before: each degree is at most that count).
int64_t data_parallel_size(const Recipe& recipe, const std::vector<PendingStrategy>& strategies) {
  int64_t size = 1;
  for (const PendingStrategy& strategy : strategies) {
    if (!(strategy.flags & PP_STRATEGY_SPLITS_BATCH)) continue;
    const std::optional<int64_t> next = checked_product(size, *strategy.degree);
    if (!next)
      throw PlanError(recipe.file + ": the data-parallel degrees multiply past 2^63 (at '" + strategy.name + "')");
    size = *next;
  }
  return size;
}

}  // namespace

void require_whole_nodes(const Recipe& recipe, int64_t gpus_per_node) {
  const int64_t gpus = recipe.cluster.num_gpus;
  if (gpus > gpus_per_node && gpus % gpus_per_node != 0)
    throw PlanError(recipe.file + ": cluster.num_gpus = " + std::to_string(gpus) +
                    " is not a whole number of nodes of gpus_per_node = " + std::to_string(gpus_per_node));
}

ComposedPlan compose_plan(const Recipe& recipe, const PluginCatalog& catalog, int64_t gpus_per_node,
                          bool wants_schedule) {
  require_whole_nodes(recipe, gpus_per_node);
  std::vector<PendingStrategy> strategies = bind_strategies(recipe, catalog);
  resolve_degrees(recipe, catalog, strategies);
  std::stable_sort(strategies.begin(), strategies.end(), [](const PendingStrategy& a, const PendingStrategy& b) {
    return a.apply_order < b.apply_order;
  });

  const pp_training& training = recipe.training;
  const int64_t data_parallel = data_parallel_size(recipe, strategies);
  const std::optional<int64_t> sequences_per_micro_step = checked_product(training.micro_batch, data_parallel);
  if (!sequences_per_micro_step || *sequences_per_micro_step > training.global_batch ||
      training.global_batch % *sequences_per_micro_step != 0)
    throw PlanError(recipe.file + ": training.global_batch = " + std::to_string(training.global_batch) +
                    " is not divisible by micro_batch x data-parallel size = " + std::to_string(training.micro_batch) +
                    " x " + std::to_string(data_parallel));

  pp_cluster cluster{sizeof(pp_cluster), recipe.cluster.num_gpus, gpus_per_node};
  ComposedPlan composed;
  composed.plan = std::make_unique<Plan>(recipe.model.shape, training, cluster, data_parallel);
  build_workload(*composed.plan, WorkloadOptions{recipe.flash_attention, recipe.fp32_main_grads});

  auto context_of = [&](const PendingStrategy& strategy) {
    return pp_strategy_context{sizeof(pp_strategy_context), *strategy.degree, &recipe.model.shape, &training, &cluster,
                               wants_schedule ? 1 : 0};
  };
  // Every strategy's own constraints first, so an impossible recipe is told before any plan work.
  for (PendingStrategy& strategy : strategies) {
    const pp_strategy_context context = context_of(strategy);
    const pp_strategy_v1& functions = *strategy.instance->metadata().strategy;
    if (functions.validate)
      strategy.instance->invoke(
          [&](pp_error* error) { return functions.validate(strategy.instance->handle(), &context, error); });
  }
  for (PendingStrategy& strategy : strategies) {
    apply_strategy(*strategy.instance, context_of(strategy), *composed.plan);
    composed.strategies.push_back(
        {strategy.name, *strategy.degree, strategy.instance->params().summary(), strategy.added_by_default,
         strategy.instance->params().texts()});
  }
  add_activation_offload(*composed.plan, recipe.file);
  check_captured_host_syncs(*composed.plan, recipe.file);
  composed.plan->lay_out_mesh(recipe.cluster.mesh_order);
  check_mesh_order(recipe, *composed.plan);
  return composed;
}

}  // namespace paraplan::host
