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

// The same, but the strategy's refusal of the plan (a constraint it does not meet) comes back in
// `refusal` rather than as a PlanError: the search's rejection path, where most plans end.
// Every other failure throws as apply_strategy does.
void apply_strategy_or_refuse(const PluginInstance& strategy, const pp_strategy_context& context, Plan& plan,
                              Refusal& refusal);

}  // namespace paraplan::host
