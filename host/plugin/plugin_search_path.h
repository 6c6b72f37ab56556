// paraplan/host/plugin/plugin_search_path.h: where plugins are looked for, in priority order.
//
//   1. every --plugin-path given on the command line, in order;
//   2. PARAPLAN_PLUGIN_PATH, colon-separated;
//   3. <directory of the executable>/../lib/paraplan/plugins: the bundled plugins (the build tree
//      mirrors this).
// The current directory is never searched: every entry must be an absolute path. A relative
// --plugin-path is a usage error; a relative or empty PARAPLAN_PLUGIN_PATH entry (which shells
// read as the current directory) is skipped with a warning. A name found in two places is
// resolved by origin (plugin_catalog.h): the command line may replace a bundled plugin, the
// environment may not.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace paraplan::host {

enum class PluginOrigin {
  kCommandLine,  // --plugin-path: asked for by name of directory, so it may replace a bundled plugin
  kEnvironment,  // PARAPLAN_PLUGIN_PATH: adds plugins, never replaces a bundled one
  kBundled       // installed with paraplan
};

const char* origin_name(PluginOrigin origin);

struct PluginDirectory {
  std::filesystem::path path;
  PluginOrigin origin = PluginOrigin::kCommandLine;
};

// --plugin-path, then PARAPLAN_PLUGIN_PATH, then <prefix>/lib/paraplan/plugins (none for an empty prefix).
std::vector<PluginDirectory> plugin_search_path(const std::vector<std::string>& command_line_paths,
                                                const char* environment_value, const std::filesystem::path& prefix);

// The tree paraplan is installed (or built) in: <prefix>/bin/paraplan, <prefix>/lib/paraplan/plugins,
// <prefix>/share/paraplan. The running executable's (/proc/self/exe is <prefix>/bin/paraplan), unless
// an embedding in another program set its own (the Python module: python/paraplan_module.cc).
std::filesystem::path installation_prefix();
void set_installation_prefix(const std::filesystem::path& prefix);

}  // namespace paraplan::host
