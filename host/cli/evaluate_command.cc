// `paraplan evaluate RECIPE`: compose the recipe's plan and run the analytic cost model on it.
#include <iostream>

#include "host/cli/command.h"
#include "host/cli/common_options.h"
#include "host/core/errors.h"
#include "host/plan/composer.h"
#include "host/plan/execution.h"
#include "host/plan/hardware_binding.h"
#include "host/recipe/recipe_overrides.h"
#include "host/recipe/recipe_reader.h"
#include "host/report/text_report.h"

namespace po = boost::program_options;

namespace paraplan::host {

int run_evaluate_command(const std::vector<std::string>& arguments) {
  CommonOptions common;
  std::string recipe_file;
  std::string executor = "analytic";
  std::vector<std::string> overrides;
  po::options_description options("Evaluate options");
  options.add_options()("executor", po::value(&executor)->value_name("NAME"),
                        "executor plugin that turns the plan into figures (default: analytic)");
  parse_recipe_command(arguments, options, common, recipe_file, overrides);
  if (common.help || recipe_file.empty()) {
    print_command_help(
        "paraplan evaluate RECIPE [options]",
        "Builds the training plan the recipe describes (model, training, cluster, [[strategy]] list)\n"
        "and evaluates it: memory per GPU against capacity, communication per strategy, time per step,\n"
        "throughput and MFU.",
        options,
        "Exit codes: 0 the plan fits; 1 the plan is invalid or does not fit in memory (the report still\n"
        "prints); 2 usage error; 3 input error (file, TOML, schema, plugin); 4 internal error.\n\n"
        "Example:\n  paraplan evaluate recipes/llama2-7b-fsdp-64xh100.toml --json\n");
    return common.help ? kExitOk : kExitUsage;
  }
  configure_logging(common);
  PluginCatalog catalog = scan_plugins(common);
  RecipeReaderOptions reader_options;
  reader_options.overrides = overrides;
  std::unique_ptr<Recipe> recipe;
  ResultTree results;
  try {
    recipe = read_recipe(recipe_file, reader_options);
    std::unique_ptr<HardwareBinding> hardware = open_hardware(*recipe, catalog);
    const LoadedPlugin& executor_plugin = catalog.require(executor, PP_KIND_EXECUTOR);
    const bool wants_schedule = executor_plugin.metadata->executor->flags & PP_EXECUTOR_WALKS_SCHEDULE;
    ComposedPlan composed = compose_plan(*recipe, catalog, gpus_per_node(*recipe, *hardware), wants_schedule);
    results = run_executor(executor, *recipe, catalog, composed, *hardware);
  } catch (const InputError& failure) {
    throw InputError(mention_overrides(failure.what(), overrides));
  }

  if (common.json)
    std::cout << results.to_json().dump(2) << "\n";
  else
    write_text_report(std::cout, results);
  const ResultValue* fits = results.find("memory.fits");
  if (fits && std::holds_alternative<bool>(*fits) && !std::get<bool>(*fits)) {
    throw PlanError(recipe->file + ": the plan does not fit in GPU memory (see memory.* in the report)");
  }
  return kExitOk;
}

}  // namespace paraplan::host
