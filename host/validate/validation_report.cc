#include "host/validate/validation_report.h"

#include <algorithm>
#include <cmath>

#include "host/core/joined.h"
#include "host/core/number_format.h"

namespace paraplan::host {
namespace {

constexpr size_t kLineWidth = 120;
constexpr size_t kNarrowestPlanColumn = 30;

std::string padded(const std::string& text, size_t width, bool right = false) {
  if (text.size() >= width) return text;
  const std::string fill(width - text.size(), ' ');
  return right ? fill + text : text + fill;
}

const char* metric_label(Metric metric) {
  return metric == Metric::kTokensPerSecondPerGpu ? "tokens/s/GPU" : "iteration_s";
}

// `text` broken at spaces into lines of at most `width` (a longer word keeps its own line).
std::vector<std::string> wrapped(const std::string& text, size_t width) {
  std::vector<std::string> lines(1);
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (!lines.back().empty() && lines.back().size() + 1 + word.size() > width) lines.emplace_back();
    lines.back() += (lines.back().empty() ? "" : " ") + word;
    start = end + 1;
  }
  return lines;
}

void write_table(std::ostream& out, const ValidationReport& report) {
  size_t id_width = 2;
  for (const Prediction& prediction : report.predictions)
    if (prediction.evaluated()) id_width = std::max(id_width, prediction.run->id.size());
  const std::string header = padded("id", id_width) + "  " + padded("metric", 12) + "  " + padded("measured", 10, true) +
                             "  " + padded("predicted", 10, true) + "  " + padded("error %", 8, true) + "  ";
  const size_t plan_width = std::max(kNarrowestPlanColumn, kLineWidth - std::min(kLineWidth, header.size()));
  out << header << "plan\n";
  for (const Prediction& prediction : report.predictions) {
    if (!prediction.evaluated()) continue;
    const MeasuredRun& run = *prediction.run;
    std::vector<std::string> plan = wrapped(prediction.plan, plan_width);
    out << padded(run.id, id_width) << "  " << padded(metric_label(run.metric), 12) << "  "
        << padded(significant(run.value), 10, true) << "  " << padded(significant(*prediction.predicted), 10, true) << "  "
        << padded(format_number("%+.1f", prediction.error_pct), 8, true) << "  " << plan.front() << "\n";
    for (size_t line = 1; line < plan.size(); ++line) out << std::string(header.size(), ' ') << plan[line] << "\n";
  }
}

// Rows that publish their peak memory (measured_memory_gib): the prediction's fullest GPU beside
// it. The time's statistics do not include these.
void write_memory(std::ostream& out, const ValidationReport& report) {
  size_t id_width = 2, rows = 0;
  for (const Prediction& prediction : report.predictions)
    if (prediction.evaluated() && prediction.run->measured_memory_gib)
      id_width = std::max(id_width, prediction.run->id.size()), ++rows;
  if (rows == 0) return;
  out << "Memory per GPU against the peak the source measured (GiB):\n"
      << "  " << padded("id", id_width) << "  " << padded("measured", 9, true) << "  " << padded("predicted", 9, true)
      << "  " << padded("error %", 8, true) << "\n";
  for (const Prediction& prediction : report.predictions) {
    if (!prediction.evaluated() || !prediction.run->measured_memory_gib) continue;
    const double measured = *prediction.run->measured_memory_gib, predicted = prediction.memory_per_gpu_bytes / kBytesPerGiB;
    out << "  " << padded(prediction.run->id, id_width) << "  " << padded(format_number("%.1f", measured), 9, true)
        << "  " << padded(format_number("%.1f", predicted), 9, true) << "  "
        << padded(format_number("%+.1f", (predicted - measured) / measured * 100.0), 8, true) << "\n";
  }
  out << "\n";
}

// "MAPE by model:" and its rows: evaluated of all, MAPE, mean signed error (+: too fast).
void write_slices(std::ostream& out, const char* what, const std::vector<SliceAccuracy>& slices) {
  if (slices.empty()) return;
  out << "\nMAPE by " << what << " (signed: + is predicted too fast):\n";
  size_t width = 0;
  for (const SliceAccuracy& slice : slices) width = std::max(width, slice.name.size());
  for (const SliceAccuracy& slice : slices) {
    out << "  " << padded(slice.name, width) << "  " << padded(std::to_string(slice.evaluated), 4, true) << " of "
        << padded(std::to_string(slice.rows), 4, true) << "  ";
    if (slice.mape_pct)
      out << "MAPE " << padded(format_number("%.1f", *slice.mape_pct), 5, true) << " %  signed "
          << padded(format_number("%+.1f", *slice.mean_error_pct), 6, true) << " %";
    else
      out << "no row evaluated";
    out << "\n";
  }
}

// The plans of one model on one cluster, ranked (RankingGroup): the weighted figure, then each group.
void write_rankings(std::ostream& out, const ValidationSummary& summary) {
  if (summary.rankings.empty()) return;
  out << "\nPlans of one model on one cluster ranked (Spearman of iteration times, groups of "
      << kRankingGroupMinRows << " or more rows): "
      << (summary.within_model_spearman ? format_number("%.3f", *summary.within_model_spearman) + " weighted by rows"
                                        : std::string("n/a (no group has an order)"))
      << "\n";
  size_t width = 0;
  auto label = [](const RankingGroup& group) {
    return group.model + " on " + std::to_string(group.num_gpus) + " x " + group.hardware;
  };
  for (const RankingGroup& group : summary.rankings) width = std::max(width, label(group).size());
  for (const RankingGroup& group : summary.rankings)
    out << "  " << padded(label(group), width) << "  " << padded(std::to_string(group.rows), 4, true) << " rows  "
        << (group.spearman ? "Spearman " + padded(format_number("%.3f", *group.spearman), 6, true)
                           : std::string("n/a (no order)"))
        << "\n";
}

void write_summary(std::ostream& out, const ValidationReport& report) {
  const ValidationSummary& summary = report.summary;
  if (!summary.mape_pct) {
    out << "MAPE: no row could be evaluated\n";
    return;
  }
  const Prediction& worst = report.predictions[*summary.worst];
  out << "MAPE " << format_number("%.1f", *summary.mape_pct) << " % over " << summary.evaluated
      << (summary.evaluated == 1 ? " row" : " rows") << " (max " << format_number("%+.1f", worst.error_pct)
      << " %: " << worst.run->id << "); Spearman "
      << (summary.spearman ? format_number("%.3f", *summary.spearman) : std::string("n/a (fewer than 2 rows, or no order)"))
      << "\n\nMAPE by source:\n";
  size_t width = 0;
  for (const SourceAccuracy& source : summary.sources) width = std::max(width, source_label(source.source).size());
  for (const SourceAccuracy& source : summary.sources) {
    out << "  " << padded(source_label(source.source), width) << "  " << padded(std::to_string(source.rows), 5, true)
        << (source.rows == 1 ? " row " : " rows") << "  "
        << (source.mape_pct ? "MAPE " + padded(format_number("%.1f", *source.mape_pct), 5, true) + " %" : "no row evaluated")
        << "\n";
  }
  write_slices(out, "model", summary.models);
  write_slices(out, "hardware", summary.hardware);
  write_rankings(out, summary);
}

std::string share_text(size_t part, size_t whole) {
  return whole ? format_number("%.1f", 100.0 * static_cast<double>(part) / static_cast<double>(whole)) + " %" : "n/a";
}

// How many rows fall inside the intervals built without their source; below: the run was faster
// than the interval, above: slower.
void write_coverage(std::ostream& out, const CoverageCheck& check) {
  if (check.all.runs == 0) return;
  out << "\nPrediction intervals (" << format_number("%.0f", 100.0 * check.coverage)
      << " % claimed), out of fold: each source's rows against the other sources' intervals:\n";
  size_t width = 3;
  for (const CoverageCount& file : check.files) width = std::max(width, file.name.size());
  auto write_count = [&](const CoverageCount& count) {
    out << "  " << padded(count.name, width) << "  " << padded(std::to_string(count.runs), 5, true) << " rows  inside "
        << padded(share_text(count.inside, count.runs), 7, true) << "  faster " << padded(std::to_string(count.below), 4, true)
        << "  slower " << padded(std::to_string(count.above), 4, true);
    if (count.without_interval) out << "  no comparable class " << count.without_interval;
    out << "\n";
  };
  for (const CoverageCount& file : check.files) write_count(file);
  if (check.files.size() > 1) write_count(check.all);
}

}  // namespace

