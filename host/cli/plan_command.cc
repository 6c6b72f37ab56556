// The body of `evaluate` and `simulate` (plan_command.h).
#include "host/cli/plan_command.h"

#include <filesystem>
#include <fstream>
#include <iostream>

#include "host/core/errors.h"
#include "host/plan/composer.h"
#include "host/plan/execution.h"
#include "host/plan/hardware_binding.h"
#include "host/recipe/recipe_overrides.h"
#include "host/recipe/recipe_reader.h"
#include "host/report/html_report.h"
#include "host/report/text_report.h"
#include "host/report/report_output.h"
#include "host/report/uncertainty_report.h"

namespace paraplan::host {
namespace {

// Above this many events the page keeps each micro-batch's passes and leaves out the ops within
// them: a browser draws some tens of thousands of bars smoothly, not hundreds of thousands.
constexpr size_t kMostTimelineEvents = 60000;

nlohmann::ordered_json timeline_of(const std::string& trace_file) {
  std::ifstream in(trace_file);
  if (!in) throw InputError(trace_file + ": cannot read the simulated trace back for the HTML report");
  nlohmann::ordered_json trace = nlohmann::ordered_json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (trace.is_discarded() || !trace.contains("traceEvents"))
    throw InputError(trace_file + ": the simulated trace is not Chrome trace JSON");
  nlohmann::ordered_json events = std::move(trace["traceEvents"]);
  std::string note;
  if (events.size() > kMostTimelineEvents) {
    nlohmann::ordered_json kept = nlohmann::ordered_json::array();
    for (auto& event : events)
      if (event.value("ph", "") != "X" || event.value("cat", "") == "step") kept.push_back(std::move(event));
    note = "This page shows each micro-batch's forward and backward passes; the " + std::to_string(events.size() - kept.size()) +
           " op-level events within them are left out (simulate --trace FILE.json has them all, for ui.perfetto.dev).";
    events = std::move(kept);
  }
  return {{"events", std::move(events)}, {"note", note}};
}

void write_plan_page(const PlanReportOptions& options, const std::string& executor, const Recipe& recipe,
                     const ResultTree& results, bool does_not_fit) {
  HtmlReport page;
  page.kind = executor == "simulate" ? "simulate" : "evaluate";
  page.report = results.to_json();
  const std::string model = page.report["plan"].value("model", "custom"), hardware = page.report["plan"].value("hardware", "");
  page.title = std::filesystem::path(recipe.file).stem().string() + ": " + model + " on " +
               std::to_string(page.report["plan"].value("num_gpus", 0)) + " x " + hardware + " (" + executor + ")";
  if (!options.trace_file.empty()) page.extras["trace"] = timeline_of(options.trace_file);
  if (does_not_fit) page.warnings.push_back("The plan does not fit in GPU memory (see the memory chart).");
  write_html_report(options.html_file, page);
}

}  // namespace

PlanRun run_plan(const std::string& executor, const PluginCatalog& catalog, const std::string& recipe_file,
                 const std::vector<std::string>& overrides, const IntervalTable& intervals) {
  RecipeReaderOptions reader_options;
  reader_options.overrides = overrides;
  PlanRun run;
  try {
    run.recipe = read_recipe(recipe_file, reader_options);
    std::unique_ptr<HardwareBinding> hardware = open_hardware(*run.recipe, catalog);
    const LoadedPlugin& executor_plugin = catalog.require(executor, PP_KIND_EXECUTOR);
    const bool wants_schedule = executor_plugin.metadata->executor->flags & PP_EXECUTOR_WALKS_SCHEDULE;
    ComposedPlan composed = compose_plan(*run.recipe, catalog, gpus_per_node(*run.recipe, *hardware), wants_schedule);
    run.results = run_executor(executor, *run.recipe, catalog, composed, *hardware);
    add_uncertainty(run.results, intervals, executor, comparable_class(*run.recipe, *hardware));
  } catch (const InputError& failure) {
    throw InputError(mention_overrides(failure.what(), overrides));
  }
  const ResultValue* fits = run.results.find("memory.fits");
  run.fits = !(fits && std::holds_alternative<bool>(*fits) && !std::get<bool>(*fits));
  return run;
}

int report_plan(const std::string& executor, const CommonOptions& common, const std::string& recipe_file,
                const std::vector<std::string>& overrides, const PlanReportOptions& options) {
  configure_logging(common);
  PluginCatalog catalog = scan_plugins(common);
  IntervalTable storage;
  const IntervalTable& intervals = interval_table(options.intervals_file, storage);  // a bad file fails before the run
  const PlanRun run = run_plan(executor, catalog, recipe_file, overrides, intervals);
  if (common.json)
    report_stream() << dump_json(run.results.to_json()) << "\n";
  else
    write_text_report(report_stream(), run.results);
  if (!options.html_file.empty()) write_plan_page(options, executor, *run.recipe, run.results, !run.fits);
  if (!run.fits) throw PlanError(run.recipe->file + ": the plan does not fit in GPU memory (see memory.* in the report)");
  return kExitOk;
}

void add_intervals_option(boost::program_options::options_description& options, std::string& intervals_file) {
  options.add_options()("intervals", boost::program_options::value(&intervals_file)->value_name("FILE.json"),
                        "prediction intervals from these residuals (paraplan validate --write-intervals on your own\n"
                        "measured runs) instead of the shipped ones");
}

}  // namespace paraplan::host
