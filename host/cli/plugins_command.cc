// `paraplan plugins list` and `paraplan plugins describe NAME`: what is installed, what it takes.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <iomanip>
#include <iostream>

#include "host/cli/command.h"
#include "host/cli/common_options.h"
#include "host/cli/plugin_check.h"
#include "host/core/errors.h"
#include "host/core/text_sanitizer.h"
#include "host/report/report_output.h"
#include "host/recipe/param_values.h"

namespace po = boost::program_options;

namespace paraplan::host {
namespace {

std::string abi_of(const pp_plugin_v1& metadata) {
  return std::to_string(metadata.abi_major) + "." + std::to_string(metadata.abi_minor);
}

std::vector<std::string> strategy_flags(uint32_t flags) {
  std::vector<std::string> names;
  if (flags & PP_STRATEGY_TAKES_REMAINDER) names.emplace_back("takes the remaining GPUs");
  if (flags & PP_STRATEGY_DEFAULT_DATA_PARALLEL) names.emplace_back("default data parallelism");
  if (flags & PP_STRATEGY_SUBDIVIDES_DATA) names.emplace_back("subdivides the data axis");
  if (flags & PP_STRATEGY_SPLITS_BATCH) names.emplace_back("splits the batch");
  return names;
}

nlohmann::ordered_json param_json(const pp_param_spec& spec) {
  nlohmann::ordered_json param;
  param["name"] = spec.name;
  param["type"] = describe_param_type(spec);
  switch (spec.type) {  // the default as a JSON value of the parameter's own type
    case PP_PARAM_INT: param["default"] = spec.default_int; break;
    case PP_PARAM_FLOAT: param["default"] = spec.default_float; break;
    case PP_PARAM_BOOL: param["default"] = spec.default_bool != 0; break;
    default: param["default"] = spec.default_string ? spec.default_string : ""; break;
  }
  if (spec.has_min) param["min"] = spec.min;
  if (spec.has_max) param["max"] = spec.max;
  if (spec.type == PP_PARAM_ENUM) param["values"] = std::vector<std::string>(spec.enum_values, spec.enum_values + spec.enum_count);
  param["doc"] = spec.doc ? spec.doc : "";
  return param;
}

std::string record_abi(const PluginRecord& record) {
  return std::to_string(record.abi_major) + "." + std::to_string(record.abi_minor);
}

// "file", or "file -> where it leads" for a link.
std::string shown_file(const PluginRecord& record) {
  return record.target.empty() || record.target == record.file ? record.file.string()
                                                               : record.file.string() + " -> " + record.target.string();
}

int list_plugins(const PluginCatalog& catalog, bool json) {
  if (json) {
    nlohmann::ordered_json report;
    report["plugins"] = nlohmann::ordered_json::array();
    for (const PluginRecord& record : catalog.records()) {
      nlohmann::ordered_json entry = {{"name", record.name},       {"kind", kind_name(record.kind)},
                                      {"version", record.version}, {"abi", record_abi(record)},
                                      {"file", record.file.string()}, {"origin", origin_name(record.origin)}};
      if (!record.target.empty() && record.target != record.file) entry["target"] = record.target.string();
      report["plugins"].push_back(std::move(entry));
    }
    report["skipped"] = nlohmann::ordered_json::array();
    for (const SkippedPlugin& skipped : catalog.skipped())
      report["skipped"].push_back({{"file", skipped.file.string()}, {"reason", skipped.reason}});
    report["search_path"] = nlohmann::ordered_json::array();
    for (const PluginDirectory& directory : catalog.directories()) report["search_path"].push_back(directory.path.string());
    report_stream() << dump_json(report) << "\n";
    return kExitOk;
  }
  std::ostream& out = report_stream();
  if (catalog.records().empty()) {
    out << "No plugins found. Searched:\n";
    for (const PluginDirectory& directory : catalog.directories()) out << "  " << directory.path.string() << "\n";
  } else {
    out << std::left << std::setw(22) << "NAME" << std::setw(10) << "KIND" << std::setw(10) << "VERSION" << std::setw(6)
        << "ABI" << "FILE\n";
    for (pp_plugin_kind kind : {PP_KIND_STRATEGY, PP_KIND_HARDWARE, PP_KIND_EXECUTOR, PP_KIND_EXPORTER})
      for (const PluginRecord& record : catalog.records())
        if (record.kind == kind)
          out << std::left << std::setw(22) << record.name << std::setw(10) << kind_name(kind) << std::setw(10)
              << record.version << std::setw(6) << record_abi(record) << shown_file(record) << "\n";
  }
  if (!catalog.skipped().empty()) {
    out << "\nSkipped " << catalog.skipped().size() << " file(s) (failed, refused or shadowed):\n";
    for (const SkippedPlugin& skipped : catalog.skipped()) out << "  " << one_line(skipped.reason) << "\n";
  }
  return kExitOk;
}

int describe_plugin(const PluginCatalog& catalog, const std::string& name, bool json) {
  const LoadedPlugin* plugin = &catalog.require(name);
  const pp_plugin_v1& metadata = *plugin->metadata;
  if (json) {
    nlohmann::ordered_json report{{"name", metadata.name},       {"kind", kind_name(metadata.kind)},
                                  {"version", metadata.version}, {"abi", abi_of(metadata)},
                                  {"file", plugin->file.string()}, {"description", metadata.description}};
    if (metadata.kind == PP_KIND_STRATEGY) {
      report["apply_order"] = metadata.strategy->apply_order;
      report["flags"] = strategy_flags(metadata.strategy->flags);
    }
    report["parameters"] = nlohmann::ordered_json::array();
    for (uint32_t i = 0; i < metadata.param_count; ++i) report["parameters"].push_back(param_json(metadata.params[i]));
    report_stream() << dump_json(report) << "\n";
    return kExitOk;
  }
  report_stream() << metadata.name << " (" << kind_name(metadata.kind) << " plugin, version " << metadata.version
            << ", SDK ABI " << abi_of(metadata) << ")\n"
            << "  " << one_line(metadata.description) << "\n"
            << "  file: " << plugin->file.string() << "\n";
  if (metadata.kind == PP_KIND_STRATEGY) {
    report_stream() << "  applied at order " << metadata.strategy->apply_order;
    for (const std::string& flag : strategy_flags(metadata.strategy->flags)) report_stream() << "; " << flag;
    report_stream() << "\n";
  }
  if (metadata.param_count == 0) {
    report_stream() << "\nNo parameters.\n";
    return kExitOk;
  }
  report_stream() << "\nParameters";
  if (metadata.kind == PP_KIND_STRATEGY) report_stream() << " (in its [[strategy]] table, beside name and degree)";
  report_stream() << ":\n";
  size_t width = 0;
  for (uint32_t i = 0; i < metadata.param_count; ++i) width = std::max(width, std::strlen(metadata.params[i].name));
  const int column = static_cast<int>(width + 2);
  for (uint32_t i = 0; i < metadata.param_count; ++i) {
    const pp_param_spec& spec = metadata.params[i];
    report_stream() << "  " << std::left << std::setw(column) << spec.name << describe_param_type(spec)
              << ", default " << describe_param_default(spec) << "\n";
    if (spec.doc && *spec.doc) report_stream() << "  " << std::setw(column) << "" << one_line(spec.doc) << "\n";
  }
  return kExitOk;
}

int check_plugin(const PluginCatalog& catalog, const std::string& file, bool json) {
  const PluginCheck check = check_plugin_file(std::filesystem::absolute(file), catalog, plugin_scan_timeout());
  if (json) {
    nlohmann::ordered_json report{{"file", check.file.string()}, {"plugin", check.plugin}, {"kind", check.kind},
                                  {"passed", check.passed()}, {"stages", nlohmann::ordered_json::array()}};
    for (const CheckStage& stage : check.stages)
      report["stages"].push_back({{"stage", stage.name}, {"status", stage.status}, {"detail", stage.detail}});
    report_stream() << dump_json(report) << "\n";
  } else {
    std::ostream& out = report_stream();
    out << check.file.string();
    if (!check.plugin.empty()) out << ": plugin '" << check.plugin << "' (" << check.kind << ")";
    out << "\n";
    for (const CheckStage& stage : check.stages)
      out << "  " << std::left << std::setw(16) << stage.name << std::setw(9) << stage.status << stage.detail << "\n";
    out << (check.passed() ? "passed" : "FAILED") << "\n";
  }
  if (!check.passed())
    throw InputError(check.file.string() + ": the plugin failed its check (stage '" +
                     [&] {
                       for (const CheckStage& stage : check.stages)
                         if (stage.status == "failed") return stage.name;
                       return std::string("load");
                     }() +
                     "')");
  return kExitOk;
}

}  // namespace

int run_plugins_command(const std::vector<std::string>& arguments) {
  CommonOptions common;
  std::string action, name;
  po::options_description options = common_options(common, /*with_json=*/true);
  parse_action_command(arguments, options, action, name);
  if (common.help || action.empty()) {
    print_command_help("paraplan plugins list|describe NAME|check FILE [options]",
                       "List the plugins found on the search path, describe one plugin and the recipe keys it\n"
                       "accepts (type, default, range, meaning), or check a plugin file: load it, create it and\n"
                       "run what its kind does on a small plan (validate and apply, describe and price, run,\n"
                       "export), all in a child process, reporting each stage and where it crashed or hung.",
                       options,
                       "Search path: --plugin-path (absolute), then PARAPLAN_PLUGIN_PATH (colon-separated,\n"
                       "absolute), then <exe>/../lib/paraplan/plugins; never the current directory. Each file is\n"
                       "first loaded in a child process (PARAPLAN_PLUGIN_SCAN_TIMEOUT seconds, 10 by default) and\n"
                       "the answer cached (PARAPLAN_PLUGIN_CACHE: a file, or off). Files that crash, hang, print,\n"
                       "fail the handshake, lie where anyone may write, or are shadowed are listed with the reason.\n"
                       "A name found twice: --plugin-path wins over the bundled plugins, which win over\n"
                       "PARAPLAN_PLUGIN_PATH.\n\n"
                       "Exit codes: 0 success; 2 usage error; 3 a plugin named is missing or failed its check.\n");
    return common.help ? kExitOk : kExitUsage;
  }
  configure_logging(common);
  if (action == "list") {
    if (!name.empty()) throw UsageError("'plugins list' takes no argument, got '" + name + "'");
    return list_plugins(scan_plugins(common), common.json);
  }
  if (action == "describe") {
    if (name.empty()) throw UsageError("'plugins describe' needs a plugin NAME (see 'paraplan plugins list')");
    return describe_plugin(scan_plugins(common), name, common.json);
  }
  if (action == "check") {
    if (name.empty()) throw UsageError("'plugins check' needs a plugin FILE (a .so)");
    return check_plugin(scan_plugins(common), name, common.json);
  }
  throw UsageError("unknown action '" + action + "' for 'plugins'; use 'list', 'describe NAME' or 'check FILE'");
}

}  // namespace paraplan::host
