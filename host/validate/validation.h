// paraplan/host/validate/validation.h: each measured run predicted by the search.
//
// A row becomes a search recipe (run_recipe.h) and `paraplan search` finds its best plan with
// objective throughput, the measured run's whole GPU memory usable (it ran, so it fit) and one
// thread; rows are spread over worker threads instead, each row's result kept in file order. The
// prediction is the winner's step time or tokens per second per GPU, whichever the row measured.
// A row that cannot be evaluated (unknown hardware, a constraint, no plan fits, ...) keeps its
// one-line reason and is left out of the statistics, never dropped.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "host/plugin/plugin_catalog.h"
#include "host/search/search_engine.h"
#include "host/validate/measured_runs.h"
#include "host/validate/prediction_intervals.h"

namespace paraplan::host {

struct Prediction {
  const MeasuredRun* run = nullptr;
  std::optional<double> predicted;  // in the row's metric; empty: the row is unevaluable
  double error_pct = 0;             // (predicted - measured) / measured x 100
  std::string plan;                 // the winner, as search prints it (ranked_plan_text)
  int64_t micro_batch = 0;
  std::string recompute;
  int64_t recompute_num_layers = 0;  // full recomputation of each chunk's first N layers; 0: all
  double memory_per_gpu_bytes = 0;  // the winner's fullest GPU, to set beside measured_memory_gib
  std::string reason;  // why the row is unevaluable, without the row's location
  ComparableClass comparable;  // the row's class, for its residual (prediction_intervals.h)

  bool evaluated() const { return predicted.has_value(); }
};

// The search a row's prediction comes from: top 1 by throughput, no memory headroom, 1 thread.
SearchSettings prediction_settings();

// One row; HostErrors become an unevaluable prediction, anything else (a bug) is thrown.
Prediction predict_run(const MeasuredRun& run, const PluginCatalog& catalog);

// Every row, on `threads` worker threads (0: every core), in the order of `runs`.
std::vector<Prediction> predict_runs(const std::vector<MeasuredRun>& runs, const PluginCatalog& catalog,
                                     unsigned threads);

// The evaluated rows' residuals (measured / predicted step time and, where published, peak
// memory), each with its class, source and file.
std::vector<Residual> residuals_of(const std::vector<Prediction>& predictions);

}  // namespace paraplan::host
