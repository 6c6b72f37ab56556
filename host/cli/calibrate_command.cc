// `paraplan calibrate`: measure this machine through an executor that runs plans on it (the
// bundled `mpi`) and write the hardware profile it reports, which recipes then name as their
// hardware so `evaluate` and `simulate` predict this machine.
#include <toml++/toml.h>
#include <unistd.h>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "host/cli/command.h"
#include "host/cli/common_options.h"
#include "host/core/errors.h"
#include "host/plugin/plugin_instance.h"
#include "host/recipe/param_values.h"
#include "host/report/result_tree.h"
#include "host/report/report_output.h"
#include "host/plugin/abi_history.h"

namespace po = boost::program_options;

namespace paraplan::host {

int run_calibrate_command(const std::vector<std::string>& arguments) {
  CommonOptions common;
  std::string out_file, executor = "mpi";
  int64_t ranks = 2;
  bool full = false;
  po::options_description options("Calibrate options");
  options.add_options()("ranks", po::value(&ranks)->value_name("N"),
                        "processes to measure with, the way plans of N GPUs will run (default 2)")(
      "out", po::value(&out_file)->value_name("FILE.toml"), "write the profile here (default: print it)")(
      "full", po::bool_switch(&full), "larger sweeps and more repetitions (minutes instead of seconds)")(
      "executor", po::value(&executor)->value_name("NAME"), "executor plugin that measures (default: mpi)");
  options.add(common_options(common, /*with_json=*/true));
  po::variables_map variables;
  parse_arguments(arguments, options, po::positional_options_description(), variables);
  if (common.help) {
    print_command_help(
        "paraplan calibrate [options]",
        "Measures this machine the way the executor runs plans on it, as nccl-tests and GEMM benchmarks do:\n"
        "fp32 GEMM throughput over a sweep of sizes (peak and half-efficiency size fitted), memory\n"
        "bandwidth, and for every collective (all-reduce, all-gather, reduce-scatter, all-to-all) and group\n"
        "size a latency/bandwidth sweep reported as bus bandwidth, with latency (alpha) and bandwidth\n"
        "(1/beta) fitted. Writes a hardware profile in the toml plugin's format (docs/hardware.md): name\n"
        "it as a recipe's hardware and evaluate, simulate and execute predict this machine.",
        options,
        "Exit codes: 0 measured; 2 usage error; 3 input error (plugin, unwritable file) or the measurement\n"
        "failed or timed out; 4 internal error.\n\n"
        "Example:\n"
        "  paraplan calibrate --ranks 2 --out machine.toml\n"
        "  paraplan execute recipes/execute/dp2-2ranks.toml --set cluster.hardware=machine.toml\n");
    return kExitOk;
  }
  checked_integer("ranks", ranks, 1, 1 << 16);
  configure_logging(common);
  PluginCatalog catalog = scan_plugins(common);
  const LoadedPlugin& plugin = catalog.require(executor, PP_KIND_EXECUTOR);
  const pp_executor_v1& functions = *plugin.metadata->executor;
  if (!holds_fields_of(plugin.abi_minor(), functions.struct_size, 4, &AbiMinorSizes::executor) || !functions.calibrate)
    throw InputError("executor '" + executor + "' cannot measure a machine (it has no calibrate function, SDK ABI 1.4)");
  // Before measuring, and without leaving a file behind if the measurement then fails.
  if (!out_file.empty()) {
    const std::filesystem::path directory = std::filesystem::absolute(out_file).parent_path();
    if (!std::filesystem::is_directory(directory) || access(directory.c_str(), W_OK) != 0)
      throw InputError("cannot write " + out_file + ": " + directory.string() + " is not a writable directory");
  }

  toml::table settings{{"ranks", ranks}, {"calibrate_full", full}};
  PluginInstance instance(plugin, ParamValues::bind(*plugin.metadata, &settings, "executor." + executor, "(command line)"),
                          "executor '" + executor + "'");
  ResultTree results;
  pp_result_sink_v1 sink = results.sink();
  instance.invoke([&](pp_error* error) { return functions.calibrate(instance.handle(), &sink, error); });

  const std::string profile = results.text("calibration.profile").value_or("");
  if (profile.empty()) return kExitOk;  // a rank of the measuring job: its launcher reports
  if (!out_file.empty()) {
    std::ofstream(out_file) << profile;
    results.set("calibration.file", out_file);
  }
  if (common.json) {
    report_stream() << dump_json(results.to_json()) << "\n";
    return kExitOk;
  }
  report_stream() << results.text("calibration.report").value_or("");
  if (out_file.empty())
    report_stream() << "\n" << profile;
  else
    report_stream() << "\nwrote " << out_file << ": name it as a recipe's hardware ([cluster] hardware = \"" << out_file
              << "\", or --set cluster.hardware=" << out_file << ")\n";
  return kExitOk;
}

}  // namespace paraplan::host
