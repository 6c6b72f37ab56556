#include "host/plugin/plugin_library.h"

#include <boost/dll/library_info.hpp>

#include <cmath>
#include <cstddef>
#include <cstring>

#include <algorithm>
#include <fstream>
#include <regex>
#include <vector>

#include "host/core/text_sanitizer.h"
#include "host/plugin/abi_history.h"

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

// The kind's function table, at least as large as in the plugin's own minor.
void check_kind_table(const std::filesystem::path& file, const pp_plugin_v1& metadata) {
  const AbiMinorSizes& sizes = abi_sizes(metadata.abi_minor);
  const std::string minor = "ABI 1." + std::to_string(metadata.abi_minor);
  auto check_size = [&](const char* kind, uint32_t struct_size, size_t expected) {
    if (struct_size < expected)
      refuse(file, std::string(kind) + " function table is " + std::to_string(struct_size) + " bytes, but " + minor +
                       "'s is " + std::to_string(expected) + " (was it built against the headers it claims?)");
  };
  switch (metadata.kind) {
    case PP_KIND_STRATEGY:
      if (!metadata.strategy) break;
      check_size("strategy", metadata.strategy->struct_size, sizes.strategy);
      if (!metadata.strategy->create || !metadata.strategy->destroy || !metadata.strategy->apply) break;
      return;
    case PP_KIND_HARDWARE:
      if (!metadata.hardware) break;
      check_size("hardware", metadata.hardware->struct_size, sizes.hardware);
      if (!metadata.hardware->create || !metadata.hardware->destroy || !metadata.hardware->describe) break;
      return;
    case PP_KIND_EXECUTOR:
      if (!metadata.executor) break;
      check_size("executor", metadata.executor->struct_size, sizes.executor);
      if (!metadata.executor->create || !metadata.executor->destroy || !metadata.executor->run) break;
      return;
    case PP_KIND_EXPORTER: {
      if (sizes.exporter == 0) refuse(file, "exporter plugins exist from ABI 1.3 on; this one claims " + minor);
      const pp_exporter_v1* exporter = metadata.exporter;
      if (!exporter) break;
      check_size("exporter", exporter->struct_size, sizes.exporter);
      if (!exporter->create || !exporter->destroy || !exporter->export_plan) break;
      return;
    }
    default:
      refuse(file, "unknown plugin kind " + std::to_string(static_cast<int>(metadata.kind)));
  }
  refuse(file, std::string(kind_name(metadata.kind)) + " plugin without a complete " + kind_name(metadata.kind) +
                   " function table");
}

// A C string of the metadata: NUL-terminated within `limit` bytes.
std::string metadata_string(const std::filesystem::path& file, const char* text, size_t limit, const std::string& what) {
  if (!text) refuse(file, what + " is missing");
  if (strnlen(text, limit + 1) > limit)
    refuse(file, what + " is longer than " + std::to_string(limit) + " bytes (or not NUL-terminated)");
  return text;
}

bool printable_ascii(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return c > 0x20 && c < 0x7F; });
}

void check_strings(const std::filesystem::path& file, const pp_plugin_v1& metadata) {
  const std::string name = metadata_string(file, metadata.name, kMaxPluginNameLength, "the plugin's name");
  if (name.empty()) refuse(file, "plugin has no name");
  if (!valid_plugin_name(name))
    refuse(file, "plugin name '" + one_line(name, 80) +
                     "' is not lowercase letters, digits, '.', '_' and '-' (starting with a letter or digit)");
  const std::string version = metadata_string(file, metadata.version, kMaxVersionLength, "plugin version");
  if (!printable_ascii(version)) refuse(file, "plugin version is not printable ASCII");
  metadata_string(file, metadata.description, kMaxDescriptionLength, "plugin description");
}

