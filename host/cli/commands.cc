// The command table, top-level usage and error-to-exit-code mapping of the paraplan executable.
#include <iostream>

#include "host/cli/command.h"
#include "host/core/edit_distance.h"
#include "host/core/errors.h"
#include "host/report/report_output.h"
#include "paraplan/abi.h"

namespace paraplan::host {

const std::vector<Command>& all_commands() {
  static const std::vector<Command> commands = {
      {"recipes", "list the shipped recipes (and measured runs), which commands take by name", &run_recipes_command},
      {"plugins", "list the installed plugins, or describe one and its recipe keys", &run_plugins_command},
      {"evaluate", "evaluate a recipe's plan: memory, communication, step time, MFU", &run_evaluate_command},
      {"simulate", "simulate one step event by event: pipeline schedule, overlap, stragglers; Chrome trace",
       &run_simulate_command},
      {"export", "write a recipe's plan for Megatron-LM, torchtitan, DeepSpeed or ASTRA-sim (Chakra)",
       &run_export_command},
      {"execute", "run a recipe's plan on MPI ranks with real GEMMs and collectives; measured vs predicted",
       &run_execute_command},
      {"hardware", "print a hardware profile as TOML, to copy and change (or to start another from)",
       &run_hardware_command},
      {"calibrate", "measure this machine (GEMMs, memory, collectives) into a hardware profile TOML",
       &run_calibrate_command},
      {"search", "find the best composition of strategies for a recipe's model and cluster", &run_search_command},
      {"advise", "climb the rule-of-thumb ladder and compare its plan with the searched optimum", &run_advise_command},
      {"validate", "predict measured training runs and report the error", &run_validate_command},
  };
  return commands;
}

namespace {

void print_usage() {
  report_stream() << "Usage: paraplan COMMAND [options]   (paraplan COMMAND --help for each command)\n\n"
               "paraplan composes parallelism strategies (data, tensor, pipeline, sequence, expert) from\n"
               "a TOML recipe into a training plan, and evaluates it against a hardware profile.\n"
               "Strategies, hardware profiles and executors are plugins.\n\nCommands:\n";
  for (const Command& command : all_commands()) report_stream() << "  " << command.name << std::string(12 - std::string(command.name).size(), ' ') << command.summary << "\n";
  report_stream() << "\nExit codes: 0 success; 1 the plan is invalid or does not fit; 2 usage error;\n"
               "3 input error (file, TOML, schema, plugin); 4 internal error (a bug: please report it).\n"
               "Environment: PARAPLAN_PLUGIN_PATH (plugin directories), PARAPLAN_MODEL_PATH (model presets).\n";
}

int dispatch(const std::vector<std::string>& arguments) {
  if (arguments.empty() || arguments[0] == "--help" || arguments[0] == "-h" || arguments[0] == "help") {
    print_usage();
    return arguments.empty() ? kExitUsage : kExitOk;
  }
  if (arguments[0] == "--version") {
    report_stream() << "paraplan " << PARAPLAN_VERSION << " (SDK ABI " << PP_ABI_MAJOR << "." << PP_ABI_MINOR << ")\n";
    return kExitOk;
  }
  std::vector<std::string> names;
  for (const Command& command : all_commands()) {
    names.push_back(command.name);
    if (arguments[0] == command.name) return command.run({arguments.begin() + 1, arguments.end()});
  }
  throw UsageError("unknown command '" + arguments[0] + "'" + did_you_mean(arguments[0], names) +
                   "; see 'paraplan --help'");
}

}  // namespace

int run_command_line(const std::vector<std::string>& arguments, std::ostream& errors) {
  try {
    return dispatch(arguments);
  } catch (const HostError& failure) {
    errors << "paraplan: error: " << failure.what() << "\n";
    return failure.exit_code();
  } catch (const std::exception& failure) {
    errors << "paraplan: internal error: " << failure.what() << "\n";
    return kExitInternal;
  }
}

}  // namespace paraplan::host

