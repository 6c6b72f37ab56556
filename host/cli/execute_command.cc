// `paraplan execute RECIPE`: run the recipe's plan for real through an executor that runs on a
// machine (the bundled `mpi`: one process per GPU of the plan), and set the predictions of the
// analytic model and the simulator for the same plan on the same hardware profile beside the
// measurement.
#include <filesystem>
#include <iostream>

#include "host/cli/command.h"
#include "host/cli/common_options.h"
#include "host/core/errors.h"
#include "host/execute/model_scaling.h"
#include "host/plan/composer.h"
#include "host/plan/execution.h"
#include "host/plan/hardware_binding.h"
#include "host/recipe/recipe_overrides.h"
#include "host/recipe/recipe_reader.h"
#include "host/report/text_report.h"
#include "host/report/report_output.h"

namespace po = boost::program_options;

namespace paraplan::host {
namespace {

// predicted.<model>.step_s and its error against the measurement, in percent of the measurement.
void add_prediction(ResultTree& report, const std::string& model, const ResultTree& predicted, double measured) {
  const double step = predicted.number("time.step_s").value_or(0.0);
  report.set("predicted." + model + ".step_s", step);
  if (measured > 0) report.set("predicted." + model + ".error_pct", (step - measured) / measured * 100.0);
}

}  // namespace

int run_execute_command(const std::vector<std::string>& arguments) {
  CommonOptions common;
  std::string recipe_file, trace_file, executor = "mpi";
  int64_t ranks = 0, steps = 0;
  double scale = 1.0, timeout_s = 0;
  bool verify = false;
  std::vector<std::string> overrides;
  po::options_description options("Execute options");
  options.add_options()("ranks", po::value(&ranks)->value_name("N"),
                        "processes to run (one per GPU of the plan; default: the plan's GPU count, which N must equal)")(
      "scale", po::value(&scale)->value_name("F"),
      "scale the model's widths and sequence by F in (0, 1] (layers, heads, batch and degrees kept): "
      "a big plan's structure at a size this machine runs")(
      "steps", po::value(&steps)->value_name("K"), "measured steps, after one warm-up (default 5; the median is reported)")(
      "verify", po::bool_switch(&verify),
      "check every collective's and message's result against rank-dependent values (a wrong group, peer or order fails)")(
      "trace", po::value(&trace_file)->value_name("FILE.json"),
      "write the last measured step of every rank as Chrome trace JSON (as paraplan simulate does)")(
      "timeout", po::value(&timeout_s)->value_name("SECONDS"), "end the whole job after this long (default 600)")(
      "executor", po::value(&executor)->value_name("NAME"), "executor plugin that runs the plan (default: mpi)");
  parse_recipe_command(arguments, options, common, recipe_file, overrides);
  if (common.help || recipe_file.empty()) {
    print_command_help(
        "paraplan execute RECIPE [options]",
        "Runs one optimizer step of the recipe's plan for real, several times, and measures it. The mpi\n"
        "executor starts one MPI process per GPU of the plan (mpirun; --oversubscribe when they outnumber\n"
        "the cores): each runs its pipeline stage's program op by op, the GEMMs and memory-bound kernels\n"
        "in fp32 through OpenBLAS and the communication as MPI collectives (one communicator per mesh\n"
        "axis) and point-to-point messages in the schedule's order. Beside the measured step it prints\n"
        "what the analytic model (evaluate) and the simulator (simulate) predict for the same plan on the\n"
        "recipe's hardware: name a profile measured by `paraplan calibrate` as the recipe's hardware\n"
        "(--set cluster.hardware=machine.toml) to predict this machine. Started under your own mpirun\n"
        "(mpirun -np N paraplan execute ...), it runs as that job's ranks instead.",
        options,
        "Exit codes: 0 ran; 1 the plan is invalid; 2 usage error; 3 input error (file, TOML, schema, plugin,\n"
        "a rank count that is not the plan's) or the job failed (the rank's reason on stderr above the\n"
        "error), timed out or could not start; 4 internal error.\n\n"
        "Examples:\n"
        "  paraplan calibrate --ranks 2 --out machine.toml\n"
        "  paraplan execute recipes/execute/tp2-2ranks.toml --set cluster.hardware=machine.toml\n"
        "  paraplan execute recipes/execute/pp2-1f1b-2ranks.toml --verify --trace pp2.json\n"
        "  paraplan execute recipes/scenarios/seed5-llama2-7b-fsdp3-scaling.toml --scale 0.0625\n");
    return common.help ? kExitOk : kExitUsage;
  }
  const std::string prefix = "executor." + executor + ".";
  // 0: the executor's own default (its schema says so, and bounds what a recipe may set).
  if (checked_integer("ranks", ranks, 0, 1 << 16) > 0) overrides.push_back(prefix + "ranks=" + std::to_string(ranks));
  if (checked_integer("steps", steps, 0, 100000) > 0) overrides.push_back(prefix + "steps=" + std::to_string(steps));
  if (verify) overrides.push_back(prefix + "verify=true");
  if (checked_number("timeout", timeout_s, 0, 7 * 86400.0) > 0)
    overrides.push_back(prefix + "timeout_s=" + std::to_string(timeout_s));
  if (!trace_file.empty())
    overrides.push_back(prefix + "trace=" + override_string(std::filesystem::absolute(trace_file).string()));

  configure_logging(common);
  PluginCatalog catalog = scan_plugins(common);
  RecipeReaderOptions reader_options;
  reader_options.overrides = overrides;
  ResultTree report;
  try {
    std::unique_ptr<Recipe> recipe = read_recipe(recipe_file, reader_options);
    scale_model(recipe->model, scale);
    std::unique_ptr<HardwareBinding> hardware = open_hardware(*recipe, catalog);
    catalog.require(executor, PP_KIND_EXECUTOR);
    ComposedPlan composed = compose_plan(*recipe, catalog, gpus_per_node(*recipe, *hardware), /*with_schedule=*/true);
    const ResultTree evaluated = run_executor("analytic", *recipe, catalog, composed, *hardware);
    const ResultTree simulated = run_executor("simulate", *recipe, catalog, composed, *hardware);
    report = run_executor(executor, *recipe, catalog, composed, *hardware);
    report.set("execution.scale", scale);
    report.set("execution.model_shape", describe_model_shape(recipe->model.shape));
    const double measured = report.number("measured.step_s").value_or(0.0);
    add_prediction(report, "evaluate", evaluated, measured);
    add_prediction(report, "simulate", simulated, measured);
    // The simulator walks the same per-rank programs the executor ran: its figure is the prediction.
    report.set("predicted.step_s", simulated.number("time.step_s").value_or(0.0));
  } catch (const InputError& failure) {
    throw InputError(mention_overrides(failure.what(), overrides));
  }
  if (common.json)
    report_stream() << dump_json(report.to_json()) << "\n";
  else
    write_text_report(report_stream(), report);
  return kExitOk;
}

}  // namespace paraplan::host
