#include "host/validate/validation_statistics.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <utility>

namespace paraplan::host {

std::vector<double> average_ranks(const std::vector<double>& values) {
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
  std::vector<double> ranks(values.size());
  for (size_t first = 0; first < order.size();) {
    size_t last = first;
    while (last + 1 < order.size() && values[order[last + 1]] == values[order[first]]) ++last;
    const double shared = (static_cast<double>(first + 1) + static_cast<double>(last + 1)) / 2.0;
    for (size_t i = first; i <= last; ++i) ranks[order[i]] = shared;
    first = last + 1;
  }
  return ranks;
}

std::optional<double> spearman_correlation(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size() || x.size() < 2) return std::nullopt;
  const std::vector<double> rx = average_ranks(x), ry = average_ranks(y);
  const double n = static_cast<double>(x.size());
  const double mean_x = std::accumulate(rx.begin(), rx.end(), 0.0) / n;
  const double mean_y = std::accumulate(ry.begin(), ry.end(), 0.0) / n;
  double covariance = 0, variance_x = 0, variance_y = 0;
  for (size_t i = 0; i < rx.size(); ++i) {
    covariance += (rx[i] - mean_x) * (ry[i] - mean_y);
    variance_x += (rx[i] - mean_x) * (rx[i] - mean_x);
    variance_y += (ry[i] - mean_y) * (ry[i] - mean_y);
  }
  if (variance_x == 0 || variance_y == 0) return std::nullopt;
  return covariance / std::sqrt(variance_x * variance_y);
}

std::optional<double> mean_absolute_percentage_error(const std::vector<double>& errors_pct) {
  if (errors_pct.empty()) return std::nullopt;
  double sum = 0;
  for (double error : errors_pct) sum += std::abs(error);
  return sum / static_cast<double>(errors_pct.size());
}

namespace {

// Rows grouped by `key` (rows whose key is blank left out), each group's accuracy.
template <typename Key>
std::vector<SliceAccuracy> slices(const std::vector<Prediction>& predictions, Key&& key) {
  std::vector<SliceAccuracy> out;
  std::vector<std::vector<double>> errors;
  for (const Prediction& prediction : predictions) {
    const std::string name = key(*prediction.run);
    if (name.empty()) continue;
    auto slice = std::find_if(out.begin(), out.end(), [&](const SliceAccuracy& known) { return known.name == name; });
    if (slice == out.end()) {
      out.push_back({name, 0, 0, std::nullopt, std::nullopt});
      errors.emplace_back();
      slice = out.end() - 1;
    }
    ++slice->rows;
    if (!prediction.evaluated()) continue;
    ++slice->evaluated;
    errors[static_cast<size_t>(slice - out.begin())].push_back(prediction.error_pct);
  }
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].mape_pct = mean_absolute_percentage_error(errors[i]);
    if (!errors[i].empty())
      out[i].mean_error_pct = std::accumulate(errors[i].begin(), errors[i].end(), 0.0) / static_cast<double>(errors[i].size());
  }
  return out;
}

std::string model_label(const MeasuredRun& run) {
  if (!run.model.empty()) return run.model;
  return std::to_string(run.layers) + " layers, hidden " + std::to_string(run.hidden);
}

// Groups by model, hardware and GPU count; each group's iteration times ranked as the whole set's.
void rank_within_models(const std::vector<Prediction>& predictions, ValidationSummary& summary) {
  std::vector<RankingGroup> groups;
  std::vector<std::pair<std::vector<double>, std::vector<double>>> series;  // measured, predicted
  for (const Prediction& prediction : predictions) {
    if (!prediction.evaluated()) continue;
    const MeasuredRun& run = *prediction.run;
    const std::string model = model_label(run);
    auto group = std::find_if(groups.begin(), groups.end(), [&](const RankingGroup& known) {
      return known.model == model && known.hardware == run.hardware && known.num_gpus == run.num_gpus;
    });
    if (group == groups.end()) {
      groups.push_back({model, run.hardware, run.num_gpus, 0, std::nullopt});
      series.emplace_back();
      group = groups.end() - 1;
    }
    ++group->rows;
    auto& [measured, predicted] = series[static_cast<size_t>(group - groups.begin())];
    measured.push_back(run.iteration_seconds(run.value));
    predicted.push_back(run.iteration_seconds(*prediction.predicted));
  }
  double weighted = 0, rows = 0;
  for (size_t i = 0; i < groups.size(); ++i) {
    if (groups[i].rows < kRankingGroupMinRows) continue;
    groups[i].spearman = spearman_correlation(series[i].second, series[i].first);
    if (groups[i].spearman) {
      weighted += *groups[i].spearman * static_cast<double>(groups[i].rows);
      rows += static_cast<double>(groups[i].rows);
    }
    summary.rankings.push_back(groups[i]);
  }
  if (rows > 0) summary.within_model_spearman = weighted / rows;
}

}  // namespace

ValidationSummary summarize(const std::vector<Prediction>& predictions) {
  ValidationSummary summary;
  summary.rows = predictions.size();
  std::vector<double> errors, measured, predicted;
  std::vector<std::vector<double>> errors_by_source;
  for (size_t index = 0; index < predictions.size(); ++index) {
    const Prediction& prediction = predictions[index];
    const MeasuredRun& run = *prediction.run;
    auto source = std::find_if(summary.sources.begin(), summary.sources.end(),
                               [&](const SourceAccuracy& known) { return known.source == run.source; });
    if (source == summary.sources.end()) {
      summary.sources.push_back({run.source, 0, std::nullopt});
      errors_by_source.emplace_back();
      source = summary.sources.end() - 1;
    }
    if (!prediction.evaluated()) {
      ++summary.unevaluable;
      continue;
    }
    ++summary.evaluated;
    ++source->rows;
    errors_by_source[source - summary.sources.begin()].push_back(prediction.error_pct);
    errors.push_back(prediction.error_pct);
    measured.push_back(run.iteration_seconds(run.value));
    predicted.push_back(run.iteration_seconds(*prediction.predicted));
    if (!summary.worst || std::abs(prediction.error_pct) > *summary.max_abs_error_pct) {
      summary.worst = index;
      summary.max_abs_error_pct = std::abs(prediction.error_pct);
    }
  }
  summary.mape_pct = mean_absolute_percentage_error(errors);
  summary.spearman = spearman_correlation(predicted, measured);
  for (size_t i = 0; i < summary.sources.size(); ++i)
    summary.sources[i].mape_pct = mean_absolute_percentage_error(errors_by_source[i]);
  summary.models = slices(predictions, [](const MeasuredRun& run) { return run.model; });
  rank_within_models(predictions, summary);
  summary.hardware = slices(predictions, [](const MeasuredRun& run) { return run.hardware; });
  return summary;
}

}  // namespace paraplan::host
