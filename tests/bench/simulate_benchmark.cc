// How fast does the discrete-event simulator replay a step, through the real plugins loaded the
// real way? One iteration = compose the plan with its schedule steps + simulate it.
//
//   BM_Simulate/<recipe>          one representative rank per pipeline stage (the default)
//   BM_SimulateEveryRank/<recipe> --ranks all: every rank of the cluster
// Counters: simulated events per second, and plans simulated per second.
// Run: build/default/bin/paraplan_simulate_benchmark [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <algorithm>
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

void simulate(benchmark::State& state, const std::filesystem::path& file, bool every_rank) {
  RecipeReaderOptions options;
  if (every_rank) options.overrides = {"executor.simulate.ranks=all"};
  std::unique_ptr<Recipe> recipe = read_recipe(file, options);
  std::unique_ptr<HardwareBinding> hardware = open_hardware(*recipe, catalog());
  const int64_t per_node = gpus_per_node(*recipe, *hardware);
  double events = 0;
  for (auto _ : state) {
    ComposedPlan composed = compose_plan(*recipe, catalog(), per_node, /*wants_schedule=*/true);
    ResultTree results = run_executor("simulate", *recipe, catalog(), composed, *hardware);
    events += std::get<double>(*results.find("simulation.events"));
    benchmark::DoNotOptimize(results);
  }
  state.counters["events_per_s"] = benchmark::Counter(events, benchmark::Counter::kIsRate);
  state.counters["plans_per_s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

const bool registered = [] {
  std::vector<std::filesystem::path> recipes;
  for (const char* folder : {"/scenarios", "/simulate"})
    for (const auto& entry : std::filesystem::directory_iterator(std::string(PARAPLAN_RECIPES_DIR) + folder))
      if (entry.path().extension() == ".toml") recipes.push_back(entry.path());
  std::sort(recipes.begin(), recipes.end());
  for (const std::filesystem::path& recipe : recipes) {
    const std::string name = recipe.stem().string();
    benchmark::RegisterBenchmark(("BM_Simulate/" + name).c_str(), simulate, recipe, false)->Unit(benchmark::kMillisecond);
  }
  benchmark::RegisterBenchmark("BM_SimulateEveryRank/gpt3-175b-512xa100", simulate,
                               std::filesystem::path(PARAPLAN_RECIPES_DIR "/simulate/gpt3-175b-512xa100.toml"), true)
      ->Unit(benchmark::kMillisecond);
  return true;
}();

}  // namespace
}  // namespace paraplan::host

BENCHMARK_MAIN();
