// Cost-model evaluation is the inner loop of search: how many plans per second does one core
// compose and evaluate, through the real plugins loaded the real way?
//
//   BM_ComposeAndEvaluate/<recipe>  workload + every strategy's transform + the analytic executor
//                                   (what a search pays per candidate: the recipe is parsed once;
//                                   like `paraplan evaluate`, no schedule steps are listed for
//                                   the analytic executor)
//   BM_ReadComposeEvaluate/<recipe> the same plus parsing the recipe (what `paraplan evaluate` pays
//                                   after start-up)
// Run: build/default/bin/paraplan_evaluate_benchmark [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <filesystem>
#include <string>
#include <vector>

#include "host/plan/composer.h"
#include "host/plan/execution.h"
#include "host/plan/hardware_binding.h"
#include "host/plugin/plugin_catalog.h"
#include "host/recipe/recipe_reader.h"

namespace paraplan::host {
namespace {

const PluginCatalog& catalog() {
  static const PluginCatalog plugins = PluginCatalog::scan({PARAPLAN_BUNDLED_PLUGIN_DIR});
  return plugins;
}

void compose_and_evaluate(benchmark::State& state, const std::filesystem::path& file) {
  std::unique_ptr<Recipe> recipe = read_recipe(file);
  std::unique_ptr<HardwareBinding> hardware = open_hardware(*recipe, catalog());
  const int64_t per_node = gpus_per_node(*recipe, *hardware);
  for (auto _ : state) {
    ComposedPlan composed = compose_plan(*recipe, catalog(), per_node, /*wants_schedule=*/false);
    ResultTree results = run_executor("analytic", *recipe, catalog(), composed, *hardware);
    benchmark::DoNotOptimize(results);
  }
  state.counters["evaluations_per_s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void read_compose_evaluate(benchmark::State& state, const std::filesystem::path& file) {
  for (auto _ : state) {
    std::unique_ptr<Recipe> recipe = read_recipe(file);
    std::unique_ptr<HardwareBinding> hardware = open_hardware(*recipe, catalog());
    const int64_t per_node = gpus_per_node(*recipe, *hardware);
    ComposedPlan composed = compose_plan(*recipe, catalog(), per_node, /*wants_schedule=*/false);
    ResultTree results = run_executor("analytic", *recipe, catalog(), composed, *hardware);
    benchmark::DoNotOptimize(results);
  }
  state.counters["evaluations_per_s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

// One benchmark per shipped scenario and simulate recipe, so the figures cover every strategy
// (and the GPT-3 plan that tests/bench/calculon_side_by_side.py sets beside Calculon's).
const bool registered = [] {
  std::vector<std::filesystem::path> recipes;
  for (const char* folder : {"/scenarios", "/simulate"})
    for (const auto& entry : std::filesystem::directory_iterator(std::string(PARAPLAN_RECIPES_DIR) + folder))
      if (entry.path().extension() == ".toml") recipes.push_back(entry.path());
  std::sort(recipes.begin(), recipes.end());
  for (const std::filesystem::path& file : recipes) {
    std::string name = file.stem().string();
    benchmark::RegisterBenchmark(("BM_ComposeAndEvaluate/" + name).c_str(), compose_and_evaluate, file);
    benchmark::RegisterBenchmark(("BM_ReadComposeEvaluate/" + name).c_str(), read_compose_evaluate, file);
  }
  return true;
}();

}  // namespace
}  // namespace paraplan::host

BENCHMARK_MAIN();
