#include "host/plan/strategy_application.h"

#include <algorithm>

#include "host/core/errors.h"

namespace paraplan::host {

void apply_strategy(const PluginInstance& strategy, const pp_strategy_context& context, Plan& plan) {
  Refusal refusal;
  apply_strategy_or_refuse(strategy, context, plan, refusal);
  if (refusal) throw_plugin_failure(refusal.status, refusal.buffer.text, strategy.context());
}

void apply_strategy_or_refuse(const PluginInstance& strategy, const pp_strategy_context& context, Plan& plan,
                              Refusal& refusal) {
  const pp_strategy_v1& functions = *strategy.metadata().strategy;
  plan.clear_refusal();
  // A failure or refusal that the host's own refusal of an edit caused is the host's error.
  auto refused_edit = [&](const std::string& failure) {
    return InputError(failure + " (the host refused a plan edit: " + plan.refusal() + ")");
  };
  try {
    strategy.invoke_or_refuse(
        [&](pp_error* error) { return functions.apply(strategy.handle(), &context, &plan.api(), error); }, refusal);
  } catch (const HostError& failure) {
    if (plan.refusal().empty()) throw;
    throw refused_edit(failure.what());
  }
  if (refusal) {
    if (!plan.refusal().empty()) throw refused_edit(strategy.message_of(refusal));
    return;
  }
  if (!plan.refusal().empty())
    throw InputError(strategy.context() + ": the host refused a plan edit: " + plan.refusal());
  const std::string& name = strategy.plugin().name();
  if (context.degree > 1 &&
      std::none_of(plan.axes().begin(), plan.axes().end(), [&](const pp_mesh_axis& axis) { return name == axis.owner; }))
    throw InputError(strategy.context() + ": has degree " + std::to_string(context.degree) +
                     " but the plugin created no mesh axis for it");
}

}  // namespace paraplan::host