void check_params(const std::filesystem::path& file, const pp_plugin_v1& metadata) {
  if (metadata.param_count > 0 && !metadata.params) refuse(file, "parameter count without a parameter table");
  if (metadata.param_count > kMaxParams)
    refuse(file, "declares " + std::to_string(metadata.param_count) + " parameters; at most " +
                     std::to_string(kMaxParams) + " are accepted");
  for (uint32_t i = 0; i < metadata.param_count; ++i) {
    const pp_param_spec& spec = metadata.params[i];
    if (spec.struct_size < sizeof(pp_param_spec) || !spec.name || !*spec.name)
      refuse(file, "parameter " + std::to_string(i) + " of the schema is malformed");
    const std::string name = metadata_string(file, spec.name, kMaxPluginNameLength, "parameter " + std::to_string(i) + "'s name");
    if (!valid_plugin_name(name)) refuse(file, "parameter name '" + one_line(name, 80) + "' is not a valid recipe key");
    const std::string what = "parameter '" + name + "'";
    if (spec.type < PP_PARAM_INT || spec.type > PP_PARAM_ENUM)
      refuse(file, what + " has unknown type " + std::to_string(static_cast<int>(spec.type)));
    if (spec.doc) metadata_string(file, spec.doc, kMaxDescriptionLength, what + "'s doc");
    if (spec.default_string) metadata_string(file, spec.default_string, kMaxDescriptionLength, what + "'s default");
    if ((spec.has_min && !std::isfinite(spec.min)) || (spec.has_max && !std::isfinite(spec.max)) ||
        (spec.type == PP_PARAM_FLOAT && !std::isfinite(spec.default_float)))
      refuse(file, what + " has a range or default that is not a finite number");
    if (spec.type != PP_PARAM_ENUM) continue;
    if (spec.enum_count == 0 || !spec.enum_values) refuse(file, "enum " + what + " has no values");
    if (spec.enum_count > kMaxParams) refuse(file, "enum " + what + " has more than " + std::to_string(kMaxParams) + " values");
    bool listed = false;
    for (uint32_t value = 0; value < spec.enum_count; ++value) {
      const std::string text =
          metadata_string(file, spec.enum_values[value], kMaxPluginNameLength, "a value of enum " + what);
      if (text.empty() || !printable_ascii(text)) refuse(file, "a value of enum " + what + " is empty or not printable ASCII");
      listed = listed || (spec.default_string && text == spec.default_string);
    }
    if (!listed) refuse(file, "enum " + what + " has a default that is not one of its values");
  }
}

}  // namespace

bool valid_plugin_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxPluginNameLength) return false;
  auto lower_or_digit = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!lower_or_digit(name.front())) return false;
  return std::all_of(name.begin(), name.end(),
                     [&](char c) { return lower_or_digit(c) || c == '.' || c == '_' || c == '-'; });
}

const char* kind_name(pp_plugin_kind kind) {
  switch (kind) {
    case PP_KIND_STRATEGY: return "strategy";
    case PP_KIND_HARDWARE: return "hardware";
    case PP_KIND_EXECUTOR: return "executor";
    case PP_KIND_EXPORTER: return "exporter";
  }
  return "unknown";
}

LoadedPlugin load_plugin_library(const std::filesystem::path& file, SymbolTable symbol_table) {
  if (symbol_table == SymbolTable::kRead) {
    const std::vector<std::string> symbols = exported_symbols(file);
    if (std::find(symbols.begin(), symbols.end(), PP_ENTRY_POINT_V1) == symbols.end()) {
      uint32_t major = advertised_major(symbols);
      if (major > 0)
        refuse(file, "built for SDK ABI " + std::to_string(major) + ".x; this host supports ABI " + host_abi() +
                         " (rebuild the plugin against this SDK)");
      refuse(file, "not a paraplan plugin: no entry point '" PP_ENTRY_POINT_V1 "'");
    }
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
  try {
    plugin.metadata = entry();
  } catch (...) {  // a plugin not written with sdk.hpp may let one escape through the C ABI
    refuse(file, "entry point '" PP_ENTRY_POINT_V1 "' threw a C++ exception across the C ABI");
  }
  if (!plugin.metadata) refuse(file, "entry point '" PP_ENTRY_POINT_V1 "' returned no metadata");
  const pp_plugin_v1& metadata = *plugin.metadata;
  // Every major begins with the size and the versions; the rest depends on them.
  if (metadata.struct_size < offsetof(pp_plugin_v1, kind))
    refuse(file, "metadata struct is " + std::to_string(metadata.struct_size) + " bytes: too small to hold its versions");
  std::string plugin_abi = abi_text(metadata.abi_major, metadata.abi_minor);
  if (metadata.abi_major != PP_ABI_MAJOR)
    refuse(file, "built for SDK ABI " + plugin_abi + "; this host supports ABI " + host_abi() +
                     " (another major version: rebuild the plugin against this SDK)");
  if (metadata.abi_minor > PP_ABI_MINOR)
    refuse(file, "built for SDK ABI " + plugin_abi + ", newer than this host's ABI " + host_abi() +
                     " (upgrade paraplan or rebuild the plugin against this SDK)");
  if (metadata.struct_size < abi_sizes(metadata.abi_minor).plugin)
    refuse(file, "metadata struct is " + std::to_string(metadata.struct_size) + " bytes, but ABI " + plugin_abi +
                     "'s is " + std::to_string(abi_sizes(metadata.abi_minor).plugin) +
                     " (was it built against the headers it claims?)");
  check_strings(file, metadata);
  check_kind_table(file, metadata);
  check_params(file, metadata);
  return plugin;
}

}  // namespace paraplan::host
