// paraplan/host/validate/validation_report.h: `paraplan validate`'s report, text and JSON.
//
// Text: what was read, a table of every evaluated row (id, metric, measured, predicted, signed
// error, the plan the search chose), the predicted memory beside measured_memory_gib where a row
// has it, the unevaluable rows with their reasons, then MAPE, the worst
// row, Spearman and MAPE per source. Fits 120 columns: a long plan wraps within its column. No
// timings, so the same input gives the same report. JSON: {"files", "rows": [{"id", "source",
// "metric", "measured", "predicted", "error_pct", "plan", "micro_batch", "recompute"}; an
// unevaluable row has the last five null and a "reason"; a row with measured_memory_gib adds it
// and the prediction's "memory_gib"], "evaluated", "unevaluable",
// "mape_pct", "max_abs_error_pct", "worst_row", "spearman", "sources": [{"source", "rows",
// "mape_pct"}], "models", "hardware", "interval_coverage": {"claimed", "all", "files": [{"name", "runs",
// "inside", "faster", "slower", "without_interval", "inside_fraction"}]}}; statistics are null when
// no row was evaluated (Spearman: fewer than 2). Text ends with the interval coverage per file.
#pragma once

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <vector>

#include "host/validate/validation.h"
#include "host/validate/validation_statistics.h"

namespace paraplan::host {

struct ValidationReport {
  std::vector<std::string> files;        // as named on the command line
  std::vector<Prediction> predictions;   // every row, in file order
  ValidationSummary summary;
  CoverageCheck coverage;                // the prediction intervals out of fold (prediction_intervals.h)
};

void write_validation_text(std::ostream& out, const ValidationReport& report);
nlohmann::ordered_json validation_json(const ValidationReport& report);

// "3.528", "0.3722", "169.9", "1.100", "9780": four significant digits, no exponent for large values.
std::string significant(double value);

// A source as shown: "(blank)" for an empty source column.
std::string source_label(const std::string& source);

}  // namespace paraplan::host
