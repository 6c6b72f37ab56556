#include "host/plugin/plugin_search_path.h"

#include <algorithm>
#include <sstream>
#include <system_error>

namespace paraplan::host {

std::vector<std::filesystem::path> plugin_search_path(const std::vector<std::string>& command_line_paths,
                                                      const char* environment_value,
                                                      const std::filesystem::path& executable) {
  std::vector<std::filesystem::path> directories;
  for (const std::string& path : command_line_paths) directories.emplace_back(path);
  if (environment_value) {
    std::stringstream entries(environment_value);
    std::string entry;
    // Empty entries would mean "the current directory" in PATH-like variables: skip them.
    while (std::getline(entries, entry, ':'))
      if (!entry.empty()) directories.emplace_back(entry);
  }
  if (!executable.empty())
    directories.push_back(executable.parent_path().parent_path() / "lib" / "paraplan" / "plugins");
  // The same directory named twice (e.g. --plugin-path pointing at the default) is scanned once.
  std::vector<std::filesystem::path> unique;
  std::vector<std::filesystem::path> seen;
  for (const std::filesystem::path& directory : directories) {
    std::error_code error;
    std::filesystem::path canonical = std::filesystem::weakly_canonical(directory, error);
    if (error) canonical = directory.lexically_normal();
    if (std::find(seen.begin(), seen.end(), canonical) != seen.end()) continue;
    seen.push_back(canonical);
    unique.push_back(directory);
  }
  return unique;
}

std::filesystem::path current_executable() {
  std::error_code error;
  std::filesystem::path path = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::filesystem::path() : path;
}

}  // namespace paraplan::host
