#include "host/plugin/plugin_library.h"

#include <boost/dll/library_info.hpp>

#include <cstddef>

#include <algorithm>
#include <fstream>
#include <regex>
#include <vector>

namespace paraplan::host {
namespace {

std::string abi_text(uint32_t major, uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string host_abi() { return abi_text(PP_ABI_MAJOR, PP_ABI_MINOR); }

[[noreturn]] void refuse(const std::filesystem::path& file, const std::string& reason) {
  throw PluginLoadError(file.string() + ": " + reason);
}

// Reads the symbol table without running any code of the file.
std::vector<std::string> exported_symbols(const std::filesystem::path& file) {
  try {
    boost::dll::library_info info(boost::dll::fs::path(file.string()), /*throw_if_not_native=*/true);
    std::vector<std::string> symbols = info.symbols();
    std::vector<std::string> aliases = info.symbols(PP_ALIAS_SECTION);
    symbols.insert(symbols.end(), aliases.begin(), aliases.end());
    return symbols;
  } catch (const std::exception&) {
    refuse(file, "not a shared library (no readable ELF symbol table)");
  }
}

// The highest paraplan_plugin_vN / paraplan_entry_vN major the file advertises, 0 if none.
uint32_t advertised_major(const std::vector<std::string>& symbols) {
  static const std::regex entry_pattern("paraplan_(plugin|entry)_v([0-9]+)");
  uint32_t highest = 0;
  for (const std::string& symbol : symbols) {
    std::smatch match;
    if (std::regex_match(symbol, match, entry_pattern))
      highest = std::max<uint32_t>(highest, static_cast<uint32_t>(std::stoul(match[2].str())));
  }
  return highest;
}

void check_kind_table(const std::filesystem::path& file, const pp_plugin_v1& metadata) {
  switch (metadata.kind) {
    case PP_KIND_STRATEGY:
      if (!metadata.strategy || metadata.strategy->struct_size < PP_STRATEGY_V1_0_SIZE ||
          !metadata.strategy->create || !metadata.strategy->destroy || !metadata.strategy->apply)
        refuse(file, "strategy plugin without a complete strategy function table");
      return;
    case PP_KIND_HARDWARE:
      if (!metadata.hardware || metadata.hardware->struct_size < sizeof(pp_hardware_v1) ||
          !metadata.hardware->create || !metadata.hardware->destroy || !metadata.hardware->describe)
        refuse(file, "hardware plugin without a complete hardware function table");
      return;
    case PP_KIND_EXECUTOR:
      if (!metadata.executor || metadata.executor->struct_size < PP_EXECUTOR_V1_0_SIZE ||
          !metadata.executor->create || !metadata.executor->destroy || !metadata.executor->run)
        refuse(file, "executor plugin without a complete executor function table");
      return;
    case PP_KIND_EXPORTER: {
      const bool listed = metadata.struct_size >= offsetof(pp_plugin_v1, exporter) + sizeof(metadata.exporter);
      const pp_exporter_v1* exporter = listed ? metadata.exporter : nullptr;
      if (!exporter || exporter->struct_size < sizeof(pp_exporter_v1) || !exporter->create || !exporter->destroy ||
          !exporter->export_plan)
        refuse(file, "exporter plugin without a complete exporter function table");
      return;
    }
  }
  refuse(file, "unknown plugin kind " + std::to_string(static_cast<int>(metadata.kind)));
}

void check_params(const std::filesystem::path& file, const pp_plugin_v1& metadata) {
  if (metadata.param_count > 0 && !metadata.params) refuse(file, "parameter count without a parameter table");
  for (uint32_t i = 0; i < metadata.param_count; ++i) {
    const pp_param_spec& spec = metadata.params[i];
    if (spec.struct_size < sizeof(pp_param_spec) || !spec.name || !*spec.name)
      refuse(file, "parameter " + std::to_string(i) + " of the schema is malformed");
    if (spec.type == PP_PARAM_ENUM && (spec.enum_count == 0 || !spec.enum_values))
      refuse(file, std::string("enum parameter '") + spec.name + "' has no values");
    if (spec.type == PP_PARAM_ENUM) {
      bool listed = false;
      for (uint32_t value = 0; value < spec.enum_count; ++value)
        listed = listed || (spec.default_string && spec.enum_values[value] &&
                            std::string(spec.enum_values[value]) == spec.default_string);
      if (!listed) refuse(file, std::string("enum parameter '") + spec.name + "' has a default that is not one of its values");
    }
  }
}

}  // namespace

const char* kind_name(pp_plugin_kind kind) {
  switch (kind) {
    case PP_KIND_STRATEGY: return "strategy";
    case PP_KIND_HARDWARE: return "hardware";
    case PP_KIND_EXECUTOR: return "executor";
    case PP_KIND_EXPORTER: return "exporter";
  }
  return "unknown";
}

LoadedPlugin load_plugin_library(const std::filesystem::path& file) {
  std::vector<std::string> symbols = exported_symbols(file);
  bool has_v1 = std::find(symbols.begin(), symbols.end(), PP_ENTRY_POINT_V1) != symbols.end();
  if (!has_v1) {
    uint32_t major = advertised_major(symbols);
    if (major > 0)
      refuse(file, "built for SDK ABI " + std::to_string(major) + ".x; this host supports ABI " + host_abi() +
                       " (rebuild the plugin against this SDK)");
    refuse(file, "not a paraplan plugin: no entry point '" PP_ENTRY_POINT_V1 "'");
  }

  LoadedPlugin plugin;
  plugin.file = file;
  try {
    plugin.library = std::make_shared<boost::dll::shared_library>(
        boost::dll::fs::path(file.string()),
        boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& failure) {
    refuse(file, std::string("cannot load: ") + failure.what());
  }
  auto entry = plugin.library->get<const pp_plugin_v1*()>(PP_ENTRY_POINT_V1);
  plugin.metadata = entry();
  if (!plugin.metadata) refuse(file, "entry point '" PP_ENTRY_POINT_V1 "' returned no metadata");
  const pp_plugin_v1& metadata = *plugin.metadata;
  if (metadata.struct_size < sizeof(pp_plugin_v1))
    refuse(file, "metadata struct is " + std::to_string(metadata.struct_size) + " bytes, expected at least " +
                     std::to_string(sizeof(pp_plugin_v1)));
  std::string plugin_abi = abi_text(metadata.abi_major, metadata.abi_minor);
  if (metadata.abi_major != PP_ABI_MAJOR)
    refuse(file, "built for SDK ABI " + plugin_abi + "; this host supports ABI " + host_abi() +
                     " (another major version: rebuild the plugin against this SDK)");
  if (metadata.abi_minor > PP_ABI_MINOR)
    refuse(file, "built for SDK ABI " + plugin_abi + ", newer than this host's ABI " + host_abi() +
                     " (upgrade paraplan or rebuild the plugin against this SDK)");
  if (!metadata.name || !*metadata.name) refuse(file, "plugin has no name");
  if (!metadata.version || !metadata.description) refuse(file, "plugin metadata lacks a version or description");
  check_kind_table(file, metadata);
  check_params(file, metadata);
  return plugin;
}

}  // namespace paraplan::host
