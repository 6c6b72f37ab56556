#include "host/plan/execution.h"

#include <spdlog/spdlog.h>

#include "host/core/errors.h"
#include "host/plan/plugin_tables.h"
#include "host/recipe/source_location.h"
#include "paraplan/sdk.hpp"

namespace paraplan::host {

void describe_plan(ResultTree& results, const Recipe& recipe, const ComposedPlan& composed,
                   const HardwareBinding& hardware) {
  const Plan& plan = *composed.plan;
  results.set("plan.recipe", recipe.file);
  results.set("plan.model", recipe.model.name);
  // A layered model lists its kinds ("mla+dense x3, mla+moe x58, mtp:mla+moe x1"); a uniform
  // transformer's report stays as it always was.
  if (!paraplan::beyond_uniform_transformer(plan.model()).empty()) {
    std::string kinds;
    for (const pp_layer_kind& kind : plan.layer_stack().kinds())
      kinds += (kinds.empty() ? "" : ", ") + std::string(kind.name) + " x" + std::to_string(kind.count);
    results.set("plan.layer_kinds", kinds);
  }
  results.set("plan.hardware", std::string(hardware.profile().name));
  results.set("plan.num_gpus", static_cast<double>(plan.cluster().num_gpus));
  results.set("plan.gpus_per_node", static_cast<double>(plan.cluster().gpus_per_node));
  for (const pp_mesh_axis& axis : plan.axes()) results.set(std::string("plan.mesh.") + axis.name, static_cast<double>(axis.degree));
  results.set("plan.micro_batch", static_cast<double>(plan.training().micro_batch));
  results.set("plan.global_batch", static_cast<double>(plan.training().global_batch));
  results.set("plan.num_micro_batches", static_cast<double>(plan.pipeline().micro_batches));
  results.set("plan.data_parallel_size", static_cast<double>(plan.data_parallel_size()));
  for (const AppliedStrategy& strategy : composed.strategies) {
    std::string text = "degree=" + std::to_string(strategy.degree);
    if (const std::string axis = plan.axis_named_otherwise(strategy.name); !axis.empty()) text += " axis=" + axis;
    if (!strategy.parameters.empty()) text += " " + strategy.parameters;
    if (strategy.added_by_default) text += " (added: no data-parallel strategy in the recipe)";
    results.set("plan.strategies." + strategy.name, text);
  }
}

bool reads_layer_stack(const LoadedPlugin& plugin) {
  constexpr uint32_t kLayerStackMinor = 6;
  return plugin.abi_minor() >= kLayerStackMinor;
}

void require_plan_reader(const LoadedPlugin& plugin, const Recipe& recipe, const std::string& role) {
  const std::string before = role + " '" + plugin.name() + "' was built against SDK ABI 1." +
                             std::to_string(plugin.abi_minor()) + ", before ";
  constexpr uint32_t kTritonKernelMinor = 7;
  if (plugin.abi_minor() < kTritonKernelMinor && paraplan::attention_kernel(recipe.training) == PP_ATTENTION_KERNEL_TRITON)
    throw PlanError(before + "attention_kernel \"triton\" (1.7), and would price it as the GPU's tuned kernel; "
                    "rebuild it against the 1.7 headers");
  constexpr uint32_t kTorchtitanMinor = 8;  // torchtitan's op policy and eager kernels
  if (plugin.abi_minor() < kTorchtitanMinor) {
    if (recipe.training.recompute == PP_RECOMPUTE_SELECTIVE &&
        (paraplan::recomputed_modules(recipe.training) & PP_RECOMPUTE_TORCHTITAN_OP) != 0)
      throw PlanError(before + "recompute_modules \"torchtitan_op\" (1.8), and would read it as Megatron-LM's "
                      "modules; rebuild it against the 1.8 headers");
    if (paraplan::elementwise_kernels(recipe.training) == PP_ELEMENTWISE_EAGER)
      throw PlanError(before + "elementwise_kernels \"eager\" (1.8), and would take the plan for fused kernels; "
                      "rebuild it against the 1.8 headers");
    if (paraplan::fp8_attention(recipe.training))
      throw PlanError(before + "fp8_attention (1.8), and would price FP8 attention at the full FP8 peak or not "
                      "know it; rebuild it against the 1.8 headers");
    if (paraplan::moe_fused_mlp(recipe.training))
      throw PlanError(before + "moe_fused_mlp (1.8), and would not know the experts' MLP is fused; rebuild it "
                      "against the 1.8 headers");
  }
  if (reads_layer_stack(plugin)) return;
  const std::string beyond = paraplan::beyond_uniform_transformer(recipe.model.shape);
  if (!beyond.empty())
    throw PlanError(before + "the layer stack (1.6), and would count this model (" + beyond +
                    ") as uniform layers; rebuild it against the 1.6 headers");
  const pp_precision precision = recipe.training.precision;
  if (precision == PP_PRECISION_MXFP8 || precision == PP_PRECISION_NVFP4)
    throw PlanError(before + "the block-scaled precisions (1.6), and cannot price precision '" +
                    std::string(paraplan::precision_name(precision)) + "'; rebuild it against the 1.6 headers");
  if (paraplan::recompute_num_layers(recipe.training) > 0)
    throw PlanError(before + "partial recomputation (1.6), and would recompute every layer while counting the "
                    "activations of both; drop training.recompute_num_layers or rebuild it against the 1.6 headers");
  if (paraplan::cpu_offloading_num_layers(recipe.training) > 0)
    throw PlanError(before + "activation offloading (1.6), and would copy and hold every layer's activations; drop "
                    "training.cpu_offloading_num_layers or rebuild it against the 1.6 headers");
}

ResultTree run_executor(const std::string& executor, const Recipe& recipe, const PluginCatalog& catalog,
                        const ComposedPlan& composed, const HardwareBinding& hardware) {
  const LoadedPlugin& plugin = catalog.require(executor, PP_KIND_EXECUTOR);
  require_plan_reader(plugin, recipe, "executor");
  const toml::table* table =
      checked_plugin_tables(recipe, recipe.executor_table, "executor", catalog, PP_KIND_EXECUTOR, "executor", executor);
  ParamValues params = ParamValues::bind(*plugin.metadata, table, "executor." + executor, recipe.file);
  PluginInstance instance(plugin, std::move(params),
                          location_of(recipe.file, table ? table : recipe.executor_table) + ": executor '" + executor + "'");
  ResultTree results;
  describe_plan(results, recipe, composed, hardware);
  results.reserve_section("plan");  // the host's description of the plan
  results.reserve_section("warnings");
  results.reserve_section("uncertainty");  // the host's error bars (uncertainty_report.h)
  pp_result_sink_v1 sink = results.sink("executor '" + executor + "'");
  pp_plan_view_v1 view = composed.plan->view();
  pp_hardware_binding_v1 binding = hardware.binding();
  instance.invoke([&](pp_error* error) {
    return plugin.metadata->executor->run(instance.handle(), &view, &binding, &sink, error);
  });
  for (const std::string& warning : results.warnings()) spdlog::warn("{}", warning);
  // Every strategy of the plan gets the per-strategy keys the executor reports, 0 when it moved
  // nothing (a degree of 1, or sequence parallelism whose collectives belong to tp), so tools can
  // rely on them. A family the executor does not report stays absent: a 0 there would be a claim.
  for (const std::string family : {"comm.", "time.exposed_comm_s."}) {
    if (!results.has_prefix(family)) continue;
    for (const AppliedStrategy& strategy : composed.strategies) {
      const std::string key = family == "comm." ? "comm." + strategy.name + ".bytes_per_gpu_per_step"
                                                : family + strategy.name;
      if (!results.find(key)) results.set(key, 0.0);
    }
  }
  return results;
}

}  // namespace paraplan::host
