// paraplan/host/plugin/plugin_catalog.h: every plugin found on the search path.
//
// Scanning a directory takes each regular, visible file ending in ".so" (sorted by name, for a
// deterministic order), after the path rules (plugin_trust.h) and a handshake run in a child
// process (plugin_probe.h, its answers cached in plugin_scan_cache.h). A file that fails any of
// it is skipped and recorded with its reason, and every other command goes on working. A plugin
// is loaded into this process only when a command uses it.
//
// One plugin per name. When two files give the same name, the one from --plugin-path wins over a
// bundled one (the user named its directory; a warning says so), a bundled one wins over one
// from PARAPLAN_PLUGIN_PATH (an environment must not silently replace what paraplan ships), and
// otherwise the first on the search path wins; the others are listed as shadowed.
//
// Asking for a plugin by name that is not there is a hard error that says which files were
// skipped and why, so a recipe never silently runs without the plugin it names.
#pragma once

#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "host/plugin/plugin_library.h"
#include "host/plugin/plugin_probe.h"
#include "host/plugin/plugin_search_path.h"

namespace paraplan::host {

struct SkippedPlugin {
  std::filesystem::path file;
  std::string reason;
};

struct ScanOptions {
  bool allow_insecure = false;  // --allow-insecure-plugins: untrusted paths are warned about, then used
  double timeout_s = 10.0;      // per file probed in a child (plugin_scan_timeout())
  bool use_cache = true;        // the scan cache the environment names (plugin_scan_cache.h)
};

class PluginCatalog {
 public:
  static PluginCatalog scan(const std::vector<PluginDirectory>& directories, const ScanOptions& options);
  // Every directory as if given with --plugin-path, default options (for tests).
  static PluginCatalog scan(const std::vector<std::filesystem::path>& directories);

  // The usable plugins, one per name, in search-path order; none is loaded yet.
  const std::vector<PluginRecord>& records() const { return records_; }
  const std::vector<SkippedPlugin>& skipped() const { return skipped_; }
  const std::vector<PluginDirectory>& directories() const { return directories_; }

  // The named plugin, loaded into this process on first use; nullptr if there is none (or it
  // fails to load now, which require() explains).
  const LoadedPlugin* find(std::string_view name) const;
  // Like find(), but throws InputError naming the search path and the skipped files.
  const LoadedPlugin& require(std::string_view name, pp_plugin_kind kind) const;
  // Any kind.
  const LoadedPlugin& require(std::string_view name) const;
  // Every usable plugin of `kind`, loaded.
  std::vector<const LoadedPlugin*> of_kind(pp_plugin_kind kind) const;
  // The names of the usable plugins of `kind`, without loading any.
  std::vector<std::string> names_of_kind(pp_plugin_kind kind) const;

  // A plugin the caller loaded itself (`plugins check FILE`, tests); it replaces a plugin of the
  // same name, as a --plugin-path one would.
  void add_loaded(LoadedPlugin plugin);

 private:
  struct Slot {
    std::shared_ptr<const LoadedPlugin> plugin;  // null until loaded
    std::string failure;                         // why loading it in this process failed
  };
  const LoadedPlugin* load(size_t index) const;
  // Throws InputError: `message`, a suggestion, and why a likely file was refused.
  [[noreturn]] void missing(std::string message, std::string_view name, const std::vector<std::string>& names) const;

  std::vector<PluginDirectory> directories_;
  std::vector<PluginRecord> records_;
  std::vector<SkippedPlugin> skipped_;
  mutable std::vector<Slot> slots_;  // one per record
  std::shared_ptr<std::mutex> loading_ = std::make_shared<std::mutex>();
};

}  // namespace paraplan::host
