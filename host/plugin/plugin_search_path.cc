#include "host/plugin/plugin_search_path.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <sstream>
#include <system_error>

#include "host/core/errors.h"

namespace paraplan::host {

const char* origin_name(PluginOrigin origin) {
  switch (origin) {
    case PluginOrigin::kCommandLine: return "--plugin-path";
    case PluginOrigin::kEnvironment: return "PARAPLAN_PLUGIN_PATH";
    case PluginOrigin::kBundled: return "bundled";
  }
  return "unknown";
}

std::vector<PluginDirectory> plugin_search_path(const std::vector<std::string>& command_line_paths,
                                                const char* environment_value, const std::filesystem::path& prefix) {
  std::vector<PluginDirectory> directories;
  for (const std::string& path : command_line_paths) {
    if (path.empty() || std::filesystem::path(path).is_relative())
      throw UsageError("--plugin-path '" + path + "': plugin directories must be absolute paths (the current "
                       "directory is never searched; write --plugin-path \"$PWD/" + path + "\" if you mean it)");
    directories.push_back({path, PluginOrigin::kCommandLine});
  }
  if (environment_value) {
    std::stringstream entries(environment_value);
    std::string entry;
    while (std::getline(entries, entry, ':')) {
      if (entry.empty() || std::filesystem::path(entry).is_relative()) {
        spdlog::warn("PARAPLAN_PLUGIN_PATH: skipping the {} entry '{}': plugin directories must be absolute paths",
                     entry.empty() ? "empty" : "relative", entry);
        continue;
      }
      directories.push_back({entry, PluginOrigin::kEnvironment});
    }
  }
  if (!prefix.empty()) directories.push_back({prefix / "lib" / "paraplan" / "plugins", PluginOrigin::kBundled});
  // The same directory named twice (e.g. --plugin-path pointing at the default) is scanned once,
  // with the first origin it was named by.
  std::vector<PluginDirectory> unique;
  std::vector<std::filesystem::path> seen;
  for (const PluginDirectory& directory : directories) {
    std::error_code error;
    std::filesystem::path canonical = std::filesystem::weakly_canonical(directory.path, error);
    if (error) canonical = directory.path.lexically_normal();
    if (std::find(seen.begin(), seen.end(), canonical) != seen.end()) continue;
    seen.push_back(canonical);
    unique.push_back(directory);
  }
  return unique;
}

namespace {
std::filesystem::path& prefix_set_by_embedding() {
  static std::filesystem::path prefix;
  return prefix;
}
}  // namespace

std::filesystem::path installation_prefix() {
  if (!prefix_set_by_embedding().empty()) return prefix_set_by_embedding();
  std::error_code error;
  const std::filesystem::path executable = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::filesystem::path() : executable.parent_path().parent_path();
}

void set_installation_prefix(const std::filesystem::path& prefix) { prefix_set_by_embedding() = prefix; }

}  // namespace paraplan::host
