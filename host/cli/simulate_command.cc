// `paraplan simulate RECIPE`: compose the recipe's plan and replay one step of it with the
// simulate executor (discrete events, op by op), optionally writing a Chrome trace.
#include <filesystem>

#include "host/cli/command.h"
#include "host/cli/common_options.h"
#include "host/cli/plan_command.h"
#include "host/core/errors.h"
#include "host/core/temporary_directory.h"
#include "host/recipe/recipe_overrides.h"

namespace po = boost::program_options;

namespace paraplan::host {

int run_simulate_command(const std::vector<std::string>& arguments) {
  CommonOptions common;
  std::string recipe_file, trace_file, ranks;
  std::vector<std::string> overrides;
  PlanReportOptions report_options;
  po::options_description options("Simulate options");
  options.add_options()("trace", po::value(&trace_file)->value_name("FILE.json"),
                        "write the timeline as Chrome trace event JSON (open it in ui.perfetto.dev or "
                        "chrome://tracing)")(
      "ranks", po::value(&ranks)->value_name("stage|all"),
      "stage (default): one representative rank per pipeline stage; all: every rank of the cluster");
  add_intervals_option(options, report_options.intervals_file);
  add_html_option(options, report_options.html_file);
  parse_recipe_command(arguments, options, common, recipe_file, overrides);
  if (common.help || recipe_file.empty()) {
    print_command_help(
        "paraplan simulate RECIPE [options]",
        "Builds the training plan the recipe describes and simulates one optimizer step, event by event:\n"
        "each rank runs its pipeline stage's schedule op by op on a compute stream and one stream per kind\n"
        "of communication; a collective starts when its slowest member reaches it; transfers that share a\n"
        "link share its bandwidth. Reports the step time, the pipeline bubble as it really runs, how busy\n"
        "every stream is, and the peak memory of each stage. Executor settings ([executor.simulate] in the\n"
        "recipe, or --set executor.simulate.KEY=VALUE): expert_imbalance, straggler_rank,\n"
        "straggler_slowdown, runtime_overhead_gib (paraplan plugins describe simulate).",
        options,
        "Exit codes: 0 the plan fits; 1 the plan is invalid or does not fit in memory (the report still\n"
        "prints); 2 usage error; 3 input error (file, TOML, schema, plugin, unwritable trace); 4 internal error.\n\n"
        "Examples:\n"
        "  paraplan simulate recipes/scenarios/seed1-llama2-70b-4k-64xh100.toml --trace seed1.json\n"
        "  paraplan simulate recipes/simulate/gpt3-175b-512xa100.toml --ranks all --json\n"
        "  paraplan simulate simulate/llama2-7b-interleaved-fsdp3-32xh100 --html step.html\n");
    return common.help ? kExitOk : kExitUsage;
  }
  if (!ranks.empty()) {
    if (ranks != "stage" && ranks != "all")
      throw UsageError("--ranks " + ranks + ": expected 'stage' (one rank per pipeline stage) or 'all'");
    overrides.push_back("executor.simulate.ranks=" + override_string(ranks));
  }
  // The page draws the trace: without --trace it is written to a directory of its own, then removed.
  const TemporaryDirectory scratch("simulate_html");
  if (trace_file.empty() && !report_options.html_file.empty()) {
    if (scratch.path().empty()) throw InputError(report_options.html_file + ": no temporary directory for the trace to draw");
    trace_file = (scratch.path() / "trace.json").string();
  }
  if (!trace_file.empty()) {
    report_options.trace_file = std::filesystem::absolute(trace_file).string();
    overrides.push_back("executor.simulate.trace=" + override_string(report_options.trace_file));
  }
  return report_plan("simulate", common, recipe_file, overrides, report_options);
}

}  // namespace paraplan::host
