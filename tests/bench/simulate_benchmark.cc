// How fast does the discrete-event simulator replay a step, through the real plugins loaded the
// real way? One iteration = compose the plan with its schedule steps + simulate it.
//
//   BM_Simulate/<recipe>          one representative rank per pipeline stage (the default)
//   BM_SimulateEveryRank/<recipe> --ranks all: every rank of the cluster
//   BM_SimulateWeakScaling/<ranks> --ranks all on the GPT-3 recipe (TP 8 x PP 8, 64 micro-batches
//                                 per data-parallel rank), data parallelism grown to <ranks> GPUs
// Counters: simulated events per second, nanoseconds per event (the whole iteration: composing
// and building the programs included), and plans simulated per second.
// Run: build/default/bin/paraplan_simulate_benchmark [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <ctime>
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

void simulate(benchmark::State& state, const std::filesystem::path& file, std::vector<std::string> overrides) {
  RecipeReaderOptions options;
  options.overrides = std::move(overrides);
  std::unique_ptr<Recipe> recipe = read_recipe(file, options);
  std::unique_ptr<HardwareBinding> hardware = open_hardware(*recipe, catalog());
  const int64_t per_node = gpus_per_node(*recipe, *hardware);
  double events = 0;
  const std::clock_t started = std::clock();  // CPU time, as the benchmark's own column
  for (auto _ : state) {
    ComposedPlan composed = compose_plan(*recipe, catalog(), per_node, /*wants_schedule=*/true);
    ResultTree results = run_executor("simulate", *recipe, catalog(), composed, *hardware);
    events += std::get<double>(*results.find("simulation.events"));
    benchmark::DoNotOptimize(results);
  }
  state.counters["events_per_s"] = benchmark::Counter(events, benchmark::Counter::kIsRate);
  state.counters["ns_per_event"] = 1e9 * static_cast<double>(std::clock() - started) / CLOCKS_PER_SEC / events;
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
    benchmark::RegisterBenchmark(("BM_Simulate/" + name).c_str(), simulate, recipe, std::vector<std::string>{})
        ->Unit(benchmark::kMillisecond);
  }
  const std::filesystem::path gpt3(PARAPLAN_RECIPES_DIR "/simulate/gpt3-175b-512xa100.toml");
  const std::string every_rank = "executor.simulate.ranks=all";
  benchmark::RegisterBenchmark("BM_SimulateEveryRank/gpt3-175b-512xa100", simulate, gpt3, std::vector{every_rank})
      ->Unit(benchmark::kMillisecond);
  // Issue 20: the cost of an event must not grow with the ranks (64 micro-batches per rank, so
  // events grow with them).
  for (int ranks : {64, 512, 4096, 16384}) {
    const std::string n = std::to_string(ranks);
    benchmark::RegisterBenchmark(("BM_SimulateWeakScaling/" + n).c_str(), simulate, gpt3,
                                 std::vector{every_rank, "cluster.num_gpus=" + n, "training.global_batch=" + n})
        ->Unit(benchmark::kMillisecond);
  }
  return true;
}();

}  // namespace
}  // namespace paraplan::host

BENCHMARK_MAIN();
