#include "host/cli/plan_sweep.h"

#include <filesystem>
#include <iomanip>
#include <optional>
#include <sstream>

#include "host/core/errors.h"
#include "host/core/trimmed.h"
#include "host/report/html_report.h"
#include "host/report/report_output.h"
#include "host/report/text_report.h"
#include "host/report/uncertainty_report.h"

namespace paraplan::host {
namespace {

constexpr size_t kMostSweepValues = 64;

struct SweepPoint {
  std::string value;
  std::optional<PlanRun> run;
  std::string error;  // why the value has no plan
};

nlohmann::ordered_json sweep_json(const Sweep& sweep, const std::vector<SweepPoint>& points) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const SweepPoint& point : points) {
    nlohmann::ordered_json entry = {{"value", point.value}};
    if (point.run) {
      entry["fits"] = point.run->fits;
      entry["report"] = point.run->results.to_json();
    } else {
      entry["error"] = point.error;
    }
    list.push_back(entry);
  }
  return {{"sweep", {{"key", sweep.key}, {"points", list}}}};
}

std::string figure(const PlanRun& run, const std::string& key) {
  const ResultValue* value = run.results.find(key);
  return value ? format_value(key, *value) : "-";
}

void write_sweep_text(std::ostream& out, const Sweep& sweep, const std::vector<SweepPoint>& points) {
  size_t width = sweep.key.size();
  for (const SweepPoint& point : points) width = std::max(width, point.value.size());
  const int column = static_cast<int>(width) + 2;
  out << std::left << std::setw(column) << sweep.key << std::right << std::setw(14) << "step_s" << std::setw(18)
      << "tokens_per_s" << std::setw(16) << "per GPU" << std::setw(10) << "mfu" << std::setw(14) << "memory/GPU"
      << "  fits\n";
  for (const SweepPoint& point : points) {
    out << std::left << std::setw(column) << point.value << std::right;
    if (!point.run) {
      out << "  " << point.error << "\n";
      continue;
    }
    out << std::setw(14) << figure(*point.run, "time.step_s") << std::setw(18) << figure(*point.run, "throughput.tokens_per_s")
        << std::setw(16) << figure(*point.run, "throughput.tokens_per_s_per_gpu") << std::setw(10)
        << figure(*point.run, "throughput.mfu") << std::setw(14) << figure(*point.run, "memory.per_gpu_bytes") << "  "
        << (point.run->fits ? "yes" : "no") << "\n";
  }
}

}  // namespace

Sweep parse_sweep(const std::string& text) {
  const std::string usage = "--sweep '" + text + "': expected KEY=V1,V2,... (cluster.num_gpus=64,128,256)";
  const size_t equals = text.find('=');
  Sweep sweep{equals == std::string::npos ? "" : trimmed(text.substr(0, equals)), {}};
  if (sweep.key.empty()) throw UsageError(usage);
  std::stringstream values(text.substr(equals + 1));
  for (std::string value; std::getline(values, value, ',');) {
    if (trimmed(value).empty()) throw UsageError(usage + ": an empty value");
    sweep.values.push_back(trimmed(value));
  }
  if (sweep.values.empty()) throw UsageError(usage);
  if (sweep.values.size() > kMostSweepValues)
    throw UsageError("--sweep: " + std::to_string(sweep.values.size()) + " values; at most " + std::to_string(kMostSweepValues));
  return sweep;
}

int report_sweep(const std::string& executor, const CommonOptions& common, const std::string& recipe_file,
                 const std::vector<std::string>& overrides, const Sweep& sweep, const PlanReportOptions& options) {
  configure_logging(common);
  PluginCatalog catalog = scan_plugins(common);
  IntervalTable storage;
  const IntervalTable& intervals = interval_table(options.intervals_file, storage);
  std::vector<SweepPoint> points;
  std::optional<InputError> first_input_error;
  bool all_input_errors = true;
  for (const std::string& value : sweep.values) {
    SweepPoint point{value, std::nullopt, ""};
    std::vector<std::string> with_value = overrides;
    with_value.push_back(sweep.key + "=" + value);
    try {
      point.run = run_plan(executor, catalog, recipe_file, with_value, intervals);
      all_input_errors = false;
    } catch (const InputError& failure) {
      if (!first_input_error) first_input_error = failure;
      point.error = failure.what();
    } catch (const PlanError& failure) {
      all_input_errors = false;
      point.error = failure.what();
    }
    points.push_back(std::move(point));
  }
  // One key that no value can set (a typo, a bad file) is the command's error, not a row's.
  if (all_input_errors) throw *first_input_error;

  const nlohmann::ordered_json json = sweep_json(sweep, points);
  if (common.json)
    report_stream() << dump_json(json) << "\n";
  else
    write_sweep_text(report_stream(), sweep, points);
  if (!options.html_file.empty()) {
    HtmlReport page;
    page.kind = "sweep";
    page.report = json["sweep"];
    page.title = std::filesystem::path(points.front().run ? points.front().run->recipe->file : recipe_file).stem().string() +
                 ": sweep of " + sweep.key;
    for (const SweepPoint& point : points)
      if (!point.run) page.warnings.push_back(sweep.key + " = " + point.value + ": " + point.error);
    write_html_report(options.html_file, page);
  }
  for (const SweepPoint& point : points)
    if (!point.run || !point.run->fits) return kExitPlanInvalid;
  return kExitOk;
}

}  // namespace paraplan::host
