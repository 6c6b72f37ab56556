#include "host/validate/validation.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <exception>
#include <mutex>
#include <thread>

#include "host/core/errors.h"
#include "host/search/search_report.h"
#include "host/validate/run_recipe.h"

namespace paraplan::host {
namespace {

// Messages about a row's recipe begin with its name and often a position in the generated
// recipe text, which the user never sees: both go, the table names the row.
std::string reason_of(const std::string& message, const MeasuredRun& run) {
  const std::string name = run_recipe_name(run);
  if (!message.starts_with(name)) return message;
  std::string_view rest = std::string_view(message).substr(name.size());
  auto skip_position = [&rest] {  // ":12"
    if (rest.size() < 2 || rest[0] != ':' || !std::isdigit(static_cast<unsigned char>(rest[1]))) return false;
    rest.remove_prefix(1);
    while (!rest.empty() && std::isdigit(static_cast<unsigned char>(rest[0]))) rest.remove_prefix(1);
    return true;
  };
  if (skip_position()) skip_position();  // line, then column
  if (rest.starts_with(": ")) rest.remove_prefix(2);
  return std::string(rest);
}

}  // namespace

SearchSettings prediction_settings() {
  SearchSettings settings;
  settings.objective = Objective::kThroughput;
  settings.top = 1;
  settings.memory_headroom = 0;  // the measured run ran, so it fit in the whole memory
  settings.threads = 1;          // rows run in parallel instead
  return settings;
}


Prediction predict_run(const MeasuredRun& run, const PluginCatalog& catalog) {
  Prediction prediction;
  prediction.run = &run;
  try {
    std::unique_ptr<Recipe> recipe = run_recipe(run);
    SearchResult result = run_search(*recipe, catalog, prediction_settings());
    if (result.top.empty()) throw PlanError(empty_search_message(result, *recipe));
    const RankedPlan& winner = result.top.front();
    prediction.predicted =
        run.metric == Metric::kIterationSeconds ? winner.figures.step_s : winner.figures.tokens_per_s_per_gpu;
    prediction.error_pct = (*prediction.predicted - run.value) / run.value * 100.0;
    prediction.plan = ranked_plan_text(result.space, winner);
    prediction.micro_batch = winner.micro_batch;
    prediction.recompute = recompute_name(winner.recompute);
    prediction.recompute_num_layers = winner.recompute_num_layers;
    prediction.memory_per_gpu_bytes = winner.figures.memory_per_gpu_bytes;
    prediction.comparable = comparable_class(*recipe, result.hardware_profile, result.gpus_per_node);
  } catch (const HostError& failure) {
    prediction.predicted.reset();
    prediction.reason = reason_of(failure.what(), run);
  }
  return prediction;
}

std::vector<Residual> residuals_of(const std::vector<Prediction>& predictions) {
  std::vector<Residual> residuals;
  for (const Prediction& prediction : predictions) {
    if (!prediction.evaluated()) continue;
    const MeasuredRun& run = *prediction.run;
    Residual residual;
    residual.of = prediction.comparable;
    // A tokens/s figure is inverse to the step time.
    residual.step_ratio = run.metric == Metric::kIterationSeconds ? run.value / *prediction.predicted
                                                                  : *prediction.predicted / run.value;
    if (run.measured_memory_gib && prediction.memory_per_gpu_bytes > 0)
      residual.memory_ratio = *run.measured_memory_gib * kBytesPerGiB / prediction.memory_per_gpu_bytes;
    residual.source = run.source;
    residual.file = run.file;
    residuals.push_back(std::move(residual));
  }
  return residuals;
}

std::vector<Prediction> predict_runs(const std::vector<MeasuredRun>& runs, const PluginCatalog& catalog,
                                     unsigned threads) {
  std::vector<Prediction> predictions(runs.size());
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<size_t>(threads, std::max<size_t>(runs.size(), 1)));
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto work = [&] {
    try {
      for (size_t index = next++; index < runs.size() && !failed; index = next++)
        predictions[index] = predict_run(runs[index], catalog);
    } catch (...) {
      std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      failed = true;
    }
  };
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < threads; ++i) pool.emplace_back(work);
  work();
  for (std::thread& thread : pool) thread.join();
  if (failure) std::rethrow_exception(failure);
  return predictions;
}

}  // namespace paraplan::host
