#include "host/search/inapplicable_strategies.h"

#include <algorithm>

#include "host/core/divisors.h"
#include "host/core/errors.h"
#include "host/plugin/plugin_instance.h"
#include "host/recipe/param_values.h"

namespace paraplan::host {
namespace {

// Whether validate() accepts the option at any degree it may take under any training the search
// tries; `reason` gets the first refusal.
bool applicable(const StrategyOption& option, const SearchSpace& space, const Recipe& recipe, int64_t gpus_per_node,
                std::string& reason) {
  const pp_strategy_v1* functions = option.plugin->metadata->strategy;
  if (!functions || !functions->validate) return true;
  PluginInstance instance(*option.plugin,
                          ParamValues::bind(*option.plugin->metadata, option.values, option.key_path, recipe.file),
                          "strategy '" + option.plugin->name() + "'" + (option.label.empty() ? "" : " (" + option.label + ")"));
  const pp_cluster cluster{sizeof(pp_cluster), recipe.cluster.num_gpus, gpus_per_node};
  for (int64_t degree : divisors(recipe.cluster.num_gpus)) {
    if (!option.accepts(degree)) continue;
    for (int64_t micro_batch : space.micro_batches)
      for (pp_recompute recompute : space.recomputes) {
        pp_training training = recipe.training;
        training.micro_batch = micro_batch;
        training.recompute = recompute;
        const pp_strategy_context context{sizeof(pp_strategy_context), degree, &recipe.model.shape, &training, &cluster, 0};
        try {
          instance.invoke([&](pp_error* error) { return functions->validate(instance.handle(), &context, error); });
          return true;
        } catch (const PlanError& refusal) {
          if (reason.empty()) reason = refusal.what();
        }
      }
  }
  return false;
}

}  // namespace

std::vector<SkippedStrategy> drop_inapplicable_strategies(SearchSpace& space, const Recipe& recipe, int64_t gpus_per_node) {
  std::vector<SkippedStrategy> skipped;
  for (StrategySlot& slot : space.slots) {
    const bool optional = std::any_of(slot.options.begin(), slot.options.end(),
                                      [](const StrategyOption& option) { return option.absent(); });
    if (!optional || (slot.flags & PP_STRATEGY_TAKES_REMAINDER)) continue;
    std::string reason;
    const bool any = std::any_of(slot.options.begin(), slot.options.end(), [&](const StrategyOption& option) {
      return !option.absent() && applicable(option, space, recipe, gpus_per_node, reason);
    });
    if (any) continue;
    std::erase_if(slot.options, [](const StrategyOption& option) { return !option.absent(); });
    skipped.push_back({slot.name, reason});
  }
  return skipped;
}

}  // namespace paraplan::host
