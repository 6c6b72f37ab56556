// paraplan/host/plan/composer.h: recipe + plugins -> a finished training plan.
//
//   1. bind each [[strategy]] table to its plugin's schema (unknown keys, types, ranges);
//   2. resolve degrees: explicit ones multiply to a divisor of the GPU count, the one strategy
//      flagged TAKES_REMAINDER gets the quotient, and when the recipe has none the loaded
//      DEFAULT_DATA_PARALLEL strategy is added for it;
//   3. fix the data-parallel size and micro-batch count, build the unsharded workload;
//   4. validate, then apply the strategies in ascending apply_order;
//   5. lay the mesh axes onto ranks in the recipe's mesh order.
// Everything strategy-specific happens inside the plugins.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "host/plan/plan.h"
#include "host/plugin/plugin_catalog.h"
#include "host/plugin/plugin_instance.h"
#include "host/recipe/recipe.h"

namespace paraplan::host {

struct AppliedStrategy {
  std::string name;
  int64_t degree = 1;
  std::string parameters;  // ParamValues::summary()
  bool added_by_default = false;
  std::vector<std::pair<std::string, std::string>> settings;  // ParamValues::texts(), for exporters
};

struct ComposedPlan {
  std::unique_ptr<Plan> plan;
  std::vector<AppliedStrategy> strategies;  // in application order
};

// Throws PlanError unless the cluster is one partial node or a whole number of nodes.
void require_whole_nodes(const Recipe& recipe, int64_t gpus_per_node);

// `wants_schedule`: whether the executor that will run the plan walks its schedule steps
// (PP_EXECUTOR_WALKS_SCHEDULE); strategies may skip listing them otherwise.
ComposedPlan compose_plan(const Recipe& recipe, const PluginCatalog& catalog, int64_t gpus_per_node,
                          bool wants_schedule = true);

}  // namespace paraplan::host
