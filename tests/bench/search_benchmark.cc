// `paraplan search` speed: plan evaluations per second per core through the real plugins, loaded
// the real way, and whole searches end to end (docs/performance.md).
//
//   BM_Search/<recipe>/threads:N   the whole search of a shipped recipes/search recipe (two dense,
//                                  DeepSeek-V3 with expert parallelism searched): space,
//                                  enumeration, every strategy's transform through the C ABI,
//                                  memory pruning, batched layout timing, ranking
//   BM_PlanFigures/<recipe>/<k>    the analytic executor's batched evaluate() alone on one composed
//                                  plan: 0 layouts (the memory check) and k = all layouts
// Counters: plans_per_s (candidate plans, rejected ones included), priced_per_s (plans that
// reached the executor: its memory check, then timed or over memory) and layouts_per_s (plan,
// layout pairs timed) are per second of wall time; divide by the threads for per-core figures
// (the benchmark uses real time for multi-threaded searches).
// Run: build/default/bin/paraplan_search_benchmark [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "host/plan/composer.h"
#include "host/plan/hardware_binding.h"
#include "host/plugin/plugin_catalog.h"
#include "host/recipe/recipe_reader.h"
#include "host/search/search_engine.h"

namespace paraplan::host {
namespace {

const PluginCatalog& catalog() {
  static const PluginCatalog plugins = PluginCatalog::scan({PARAPLAN_BUNDLED_PLUGIN_DIR});
  return plugins;
}

void whole_search(benchmark::State& state, const std::filesystem::path& file, unsigned threads) {
  RecipeReaderOptions options;
  options.search = true;
  std::unique_ptr<Recipe> recipe = read_recipe(file, options);
  SearchSettings settings;
  settings.threads = threads;
  uint64_t plans = 0, priced = 0, layouts = 0;
  for (auto _ : state) {
    SearchResult result = run_search(*recipe, catalog(), settings);
    plans += result.plans;
    priced += result.priced_plans;
    layouts += result.layouts;
    benchmark::DoNotOptimize(result);
  }
  state.counters["plans_per_s"] = benchmark::Counter(static_cast<double>(plans), benchmark::Counter::kIsRate);
  state.counters["priced_per_s"] = benchmark::Counter(static_cast<double>(priced), benchmark::Counter::kIsRate);
  state.counters["layouts_per_s"] = benchmark::Counter(static_cast<double>(layouts), benchmark::Counter::kIsRate);
}

// The batched figures of one composed plan under every order of its non-trivial top-level axes.
void plan_figures(benchmark::State& state, const std::filesystem::path& file, bool memory_only) {
  std::unique_ptr<Recipe> recipe = read_recipe(file);
  std::unique_ptr<HardwareBinding> hardware = open_hardware(*recipe, catalog());
  ComposedPlan composed = compose_plan(*recipe, catalog(), gpus_per_node(*recipe, *hardware), false);
  const Plan& plan = *composed.plan;
  std::vector<size_t> moving, fixed;
  for (size_t i = 0; i < plan.axes().size(); ++i)
    if (plan.axes()[i].parent[0] == '\0') (plan.axes()[i].degree > 1 ? moving : fixed).push_back(i);
  std::vector<int64_t> strides;
  uint32_t layouts = 0;
  do {
    std::vector<size_t> order = moving;
    order.insert(order.end(), fixed.begin(), fixed.end());
    strides.resize((layouts + 1) * plan.axes().size());
    mesh_strides(plan.axes(), order, plan.cluster().num_gpus, strides.data() + layouts * plan.axes().size());
    ++layouts;
  } while (std::next_permutation(moving.begin(), moving.end()));
  if (memory_only) layouts = 0;

  const LoadedPlugin& analytic = catalog().require("analytic", PP_KIND_EXECUTOR);
  PluginInstance executor(analytic, ParamValues::bind(*analytic.metadata, nullptr, "executor", recipe->file), "analytic");
  const pp_plan_view_v1 view = plan.view();
  const pp_hardware_binding_v1 binding = hardware->binding();
  std::vector<pp_plan_figures> figures(std::max<uint32_t>(layouts, 1));
  for (auto _ : state) {
    executor.invoke([&](pp_error* error) {
      return analytic.metadata->executor->evaluate(executor.handle(), &view, &binding, strides.data(), layouts,
                                                   figures.data(), error);
    });
    benchmark::DoNotOptimize(figures.data());
  }
  state.counters["layouts"] = layouts;
  state.counters["evaluations_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * std::max<uint32_t>(layouts, 1), benchmark::Counter::kIsRate);
}

const bool registered = [] {
  for (const char* name : {"gpt3-175b-512xa100", "llama3-405b-16384xh100", "deepseek-v3-2048xh800"}) {
    std::filesystem::path file = std::filesystem::path(PARAPLAN_RECIPES_DIR) / "search" / (std::string(name) + ".toml");
    for (unsigned threads : {1u, 2u})
      benchmark::RegisterBenchmark(("BM_Search/" + std::string(name) + "/threads:" + std::to_string(threads)).c_str(),
                                   whole_search, file, threads)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
  }
  for (const char* name : {"seed1-llama2-70b-4k-64xh100", "seed2-llama3-405b-8k-512xh100", "deepseek-v3-2048xh800"}) {
    std::filesystem::path file = std::filesystem::path(PARAPLAN_RECIPES_DIR) / "scenarios" / (std::string(name) + ".toml");
    benchmark::RegisterBenchmark(("BM_PlanFigures/" + std::string(name) + "/memory").c_str(), plan_figures, file, true);
    benchmark::RegisterBenchmark(("BM_PlanFigures/" + std::string(name) + "/all_layouts").c_str(), plan_figures, file,
                                 false);
  }
  return true;
}();

}  // namespace
}  // namespace paraplan::host

BENCHMARK_MAIN();