std::string significant(double value) {
  if (std::abs(value) >= 1000) return format_number("%.0f", value);
  return format_number("%#.4g", value);  // trailing zeros kept, so the column lines up
}

std::string source_label(const std::string& source) { return source.empty() ? "(blank)" : source; }

void write_validation_text(std::ostream& out, const ValidationReport& report) {
  const ValidationSummary& summary = report.summary;
  const std::string lead = "Validation: ";
  const std::vector<std::string> files = wrapped(joined(report.files, ", "), kLineWidth - lead.size());
  out << lead << files.front() << "\n";
  for (size_t line = 1; line < files.size(); ++line) out << std::string(lead.size(), ' ') << files[line] << "\n";
  out << "  " << summary.rows
      << (summary.rows == 1 ? " row: " : " rows: ") << summary.evaluated << " evaluated, " << summary.unevaluable
      << " unevaluable\n\n";
  if (summary.evaluated > 0) {
    write_table(out, report);
    out << "\n";
    write_memory(out, report);
  }
  if (summary.unevaluable > 0) {
    out << "Unevaluable rows (left out of the statistics):\n";
    for (const Prediction& prediction : report.predictions)
      if (!prediction.evaluated()) {
        out << "  " << prediction.run->id << " (" << prediction.run->file << ":" << prediction.run->line << "):\n";
        for (const std::string& line : wrapped(prediction.reason, kLineWidth - 4)) out << "    " << line << "\n";
      }
    out << "\n";
  }
  write_summary(out, report);
  write_coverage(out, report.coverage);
}

