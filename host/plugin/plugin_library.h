// paraplan/host/plugin/plugin_library.h: opening one plugin file and the version handshake.
//
// A file becomes a LoadedPlugin only if all of these hold, checked in this order:
//  1. it is a shared library (Boost.DLL's library_info can read its symbol table);
//  2. it exports paraplan_plugin_v1 (a file exporting only a newer entry point, e.g. the alias
//     paraplan_entry_v2, is refused here, before any of its code runs);
//  3. it loads (dlopen, all symbols resolved now) and the entry point returns metadata;
//  4. metadata.abi_major == PP_ABI_MAJOR and metadata.abi_minor <= PP_ABI_MINOR;
//  5. the metadata is well-formed: a name, a known kind and that kind's function table.
// Any failure throws PluginLoadError whose message names the file and, for version mismatches,
// both versions.
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
};

LoadedPlugin load_plugin_library(const std::filesystem::path& file);

const char* kind_name(pp_plugin_kind kind);

}  // namespace paraplan::host
