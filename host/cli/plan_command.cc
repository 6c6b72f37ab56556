// The body of `evaluate` and `simulate` (plan_command.h).
#include "host/cli/plan_command.h"

#include <iostream>

#include "host/core/errors.h"
#include "host/plan/composer.h"
#include "host/plan/execution.h"
#include "host/plan/hardware_binding.h"
#include "host/recipe/recipe_overrides.h"
#include "host/recipe/recipe_reader.h"
#include "host/report/text_report.h"
#include "host/report/report_output.h"
#include "host/report/uncertainty_report.h"

namespace paraplan::host {

int report_plan(const std::string& executor, const CommonOptions& common, const std::string& recipe_file,
                const std::vector<std::string>& overrides, const std::string& intervals_file) {
  configure_logging(common);
  PluginCatalog catalog = scan_plugins(common);
  RecipeReaderOptions reader_options;
  reader_options.overrides = overrides;
  std::unique_ptr<Recipe> recipe;
  ResultTree results;
  try {
    recipe = read_recipe(recipe_file, reader_options);
    IntervalTable storage;
    const IntervalTable& intervals = interval_table(intervals_file, storage);  // a bad file fails before the run
    std::unique_ptr<HardwareBinding> hardware = open_hardware(*recipe, catalog);
    const LoadedPlugin& executor_plugin = catalog.require(executor, PP_KIND_EXECUTOR);
    const bool wants_schedule = executor_plugin.metadata->executor->flags & PP_EXECUTOR_WALKS_SCHEDULE;
    ComposedPlan composed = compose_plan(*recipe, catalog, gpus_per_node(*recipe, *hardware), wants_schedule);
    results = run_executor(executor, *recipe, catalog, composed, *hardware);
    add_uncertainty(results, intervals, executor, comparable_class(*recipe, *hardware));
  } catch (const InputError& failure) {
    throw InputError(mention_overrides(failure.what(), overrides));
  }

  if (common.json)
    report_stream() << dump_json(results.to_json()) << "\n";
  else
    write_text_report(report_stream(), results);
  const ResultValue* fits = results.find("memory.fits");
  if (fits && std::holds_alternative<bool>(*fits) && !std::get<bool>(*fits)) {
    throw PlanError(recipe->file + ": the plan does not fit in GPU memory (see memory.* in the report)");
  }
  return kExitOk;
}

void add_intervals_option(boost::program_options::options_description& options, std::string& intervals_file) {
  options.add_options()("intervals", boost::program_options::value(&intervals_file)->value_name("FILE.json"),
                        "prediction intervals from these residuals (paraplan validate --write-intervals on your own\n"
                        "measured runs) instead of the shipped ones");
}

}  // namespace paraplan::host
