// `paraplan recipes [--data]`: the recipes and measured-run data sets paraplan ships, which every
// recipe command (and validate) takes by name from any directory.
#include <nlohmann/json.hpp>

#include <iomanip>
#include <sstream>

#include <toml++/toml.h>

#include "host/cli/command.h"
#include "host/cli/common_options.h"
#include "host/core/errors.h"
#include "host/recipe/shipped_files.h"
#include "host/report/report_output.h"

namespace po = boost::program_options;

namespace paraplan::host {
namespace {

// A recipe's own one-line description ("" when it has none): what it is for, at a glance.
std::string description_of(const ShippedFile& file) {
  try {
    return toml::parse_file(file.path.string())["description"].value_or(std::string());
  } catch (const toml::parse_error&) {
    return "";
  }
}

}  // namespace

int run_recipes_command(const std::vector<std::string>& arguments) {
  CommonOptions common;
  bool data = false;
  po::options_description options("Options");
  options.add_options()("data", po::bool_switch(&data), "list the measured-run data sets (for validate) instead");
  options.add(common_options(common, /*with_json=*/true));
  po::variables_map variables;
  parse_arguments(arguments, options, {}, variables);
  if (common.help) {
    print_command_help(
        "paraplan recipes [--data] [options]",
        "Lists the recipes paraplan ships (or, with --data, the measured training runs), found where\n"
        "`cmake --install` put them (<prefix>/share/paraplan/recipes) or in the source tree. Every command\n"
        "that reads a recipe takes one of these names in place of a file, from any directory: the name\n"
        "below, or only its last part when no other recipe has it. A file of that name in the current\n"
        "directory comes first.",
        options,
        "Examples:\n  paraplan evaluate seed1-llama2-70b-4k-64xh100\n  paraplan search search/gpt3-175b-512xa100\n"
        "  paraplan validate published\n");
    return kExitOk;
  }
  configure_logging(common);
  const std::vector<ShippedFile> files = list_shipped_files(data ? ShippedKind::kMeasuredRuns : ShippedKind::kRecipe);
  if (common.json) {
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const ShippedFile& file : files) {
      nlohmann::ordered_json row = {{"name", file.name}, {"stem", file.stem}, {"path", file.path.string()}};
      if (!data) row["description"] = description_of(file);
      rows.push_back(row);
    }
    report_stream() << dump_json(nlohmann::ordered_json{{data ? "data_sets" : "recipes", rows}}) << "\n";
    return kExitOk;
  }
  size_t width = 4;
  for (const ShippedFile& file : files) width = std::max(width, file.name.size());
  std::ostringstream text;
  for (const ShippedFile& file : files)
    text << std::left << std::setw(static_cast<int>(width) + 2) << file.name << (data ? file.path.string() : description_of(file))
         << "\n";
  if (files.empty()) text << "(none found in " << shipped_roots().size() << " places: is paraplan installed?)\n";
  report_stream() << text.str();
  return kExitOk;
}

}  // namespace paraplan::host
