// paraplan/host/plan/strategy_application.h: one strategy applied to a plan, checked.
//
// The plugin's apply through the plan-editing services (its validate ran before); an edit the host
// refused (plan.h) fails the strategy with the host's reason even when the plugin carried on; a
// degree above 1 must have produced a mesh axis the strategy owns. Used by the composer and by
// the search, which apply strategies the same way.
#pragma once

#include "host/plan/plan.h"
#include "host/plugin/plugin_instance.h"

namespace paraplan::host {

void apply_strategy(const PluginInstance& strategy, const pp_strategy_context& context, Plan& plan);

}  // namespace paraplan::host