nlohmann::ordered_json validation_json(const ValidationReport& report) {
  const ValidationSummary& summary = report.summary;
  auto optional = [](const std::optional<double>& value) {
    return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json(nullptr);
  };
  nlohmann::ordered_json json;
  json["files"] = report.files;
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const Prediction& prediction : report.predictions) {
    const MeasuredRun& run = *prediction.run;
    nlohmann::ordered_json row;
    row["id"] = run.id;
    row["source"] = run.source;
    row["metric"] = metric_name(run.metric);
    row["measured"] = run.value;
    row["predicted"] = optional(prediction.predicted);
    row["error_pct"] = prediction.evaluated() ? nlohmann::ordered_json(prediction.error_pct) : nullptr;
    const bool evaluated = prediction.evaluated();
    row["plan"] = evaluated ? nlohmann::ordered_json(prediction.plan) : nullptr;
    row["micro_batch"] = evaluated ? nlohmann::ordered_json(prediction.micro_batch) : nullptr;
    row["recompute"] = evaluated ? nlohmann::ordered_json(prediction.recompute) : nullptr;
    row["recompute_num_layers"] =
        evaluated && prediction.recompute_num_layers > 0 ? nlohmann::ordered_json(prediction.recompute_num_layers) : nullptr;
    if (prediction.run->measured_memory_gib) {
      row["measured_memory_gib"] = *prediction.run->measured_memory_gib;
      row["memory_gib"] = evaluated ? nlohmann::ordered_json(prediction.memory_per_gpu_bytes / kBytesPerGiB) : nullptr;
    }
    if (!evaluated) row["reason"] = prediction.reason;
    rows.push_back(row);
  }
  json["rows"] = rows;
  json["evaluated"] = summary.evaluated;
  json["unevaluable"] = summary.unevaluable;
  json["mape_pct"] = optional(summary.mape_pct);
  json["max_abs_error_pct"] = optional(summary.max_abs_error_pct);
  json["worst_row"] = summary.worst ? nlohmann::ordered_json(report.predictions[*summary.worst].run->id) : nullptr;
  json["spearman"] = optional(summary.spearman);
  nlohmann::ordered_json sources = nlohmann::ordered_json::array();
  for (const SourceAccuracy& source : summary.sources)
    sources.push_back({{"source", source.source}, {"rows", source.rows}, {"mape_pct", optional(source.mape_pct)}});
  json["sources"] = sources;
  auto slices_json = [&](const std::vector<SliceAccuracy>& slices) {
    nlohmann::ordered_json array = nlohmann::ordered_json::array();
    for (const SliceAccuracy& slice : slices)
      array.push_back({{"name", slice.name}, {"rows", slice.rows}, {"evaluated", slice.evaluated},
                       {"mape_pct", optional(slice.mape_pct)}, {"mean_error_pct", optional(slice.mean_error_pct)}});
    return array;
  };
  json["models"] = slices_json(summary.models);
  json["hardware"] = slices_json(summary.hardware);
  json["within_model_spearman"] = optional(summary.within_model_spearman);
  nlohmann::ordered_json rankings = nlohmann::ordered_json::array();
  for (const RankingGroup& group : summary.rankings)
    rankings.push_back({{"model", group.model}, {"hardware", group.hardware}, {"num_gpus", group.num_gpus},
                        {"rows", group.rows}, {"spearman", optional(group.spearman)}});
  json["rankings"] = rankings;
  auto count_json = [](const CoverageCount& count) {
    return nlohmann::ordered_json{
        {"name", count.name}, {"runs", count.runs}, {"inside", count.inside}, {"faster", count.below},
        {"slower", count.above}, {"without_interval", count.without_interval},
        {"inside_fraction", count.runs ? nlohmann::ordered_json(static_cast<double>(count.inside) / static_cast<double>(count.runs))
                                       : nlohmann::ordered_json(nullptr)}};
  };
  nlohmann::ordered_json files = nlohmann::ordered_json::array();
  for (const CoverageCount& file : report.coverage.files) files.push_back(count_json(file));
  json["interval_coverage"] = {{"claimed", report.coverage.coverage}, {"all", count_json(report.coverage.all)}, {"files", files}};
  return json;
}

}  // namespace paraplan::host
