#include "host/recipe/shipped_files.h"

#include <map>
#include <system_error>

#include <spdlog/spdlog.h>
#include <toml++/toml.h>

#include "host/core/edit_distance.h"
#include "host/core/errors.h"
#include "host/core/joined.h"
#include "host/plugin/plugin_search_path.h"
#include "host/plugin/plugin_trust.h"

namespace paraplan::host {
namespace {

std::string_view extension_of(ShippedKind kind) { return kind == ShippedKind::kRecipe ? ".toml" : ".csv"; }

// Model presets and hardware profiles are TOML too; a recipe is the one with a cluster.
bool is_recipe(const std::filesystem::path& file) {
  try {
    return toml::parse_file(file.string()).contains("cluster");
  } catch (const toml::parse_error&) {
    return false;
  }
}

bool is_kind(const std::filesystem::path& file, ShippedKind kind) {
  if (file.extension() != extension_of(kind) || is_hidden(file)) return false;
  return kind != ShippedKind::kRecipe || is_recipe(file);
}

}  // namespace

std::vector<std::filesystem::path> shipped_roots() {
  std::vector<std::filesystem::path> roots;
  if (const std::filesystem::path prefix = installation_prefix(); !prefix.empty())
    roots.push_back(prefix / "share" / "paraplan" / "recipes");
#ifdef PARAPLAN_SOURCE_RECIPES_DIR
  roots.emplace_back(PARAPLAN_SOURCE_RECIPES_DIR);
#endif
  return roots;
}

std::vector<ShippedFile> list_shipped_files(ShippedKind kind) {
  std::map<std::string, ShippedFile> found;  // by name, so a listing is the same on every file system
  for (const std::filesystem::path& root : shipped_roots()) {
    std::error_code error;
    for (auto entry = std::filesystem::recursive_directory_iterator(root, error);
         !error && entry != std::filesystem::recursive_directory_iterator(); entry.increment(error)) {
      const std::filesystem::path& path = entry->path();
      if (is_hidden(path)) {
        if (entry->is_directory(error)) entry.disable_recursion_pending();
        continue;
      }
      std::string name = path.lexically_relative(root).replace_extension().generic_string();
      if (found.count(name) || !entry->is_regular_file(error) || !is_kind(path, kind)) continue;
      if (std::string untrusted = untrusted_file_reason(path); !untrusted.empty()) {
        spdlog::warn("skipping shipped file {}: {}", path.string(), untrusted);
        continue;
      }
      found.emplace(name, ShippedFile{name, path.stem().string(), path});
    }
  }
  std::vector<ShippedFile> files;
  for (auto& [name, file] : found) files.push_back(std::move(file));
  return files;
}

std::filesystem::path resolve_shipped_file(const std::string& argument, ShippedKind kind) {
  std::error_code error;
  if (std::filesystem::exists(argument, error)) return argument;
  std::string name = argument;
  if (name.ends_with(extension_of(kind))) name.resize(name.size() - extension_of(kind).size());
  const std::vector<ShippedFile> shipped = list_shipped_files(kind);
  std::vector<std::string> names, same_stem;
  const ShippedFile* by_stem = nullptr;
  for (const ShippedFile& file : shipped) {
    if (file.name == name) return file.path;
    if (file.stem == name) {
      same_stem.push_back(file.name);
      by_stem = &file;
    }
    names.push_back(file.name);
    names.push_back(file.stem);
  }
  if (same_stem.size() == 1) return by_stem->path;
  if (argument.find('/') != std::string::npos && same_stem.empty()) return argument;
  const std::string what = kind == ShippedKind::kRecipe ? "recipe" : "measured-run data set";
  if (!same_stem.empty())
    throw InputError(argument + ": several shipped " + what + "s have that name (" + joined(same_stem, ", ") +
                     "): name one of them");
  std::string suggestion = did_you_mean(name, names);
  if (suggestion.empty()) {
    std::vector<std::string> containing;
    for (const ShippedFile& file : shipped)
      if (file.name.find(name) != std::string::npos && containing.size() < 3) containing.push_back(file.name);
    if (!containing.empty()) suggestion = " (did you mean " + joined(containing, " or ") + "?)";
  }
  const std::string listing = kind == ShippedKind::kRecipe ? "paraplan recipes" : "paraplan recipes --data";
  throw InputError(argument + ": no such file, nor a shipped " + what + " of that name" + suggestion + "; `" + listing +
                   "` lists them");
}

}  // namespace paraplan::host
