// paraplan/host/cli/command.h: the subcommands of the paraplan executable.
//
// Each command parses its own arguments (common_options.h gives the shared ones), prints its
// report to stdout and returns an exit code; errors are thrown as HostError (core/errors.h) and
// printed by main() as one line on stderr.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace paraplan::host {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const std::vector<std::string>& arguments);
};

int run_plugins_command(const std::vector<std::string>& arguments);
int run_evaluate_command(const std::vector<std::string>& arguments);
int run_simulate_command(const std::vector<std::string>& arguments);
int run_export_command(const std::vector<std::string>& arguments);
int run_execute_command(const std::vector<std::string>& arguments);
int run_calibrate_command(const std::vector<std::string>& arguments);
int run_search_command(const std::vector<std::string>& arguments);
int run_advise_command(const std::vector<std::string>& arguments);
int run_validate_command(const std::vector<std::string>& arguments);
int run_hardware_command(const std::vector<std::string>& arguments);
int run_recipes_command(const std::vector<std::string>& arguments);

// Every command, in the order `paraplan --help` lists them.
const std::vector<Command>& all_commands();

// Runs a whole command line (without argv[0]); errors become one line on `errors` and the
// documented exit code (core/errors.h).
int run_command_line(const std::vector<std::string>& arguments, std::ostream& errors);

}  // namespace paraplan::host
