// paraplan/host/cli/common_options.h: options every command accepts, and their effects.
#pragma once

#include <boost/program_options.hpp>

#include <string>
#include <vector>

#include "host/plugin/plugin_catalog.h"

namespace paraplan::host {

struct CommonOptions {
  std::vector<std::string> plugin_paths;
  bool verbose = false;
  bool debug = false;
  bool quiet = false;
  bool json = false;
  bool help = false;
  bool allow_insecure_plugins = false;
};

// --help, -v/--verbose, --debug, -q/--quiet, --plugin-path, --allow-insecure-plugins, and --json when
// `with_json`.
boost::program_options::options_description common_options(CommonOptions& options, bool with_json);

// Parses `arguments` into `variables`; a malformed command line throws UsageError (exit 2).
void parse_arguments(const std::vector<std::string>& arguments,
                     const boost::program_options::options_description& options,
                     const boost::program_options::positional_options_description& positional,
                     boost::program_options::variables_map& variables);

// The command line of a command with actions (`plugins describe NAME`, `hardware show NAME`):
// `options`, then the action and its one argument as positionals ("" when not given).
void parse_action_command(const std::vector<std::string>& arguments,
                          const boost::program_options::options_description& options, std::string& action,
                          std::string& name);

// The command line of a command that reads one recipe (evaluate, search, advise): the command's
// `options`, then --set KEY=VALUE (recipe_overrides.h) into `overrides` and the common options
// (both appended to `options`, so its help lists them), and the positional RECIPE.
void parse_recipe_command(const std::vector<std::string>& arguments, boost::program_options::options_description& options,
                          CommonOptions& common, std::string& recipe_file, std::vector<std::string>& overrides);

// A numeric option's value, or UsageError "--top -1: expected an integer in [1, 1000000]" when it is
// outside [min, max] (or, for a number, not finite). Integer options are parsed as int64 first, so
// "-1" never wraps to an unsigned count.
int64_t checked_integer(const std::string& option, int64_t value, int64_t min, int64_t max);
double checked_number(const std::string& option, double value, double min, double max);

// --html FILE.html, which evaluate, simulate and validate share (report/html_report.h).
void add_html_option(boost::program_options::options_description& options, std::string& html_file);

// Sets the log level (warnings by default) and sends logs to stderr, keeping stdout for reports.
void configure_logging(const CommonOptions& options);

// Scans the plugin search path (plugin_search_path.h) for this invocation.
PluginCatalog scan_plugins(const CommonOptions& options);

// "Usage: paraplan evaluate RECIPE [options]\n\n<summary>\n\nOptions:\n..." on stdout.
void print_command_help(const std::string& usage, const std::string& summary,
                        const boost::program_options::options_description& options, const std::string& epilogue = "");

}  // namespace paraplan::host
