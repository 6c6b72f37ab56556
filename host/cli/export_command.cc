// `paraplan export RECIPE --to NAME`: compose the recipe's plan (or, with --best, the search's
// winner) and write it in a training engine's terms through an exporter plugin.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "host/cli/command.h"
#include "host/cli/common_options.h"
#include "host/core/errors.h"
#include "host/export/exporting.h"
#include "host/plan/composer.h"
#include "host/plan/hardware_binding.h"
#include "host/recipe/recipe_overrides.h"
#include "host/recipe/recipe_reader.h"
#include "host/search/search_engine.h"
#include "host/search/search_report.h"
#include "host/report/report_output.h"

namespace po = boost::program_options;

namespace paraplan::host {
namespace {

// Whether `path` lies inside `root` (both canonical).
bool inside(const std::filesystem::path& path, const std::filesystem::path& root) {
  auto mismatch = std::mismatch(root.begin(), root.end(), path.begin(), path.end());
  return mismatch.first == root.end();
}

// Writes the files under `directory`, never through a symbolic link: a link already there (left
// by someone else, or by an earlier export) must not send a file outside the directory.
void write_files(const std::filesystem::path& directory, const ExportResult& result) {
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  const std::filesystem::path root = std::filesystem::canonical(directory, error);
  if (error) throw InputError(directory.string() + ": cannot create the output directory (" + error.message() + ")");
  for (const ExportedFile& file : result.files) {
    const std::filesystem::path path = root / file.name;
    std::filesystem::create_directories(path.parent_path(), error);
    const std::filesystem::path parent = std::filesystem::canonical(path.parent_path(), error);
    if (error || !inside(parent, root))
      throw InputError((directory / file.name).string() + ": refused: a symbolic link on its way leads out of the output "
                       "directory " + root.string());
    const int descriptor = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (descriptor < 0)
      throw InputError((directory / file.name).string() + ": cannot write the exported file (" +
                       (errno == ELOOP ? std::string("it is a symbolic link") : std::string(std::strerror(errno))) + ")");
    size_t written = 0;
    while (written < file.data.size()) {
      const ssize_t step = ::write(descriptor, file.data.data() + written, file.data.size() - written);
      if (step < 0 && errno == EINTR) continue;
      if (step <= 0) break;
      written += static_cast<size_t>(step);
    }
    const bool closed = ::close(descriptor) == 0;
    if (written != file.data.size() || !closed) throw InputError(path.string() + ": cannot write the exported file");
  }
}

nlohmann::ordered_json json_report(const std::string& exporter, const std::string& directory, const ExportResult& result) {
  nlohmann::ordered_json report{{"exporter", exporter}, {"files", nlohmann::ordered_json::array()},
                                {"unexpressed", result.unexpressed}};
  for (const ExportedFile& file : result.files) {
    nlohmann::ordered_json entry{{"name", file.name}, {"bytes", file.data.size()}, {"text", file.text}};
    if (!directory.empty()) entry["path"] = (std::filesystem::path(directory) / file.name).string();
    else if (file.text) entry["content"] = file.data;
    report["files"].push_back(entry);
  }
  return report;
}

}  // namespace

int run_export_command(const std::vector<std::string>& arguments) {
  CommonOptions common;
  std::string recipe_file, exporter, directory;
  bool best = false, strict = false;
  std::vector<std::string> overrides;
  po::options_description options("Export options");
  options.add_options()("to", po::value(&exporter)->value_name("NAME"),
                        "exporter plugin: megatron, torchtitan, deepspeed, chakra (paraplan plugins list)")(
      "out", po::value(&directory)->value_name("DIR"),
      "write the files into DIR (created if missing); without it, text files are printed on stdout")(
      "best", po::bool_switch(&best), "export the search's winner for the recipe instead of the recipe's own plan")(
      "strict", po::bool_switch(&strict), "exit with 1 when the target cannot express part of the plan");
  parse_recipe_command(arguments, options, common, recipe_file, overrides);
  if (common.help || recipe_file.empty() || exporter.empty()) {
    print_command_help(
        "paraplan export RECIPE --to NAME [options]",
        "Writes the recipe's plan in the terms of an engine that runs it: a Megatron-LM launch script,\n"
        "a torchtitan job config, a DeepSpeed config, or Chakra execution traces for ASTRA-sim. What\n"
        "the target cannot express (a schedule it lacks, a sharding it has no flag for) is reported on\n"
        "stderr, one line each. Exporter settings: [export.NAME] in the recipe or --set export.NAME.KEY=V\n"
        "(paraplan plugins describe NAME).",
        options,
        "Exit codes: 0 exported; 1 the plan is invalid, or (--strict) the target cannot express part of\n"
        "it; 2 usage error; 3 input error (file, TOML, schema, plugin); 4 internal error.\n\n"
        "Examples:\n"
        "  paraplan export recipes/scenarios/seed1-llama2-70b-4k-64xh100.toml --to megatron\n"
        "  paraplan export recipes/search/gpt3-175b-512xa100.toml --to torchtitan --best --out gpt3/\n");
    return common.help ? kExitOk : kExitUsage;
  }
  configure_logging(common);
  PluginCatalog catalog = scan_plugins(common);
  const LoadedPlugin& plugin = catalog.require(exporter, PP_KIND_EXPORTER);
  const uint32_t flags = plugin.metadata->exporter->flags;
  if ((flags & PP_EXPORTER_NEEDS_DIRECTORY) && directory.empty())
    throw UsageError("--to " + exporter + " writes binary or many files: give --out DIR");
  RecipeReaderOptions reader_options;
  reader_options.overrides = overrides;
  reader_options.search = best;
  std::unique_ptr<Recipe> recipe;
  ExportResult result;
  try {
    recipe = read_recipe(recipe_file, reader_options);
    std::unique_ptr<HardwareBinding> hardware = open_hardware(*recipe, catalog);
    check_export_tables(*recipe, catalog);
    const bool wants_schedule = flags & PP_EXPORTER_WALKS_SCHEDULE;
    ComposedPlan composed;
    if (best) {
      const SearchResult search = run_search(*recipe, catalog, SearchSettings{});
      if (search.top.empty()) throw PlanError(empty_search_message(search, *recipe));
      composed = compose_ranked(*recipe, catalog, search, search.top.front(), wants_schedule);
    } else {
      composed = compose_plan(*recipe, catalog, gpus_per_node(*recipe, *hardware), wants_schedule);
    }
    result = run_exporter(exporter, *recipe, catalog, composed, *hardware);
  } catch (const InputError& failure) {
    throw InputError(mention_overrides(failure.what(), overrides));
  }

  for (const std::string& line : result.unexpressed)
    std::cerr << "paraplan: warning: " << exporter << " cannot express: " << line << "\n";
  if (!directory.empty()) write_files(directory, result);
  if (common.json) {
    report_stream() << dump_json(json_report(exporter, directory, result)) << "\n";
  } else if (!directory.empty()) {
    for (const ExportedFile& file : result.files)
      report_stream() << "wrote " << (std::filesystem::path(directory) / file.name).string() << " (" << file.data.size()
                << " bytes)\n";
  } else {
    for (const ExportedFile& file : result.files) {
      if (result.files.size() > 1) report_stream() << "# ==> " << file.name << " <==\n";
      report_stream() << file.data << (file.data.empty() || file.data.back() == '\n' ? "" : "\n");
    }
  }
  if (strict && !result.unexpressed.empty())
    throw PlanError(recipe->file + ": " + exporter + " cannot express " + std::to_string(result.unexpressed.size()) +
                    " part(s) of the plan (--strict; see the warnings above)");
  return kExitOk;
}

}  // namespace paraplan::host
