// paraplan/host/recipe/shipped_files.h: the recipes and measured-run data sets paraplan ships,
// found by name from any directory (`paraplan evaluate seed1-llama2-70b-4k-64xh100`,
// `paraplan validate published`).
//
// Roots, first match wins: <exe>/../share/paraplan/recipes (what `cmake --install` puts there),
// then the source tree's recipes/ (running from the build tree). Files are found implicitly, so
// the plugin path's trust rules apply (plugin/plugin_trust.h): a file anyone may write to, or that
// belongs to neither this user nor root, is skipped with a warning, as are hidden files.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace paraplan::host {

enum class ShippedKind {
  kRecipe,        // a TOML recipe: a [cluster] table (model presets and hardware profiles have none)
  kMeasuredRuns,  // a CSV of measured training runs, for `paraplan validate`
};

struct ShippedFile {
  std::string name;  // the path below the root without its extension ("scenarios/seed1-...")
  std::string stem;  // the file name without its extension: what a user types when it is unique
  std::filesystem::path path;
};

std::vector<std::filesystem::path> shipped_roots();

// Every shipped file of `kind`, by name; where two roots hold the same name, the first root's.
std::vector<ShippedFile> list_shipped_files(ShippedKind kind);

// `argument` itself when it is an existing file; otherwise the shipped file of `kind` it names, by
// its name or, when no other has it, its stem (the extension may be given or left out). A path
// that names no shipped file is returned as it is, for its reader to report; a bare name that
// names none, or several, throws InputError with the candidates.
std::filesystem::path resolve_shipped_file(const std::string& argument, ShippedKind kind);

}  // namespace paraplan::host
