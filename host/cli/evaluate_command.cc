// `paraplan evaluate RECIPE`: compose the recipe's plan and run the analytic cost model on it.
#include "host/cli/command.h"
#include "host/cli/common_options.h"
#include "host/cli/plan_command.h"
#include "host/cli/plan_sweep.h"
#include "host/core/errors.h"

namespace po = boost::program_options;

namespace paraplan::host {

int run_evaluate_command(const std::vector<std::string>& arguments) {
  CommonOptions common;
  std::string recipe_file;
  std::string executor = "analytic";
  std::vector<std::string> overrides;
  PlanReportOptions report_options;
  std::string sweep;
  po::options_description options("Evaluate options");
  options.add_options()("executor", po::value(&executor)->value_name("NAME"),
                        "executor plugin that turns the plan into figures (default: analytic)")(
      "sweep", po::value(&sweep)->value_name("KEY=V1,V2,..."),
      "evaluate the plan once per value of one recipe key (each as --set KEY=V) and compare them:\n"
      "step time, throughput, MFU, memory; with --html, throughput and MFU against the value");
  add_intervals_option(options, report_options.intervals_file);
  add_html_option(options, report_options.html_file);
  parse_recipe_command(arguments, options, common, recipe_file, overrides);
  if (common.help || recipe_file.empty()) {
    print_command_help(
        "paraplan evaluate RECIPE [options]",
        "Builds the training plan the recipe describes (model, training, cluster, [[strategy]] list)\n"
        "and evaluates it: memory per GPU against capacity, communication per strategy, time per step,\n"
        "throughput and MFU.",
        options,
        "With --sweep the global batch stays as the recipe sets it (strong scaling); sweep it too with\n"
        "--set, or sweep training.global_batch. A value whose plan is invalid is reported in its row.\n\n"
        "Exit codes: 0 the plan fits (every swept plan); 1 the plan is invalid or does not fit in memory (the report still\n"
        "prints); 2 usage error; 3 input error (file, TOML, schema, plugin); 4 internal error.\n\n"
        "Examples:\n  paraplan evaluate recipes/llama2-7b-fsdp-64xh100.toml --json\n"
        "  paraplan evaluate seed1-llama2-70b-4k-64xh100 --html seed1.html\n"
        "  paraplan evaluate seed1-llama2-70b-4k-64xh100 --sweep cluster.num_gpus=64,128,256,512 --html scaling.html\n");
    return common.help ? kExitOk : kExitUsage;
  }
  if (!sweep.empty()) return report_sweep(executor, common, recipe_file, overrides, parse_sweep(sweep), report_options);
  return report_plan(executor, common, recipe_file, overrides, report_options);
}

}  // namespace paraplan::host
