#include "host/plugin/plugin_catalog.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "host/core/edit_distance.h"
#include "host/core/errors.h"

namespace paraplan::host {
namespace {

std::vector<std::filesystem::path> plugin_files(const std::filesystem::path& directory) {
  std::vector<std::filesystem::path> files;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
    if (entry.path().extension() == ".so" && entry.is_regular_file(error)) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

PluginCatalog PluginCatalog::scan(const std::vector<std::filesystem::path>& directories) {
  PluginCatalog catalog;
  catalog.directories_ = directories;
  for (const std::filesystem::path& directory : directories) {
    std::error_code error;
    if (!std::filesystem::is_directory(directory, error)) {
      spdlog::debug("plugin directory {} does not exist; skipped", directory.string());
      continue;
    }
    for (const std::filesystem::path& file : plugin_files(directory)) {
      try {
        LoadedPlugin plugin = load_plugin_library(file);
        if (const LoadedPlugin* earlier = catalog.find(plugin.name())) {
          std::string reason = "plugin '" + plugin.name() + "' is shadowed by " + earlier->file.string();
          spdlog::warn("skipping {}: {}", file.string(), reason);
          catalog.skipped_.push_back({file, reason});
          continue;
        }
        spdlog::debug("loaded {} plugin '{}' from {}", kind_name(plugin.kind()), plugin.name(), file.string());
        catalog.plugins_.push_back(std::move(plugin));
      } catch (const PluginLoadError& failure) {
        spdlog::warn("skipping plugin {}", failure.what());
        catalog.skipped_.push_back({file, failure.what()});
      }
    }
  }
  return catalog;
}

const LoadedPlugin* PluginCatalog::find(std::string_view name) const {
  for (const LoadedPlugin& plugin : plugins_)
    if (plugin.name() == name) return &plugin;
  return nullptr;
}

std::vector<const LoadedPlugin*> PluginCatalog::of_kind(pp_plugin_kind kind) const {
  std::vector<const LoadedPlugin*> matching;
  for (const LoadedPlugin& plugin : plugins_)
    if (plugin.kind() == kind) matching.push_back(&plugin);
  return matching;
}

const LoadedPlugin& PluginCatalog::require(std::string_view name, pp_plugin_kind kind) const {
  const LoadedPlugin* plugin = find(name);
  if (plugin && plugin->kind() != kind)
    throw InputError("plugin '" + std::string(name) + "' (" + plugin->file.string() + ") is a " +
                     kind_name(plugin->kind()) + " plugin, not a " + kind_name(kind) + " plugin");
  if (plugin) return *plugin;
  std::vector<std::string> names;
  for (const LoadedPlugin* candidate : of_kind(kind)) names.push_back(candidate->name());
  missing(std::string("no ") + kind_name(kind) + " plugin named '" + std::string(name) + "'", name, names);
}

const LoadedPlugin& PluginCatalog::require(std::string_view name) const {
  if (const LoadedPlugin* plugin = find(name)) return *plugin;
  std::vector<std::string> names;
  for (const LoadedPlugin& candidate : plugins_) names.push_back(candidate.name());
  missing("no plugin named '" + std::string(name) + "'", name, names);
}

void PluginCatalog::missing(std::string message, std::string_view name, const std::vector<std::string>& names) const {
  message += did_you_mean(name, names);
  // A skipped file whose name mentions the plugin is the likely culprit: say why it was refused.
  for (const SkippedPlugin& skipped : skipped_) {
    if (skipped.file.filename().string().find(name) != std::string::npos) {
      message += "; refused " + skipped.reason;
      throw InputError(message);
    }
  }
  if (names.empty()) {
    message += "; searched:";
    for (const std::filesystem::path& directory : directories_) message += " " + directory.string();
  } else {
    message += "; available:";
    for (const std::string& available : names) message += " " + available;
  }
  throw InputError(message);
}

}  // namespace paraplan::host
