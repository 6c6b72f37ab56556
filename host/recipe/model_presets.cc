#include "host/recipe/model_presets.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <sstream>

#include <spdlog/spdlog.h>

#include "host/plugin/plugin_trust.h"
#include "host/recipe/shipped_files.h"

namespace paraplan::host {

std::vector<std::filesystem::path> model_preset_directories(const std::filesystem::path& recipe_file) {
  std::vector<std::filesystem::path> directories;
  std::error_code error;
  std::filesystem::path directory = std::filesystem::absolute(recipe_file, error).parent_path();
  for (int depth = 0; depth < 3 && !directory.empty(); ++depth) {
    directories.push_back(directory / "models");
    if (directory == directory.parent_path()) break;
    directory = directory.parent_path();
  }
  if (const char* environment = std::getenv("PARAPLAN_MODEL_PATH")) {
    std::stringstream entries(environment);
    std::string entry;
    while (std::getline(entries, entry, ':')) {
      if (entry.empty()) continue;
      if (std::filesystem::path(entry).is_relative()) {
        spdlog::warn("PARAPLAN_MODEL_PATH: skipping the relative entry '{}': preset directories must be absolute", entry);
        continue;
      }
      directories.emplace_back(entry);
    }
  }
  for (const std::filesystem::path& root : shipped_roots()) directories.push_back(root / "models");
  return directories;
}

std::optional<std::filesystem::path> find_model_preset(const std::string& preset,
                                                       const std::vector<std::filesystem::path>& directories) {
  // A preset is a bare name: no path separators, so a recipe cannot point outside the folders.
  if (preset.empty() || preset.front() == '.' || preset.find('/') != std::string::npos ||
      preset.find("..") != std::string::npos)
    return std::nullopt;
  for (const std::filesystem::path& directory : directories) {
    std::filesystem::path candidate = directory / (preset + ".toml");
    std::error_code error;
    if (!std::filesystem::exists(candidate, error)) continue;
    if (std::string untrusted = untrusted_file_reason(candidate); !untrusted.empty()) {
      spdlog::warn("skipping model preset {}: {}", candidate.string(), untrusted);
      continue;
    }
    return candidate;
  }
  return std::nullopt;
}

std::vector<std::string> list_model_presets(const std::vector<std::filesystem::path>& directories) {
  std::set<std::string> names;
  for (const std::filesystem::path& directory : directories) {
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(directory, error))
      if (entry.path().extension() == ".toml" && !is_hidden(entry.path())) names.insert(entry.path().stem().string());
  }
  return {names.begin(), names.end()};
}

}  // namespace paraplan::host
