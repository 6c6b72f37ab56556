// paraplan/host/recipe/model_presets.h: finding recipes/models/<preset>.toml.
//
// Search order: the recipe's directory and its parents' `models/` folders (so recipes in
// recipes/ and recipes/scenarios/ both find recipes/models/), then PARAPLAN_MODEL_PATH
// (colon-separated, absolute entries only), then the shipped recipes' models/ (shipped_files.h:
// the installed <prefix>/share/paraplan/recipes, then the source tree's recipes/). Presets are
// found implicitly, so the plugin path's rules apply where it matters (plugin/plugin_trust.h): a directory or preset file anyone may write to, or that
// belongs to neither this user nor root, is skipped with a warning, as are hidden files; a preset
// that someone else could have planted in /tmp/models is not silently used.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace paraplan::host {

std::vector<std::filesystem::path> model_preset_directories(const std::filesystem::path& recipe_file);

std::optional<std::filesystem::path> find_model_preset(const std::string& preset,
                                                       const std::vector<std::filesystem::path>& directories);

// Names of every preset found in `directories`, for "did you mean" and `paraplan models`.
std::vector<std::string> list_model_presets(const std::vector<std::filesystem::path>& directories);

}  // namespace paraplan::host
