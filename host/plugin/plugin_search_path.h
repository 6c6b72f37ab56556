// paraplan/host/plugin/plugin_search_path.h: where plugins are looked for, in priority order.
//
//   1. every --plugin-path given on the command line, in order;
//   2. PARAPLAN_PLUGIN_PATH, colon-separated;
//   3. <directory of the executable>/../lib/paraplan/plugins (the build tree mirrors this).
// The current directory is never searched implicitly: running paraplan inside a directory of
// untrusted files must not execute them.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace paraplan::host {

std::vector<std::filesystem::path> plugin_search_path(const std::vector<std::string>& command_line_paths,
                                                      const char* environment_value,
                                                      const std::filesystem::path& executable);

// The running executable (/proc/self/exe), for the default plugin and model directories.
std::filesystem::path current_executable();

}  // namespace paraplan::host
