#include "host/cli/common_options.h"

#include "host/core/edit_distance.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <cstdlib>
#include <sstream>
#include <iostream>

#include "host/core/errors.h"
#include "host/plugin/plugin_search_path.h"
#include "host/report/report_output.h"

namespace po = boost::program_options;

namespace paraplan::host {

po::options_description common_options(CommonOptions& options, bool with_json) {
  po::options_description description("Common options");
  description.add_options()
      ("help,h", po::bool_switch(&options.help), "show this help and exit")
      ("plugin-path", po::value(&options.plugin_paths)->composing()->value_name("DIR"),
       "search DIR (an absolute path) for plugins before PARAPLAN_PLUGIN_PATH and <exe>/../lib/paraplan/plugins "
       "(repeatable); a plugin found here replaces a bundled one of the same name")
      ("allow-insecure-plugins", po::bool_switch(&options.allow_insecure_plugins),
       "load plugins from directories or files anyone may write to, or that belong to another user (warned about)")
      ("verbose,v", po::bool_switch(&options.verbose), "log progress (info level) to stderr")
      ("debug", po::bool_switch(&options.debug), "log everything, including each plugin file examined")
      ("quiet,q", po::bool_switch(&options.quiet), "log errors only");
  if (with_json)
    description.add_options()("json", po::bool_switch(&options.json), "print the report as JSON on stdout");
  return description;
}

void parse_arguments(const std::vector<std::string>& arguments, const po::options_description& options,
                     const po::positional_options_description& positional, po::variables_map& variables) {
  try {
    po::store(po::command_line_parser(arguments).options(options).positional(positional).run(), variables);
    po::notify(variables);
  } catch (const po::unknown_option& failure) {
    // The command's own options, for a misspelt one ("--sett" is "--set").
    std::vector<std::string> names;
    for (const auto& option : options.options())
      if (!option->long_name().empty() && option->long_name() != "recipe" && option->long_name() != "action" &&
          option->long_name() != "name")
        names.push_back("--" + option->long_name());
    const std::string typed = failure.get_option_name();
    throw UsageError(std::string(failure.what()) + did_you_mean(typed.substr(0, typed.find('=')), names));
  } catch (const po::error& failure) {
    throw UsageError(failure.what());
  }
}

void parse_action_command(const std::vector<std::string>& arguments, const po::options_description& options,
                          std::string& action, std::string& name) {
  po::options_description hidden;
  hidden.add_options()("action", po::value(&action))("name", po::value(&name));
  po::options_description all;
  all.add(options).add(hidden);
  po::positional_options_description positional;
  positional.add("action", 1).add("name", 1);
  po::variables_map variables;
  parse_arguments(arguments, all, positional, variables);
}

void parse_recipe_command(const std::vector<std::string>& arguments, po::options_description& options,
                          CommonOptions& common, std::string& recipe_file, std::vector<std::string>& overrides) {
  options.add_options()("set", po::value(&overrides)->composing()->value_name("KEY=VALUE"),
                        "override a recipe key before reading it (repeatable): cluster.num_gpus=512, "
                        "strategy.tp.degree=8");
  options.add(common_options(common, /*with_json=*/true));
  po::options_description hidden;
  hidden.add_options()("recipe", po::value(&recipe_file));
  po::options_description all;
  all.add(options).add(hidden);
  po::positional_options_description positional;
  positional.add("recipe", 1);
  po::variables_map variables;
  parse_arguments(arguments, all, positional, variables);
}

int64_t checked_integer(const std::string& option, int64_t value, int64_t min, int64_t max) {
  if (value < min || value > max)
    throw UsageError("--" + option + " " + std::to_string(value) + ": expected an integer in [" + std::to_string(min) + ", " +
                     std::to_string(max) + "]");
  return value;
}

double checked_number(const std::string& option, double value, double min, double max) {
  if (!std::isfinite(value) || value < min || value > max) {
    std::ostringstream text;
    text << "--" << option << " " << value << ": expected a number in [" << min << ", " << max << "]";
    throw UsageError(text.str());
  }
  return value;
}

void add_html_option(po::options_description& options, std::string& html_file) {
  options.add_options()("html", po::value(&html_file)->value_name("FILE.html"),
                        "also write the report as one self-contained HTML page with its charts (opens offline)");
}

void configure_logging(const CommonOptions& options) {
  auto logger = spdlog::get("paraplan");
  if (!logger) logger = spdlog::stderr_color_mt("paraplan");
  logger->set_pattern("paraplan: %l: %v");
  spdlog::set_default_logger(logger);
  spdlog::level::level_enum level = spdlog::level::warn;
  if (options.verbose) level = spdlog::level::info;
  if (options.debug) level = spdlog::level::debug;
  if (options.quiet) level = spdlog::level::err;
  spdlog::set_level(level);
}

PluginCatalog scan_plugins(const CommonOptions& options) {
  const std::vector<PluginDirectory> directories =
      plugin_search_path(options.plugin_paths, std::getenv("PARAPLAN_PLUGIN_PATH"), installation_prefix());
  ScanOptions scan;
  scan.allow_insecure = options.allow_insecure_plugins;
  scan.timeout_s = plugin_scan_timeout();
  PluginCatalog catalog = PluginCatalog::scan(directories, scan);
  spdlog::info("{} plugins found, {} files skipped", catalog.records().size(), catalog.skipped().size());
  return catalog;
}

void print_command_help(const std::string& usage, const std::string& summary, const po::options_description& options,
                        const std::string& epilogue) {
  report_stream() << "Usage: " << usage << "\n\n" << summary << "\n\n" << options;
  if (!epilogue.empty()) report_stream() << "\n" << epilogue;
}

}  // namespace paraplan::host
