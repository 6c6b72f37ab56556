// paraplan/host/plugin/plugin_catalog.h: every plugin found on the search path.
//
// Scanning a directory takes each regular file ending in ".so" (sorted by name, for a
// deterministic order). A file that fails the handshake is skipped and recorded with its reason;
// a plugin whose name was already found earlier on the search path is skipped as shadowed.
// Asking for a plugin by name that is not there is a hard error that says which files were
// skipped and why, so a recipe never silently runs without the plugin it names.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "host/plugin/plugin_library.h"

namespace paraplan::host {

struct SkippedPlugin {
  std::filesystem::path file;
  std::string reason;
};

class PluginCatalog {
 public:
  static PluginCatalog scan(const std::vector<std::filesystem::path>& directories);

  const std::vector<LoadedPlugin>& plugins() const { return plugins_; }
  const std::vector<SkippedPlugin>& skipped() const { return skipped_; }
  const std::vector<std::filesystem::path>& directories() const { return directories_; }

  const LoadedPlugin* find(std::string_view name) const;
  // Like find(), but throws InputError naming the search path and the skipped files.
  const LoadedPlugin& require(std::string_view name, pp_plugin_kind kind) const;
  // Any kind.
  const LoadedPlugin& require(std::string_view name) const;
  std::vector<const LoadedPlugin*> of_kind(pp_plugin_kind kind) const;

 private:
  // Throws InputError: `message`, a suggestion, and why a likely file was refused.
  [[noreturn]] void missing(std::string message, std::string_view name, const std::vector<std::string>& names) const;

  std::vector<std::filesystem::path> directories_;
  std::vector<LoadedPlugin> plugins_;
  std::vector<SkippedPlugin> skipped_;
};

}  // namespace paraplan::host
