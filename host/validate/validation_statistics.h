// paraplan/host/validate/validation_statistics.h: how close the predictions came.
//
// Over the rows that could be evaluated: MAPE (mean of |error %|), the row with the largest
// |error|, and the Spearman rank correlation of predicted vs measured, which says whether the
// model orders runs correctly even where its absolute times are off. Rows of both metrics rank
// together as iteration times (MeasuredRun::iteration_seconds), the one unit they share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "host/validate/validation.h"

namespace paraplan::host {

// 1-based ranks, ascending; tied values share the mean of the ranks they span ({5, 1, 5} ->
// {2.5, 1, 2.5}).
std::vector<double> average_ranks(const std::vector<double>& values);

// The Pearson correlation of the average ranks of x and y; nullopt with fewer than 2 pairs or
// when either side is constant (no order to compare).
std::optional<double> spearman_correlation(const std::vector<double>& x, const std::vector<double>& y);

// Mean of |error %|; nullopt for no errors.
std::optional<double> mean_absolute_percentage_error(const std::vector<double>& errors_pct);

struct SourceAccuracy {
  std::string source;
  size_t rows = 0;                  // evaluated rows
  std::optional<double> mape_pct;   // nullopt: none evaluated
};

struct SliceAccuracy {
  std::string name;
  size_t rows = 0, evaluated = 0;
  std::optional<double> mape_pct, mean_error_pct;
};

// The plans of one model on one cluster (the same model, hardware and GPU count), ranked: how well
// the model orders the choices a search makes between (issue 18's within-model Spearman). The
// model is the `model` column's name, else its shape ("L layers, hidden H").
struct RankingGroup {
  std::string model, hardware;
  int64_t num_gpus = 0;
  size_t rows = 0;                  // evaluated rows
  std::optional<double> spearman;   // nullopt: fewer than 2 rows, or one side constant
};

// Groups of at least this many evaluated rows count toward the weighted ranking.
inline constexpr size_t kRankingGroupMinRows = 3;

struct ValidationSummary {
  size_t rows = 0, evaluated = 0, unevaluable = 0;
  std::optional<double> mape_pct;
  std::optional<double> max_abs_error_pct;
  std::optional<size_t> worst;       // index of the row with the largest |error| (the first on ties)
  std::optional<double> spearman;
  std::vector<SourceAccuracy> sources;  // in order of first appearance
  // The same by model (rows that name one) and by hardware, with the mean signed error (+:
  // predicted too fast), in order of first appearance: the slices the CI guards.
  std::vector<SliceAccuracy> models, hardware;
  // Every group of kRankingGroupMinRows or more evaluated rows, in order of first appearance, and
  // their Spearman correlations weighted by rows (nullopt: no such group ranks).
  std::vector<RankingGroup> rankings;
  std::optional<double> within_model_spearman;
};

ValidationSummary summarize(const std::vector<Prediction>& predictions);

}  // namespace paraplan::host
