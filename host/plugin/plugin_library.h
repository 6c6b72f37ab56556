// paraplan/host/plugin/plugin_library.h: opening one plugin file and the version handshake.
//
// A file becomes a LoadedPlugin only if all of these hold, checked in this order:
//  1. it is a shared library (Boost.DLL's library_info can read its symbol table);
//  2. it exports paraplan_plugin_v1 (a file exporting only a newer entry point, e.g. the alias
//     paraplan_entry_v2, is refused here, before any of its code runs);
//  3. it loads (dlopen, all symbols resolved now) and the entry point returns metadata;
//  4. metadata.abi_major == PP_ABI_MAJOR and metadata.abi_minor <= PP_ABI_MINOR;
//  5. the metadata and the kind's function table are at least as large as in the plugin's own
//     minor (host/plugin/abi_history.h), so a plugin built against any released 1.x loads;
//  6. the metadata is well-formed: a valid name, bounded strings, a known kind (the exporter kind
//     from 1.3 on) with its functions, and a schema within bounds.
// Any failure throws PluginLoadError whose message names the file and, for version mismatches,
// both versions. This runs the file's code: the catalog first runs it in a child process
// (plugin_probe.h), so a plugin that crashes here takes only the child down.
#pragma once

#include <boost/dll/shared_library.hpp>

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

#include "paraplan/plugin.h"

namespace paraplan::host {

class PluginLoadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A plugin whose library stays loaded as long as any copy of this (or any instance created from
// it, which holds the same shared_ptr) lives.
struct LoadedPlugin {
  std::shared_ptr<boost::dll::shared_library> library;
  const pp_plugin_v1* metadata = nullptr;
  std::filesystem::path file;

  std::string name() const { return metadata->name; }
  pp_plugin_kind kind() const { return metadata->kind; }
  uint32_t abi_minor() const { return metadata->abi_minor; }
};

// Bounds on what a plugin's metadata may hold.
inline constexpr size_t kMaxPluginNameLength = 63;   // [a-z0-9][a-z0-9._-]*
inline constexpr size_t kMaxVersionLength = 32;
inline constexpr size_t kMaxDescriptionLength = 4096;
inline constexpr uint32_t kMaxParams = 256;

// Whether `name` may name a plugin, a parameter or an enum value: lowercase ASCII letters,
// digits, '.', '_' and '-', starting with a letter or digit, at most kMaxPluginNameLength long.
bool valid_plugin_name(std::string_view name);

// Whether load_plugin_library reads the file's ELF symbol table (without running its code) to
// refuse a file that is no paraplan plugin, or of another ABI major, before dlopen runs its
// constructors. A plugin the scan probed in a child has had that check.
enum class SymbolTable { kRead, kCheckedByProbe };

LoadedPlugin load_plugin_library(const std::filesystem::path& file, SymbolTable symbols = SymbolTable::kRead);

const char* kind_name(pp_plugin_kind kind);

}  // namespace paraplan::host
