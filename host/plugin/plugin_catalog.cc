#include "host/plugin/plugin_catalog.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>

#include "host/core/edit_distance.h"
#include "host/core/errors.h"
#include "host/plugin/host_services.h"
#include "host/plugin/plugin_scan_cache.h"
#include "host/plugin/plugin_trust.h"

namespace paraplan::host {
namespace {

std::vector<std::filesystem::path> plugin_files(const std::filesystem::path& directory) {
  std::vector<std::filesystem::path> files;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
    if (entry.path().extension() != ".so") continue;
    if (is_hidden(entry.path())) {
      spdlog::debug("skipping hidden file {}", entry.path().string());
      continue;
    }
    files.push_back(entry.path());  // links included: the trust check resolves them
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Lower wins: the command line over what paraplan ships over the environment.
int priority(PluginOrigin origin) {
  switch (origin) {
    case PluginOrigin::kCommandLine: return 0;
    case PluginOrigin::kBundled: return 1;
    case PluginOrigin::kEnvironment: return 2;
  }
  return 3;
}

std::string describe_origin(const PluginRecord& record) {
  return record.file.string() + " (" + origin_name(record.origin) + ")";
}

// Why `loser` is not used, now that `winner` has its name.
std::string shadowed_reason(const PluginRecord& loser, const PluginRecord& winner) {
  std::string reason = loser.file.string() + ": plugin '" + loser.name + "' is shadowed by " + describe_origin(winner);
  if (loser.origin == PluginOrigin::kEnvironment && winner.origin == PluginOrigin::kBundled)
    reason += "; PARAPLAN_PLUGIN_PATH cannot replace a bundled plugin: name its directory with --plugin-path";
  return reason;
}

class Scanner {
 public:
  explicit Scanner(const ScanOptions& options) : options_(options) {
    if (options.use_cache) cache_ = PluginScanCache::open();
  }
  ~Scanner() { cache_.save(); }

  // The record of `file`, or why it is skipped; `known` says the scan cache had the answer (and
  // so an earlier command reported a refusal already).
  std::optional<PluginRecord> examine(const std::filesystem::path& file, PluginOrigin origin, std::string& reason,
                                      bool& known) {
    known = false;
    std::error_code error;
    const std::filesystem::path target = resolved(file, error);
    // A path that does not resolve: the one-argument check says why, as for any other file.
    const std::string untrusted = error ? untrusted_file_reason(file) : untrusted_file_reason(file, target);
    if (!untrusted.empty()) {
      if (!options_.allow_insecure) {
        reason = file.string() + ": refused: " + untrusted + " (--allow-insecure-plugins loads it anyway)";
        return std::nullopt;
      }
      spdlog::warn("loading an insecure plugin file (--allow-insecure-plugins): {}", untrusted);
    }
    if (target != file) spdlog::debug("{} leads to {}", file.string(), target.string());
    const std::optional<FileStamp> stamp = stamp_of(target);
    std::optional<CachedProbe> probe = stamp ? cache_.lookup(file, *stamp) : std::nullopt;
    if (probe) {
      known = true;
      spdlog::debug("{}: known from the scan cache {}", file.string(), cache_.file().string());
    } else {
      probe.emplace();
      try {
        probe->record = probe_plugin(file, options_.timeout_s);
      } catch (const PluginLoadError& failure) {
        probe->refusal = failure.what();
      }
      if (stamp) cache_.store(file, *stamp, *probe);
    }
    if (!probe->record) {
      reason = probe->refusal;
      return std::nullopt;
    }
    PluginRecord record = *probe->record;
    record.file = file;
    record.target = target;
    record.origin = origin;
    return record;
  }

 private:
  // std::filesystem::canonical(file), walking each directory's path once: a file that is no
  // symbolic link resolves to its directory's canonical path and its own name.
  std::filesystem::path resolved(const std::filesystem::path& file, std::error_code& error) {
    if (std::filesystem::is_symlink(file, error) || error) return std::filesystem::canonical(file, error);
    const std::filesystem::path directory = file.parent_path();
    auto known = directories_.find(directory);
    if (known == directories_.end()) {
      std::filesystem::path canonical = std::filesystem::canonical(directory, error);
      if (error) return {};
      known = directories_.emplace(directory, std::move(canonical)).first;
    }
    return known->second / file.filename();
  }

  ScanOptions options_;
  PluginScanCache cache_{std::filesystem::path()};
  std::map<std::filesystem::path, std::filesystem::path> directories_;  // canonical paths met so far
};

}  // namespace

PluginCatalog PluginCatalog::scan(const std::vector<std::filesystem::path>& directories) {
  std::vector<PluginDirectory> given;
  for (const std::filesystem::path& directory : directories) given.push_back({directory, PluginOrigin::kCommandLine});
  ScanOptions options;
  options.timeout_s = plugin_scan_timeout();
  return scan(given, options);
}

PluginCatalog PluginCatalog::scan(const std::vector<PluginDirectory>& directories, const ScanOptions& options) {
  PluginCatalog catalog;
  catalog.directories_ = directories;
  std::vector<PluginRecord> found;
  {
    Scanner scanner(options);
    for (const PluginDirectory& directory : directories) {
      std::error_code error;
      if (!std::filesystem::is_directory(directory.path, error)) {
        spdlog::debug("plugin directory {} does not exist; skipped", directory.path.string());
        continue;
      }
      if (std::string untrusted = untrusted_directory_reason(directory.path); !untrusted.empty()) {
        if (!options.allow_insecure) {
          const std::string reason = "plugin directory refused: " + untrusted + " (--allow-insecure-plugins scans it anyway)";
          spdlog::warn("{}", reason);
          catalog.skipped_.push_back({directory.path, reason});
          continue;
        }
        spdlog::warn("scanning an insecure plugin directory (--allow-insecure-plugins): {}", untrusted);
      }
      for (const std::filesystem::path& file : plugin_files(directory.path)) {
        std::string reason;
        bool known = false;
        if (std::optional<PluginRecord> record = scanner.examine(file, directory.origin, reason, known)) {
          found.push_back(std::move(*record));
        } else {
          // Said once, when the file is first found as it is; `plugins list` shows it every time.
          spdlog::log(known ? spdlog::level::debug : spdlog::level::warn, "skipping plugin {}", reason);
          catalog.skipped_.push_back({file, reason});
        }
      }
    }
  }
  // One winner per name (see the header), kept in search-path order.
  for (size_t i = 0; i < found.size(); ++i) {
    size_t winner = i;
    for (size_t j = 0; j < found.size(); ++j)
      if (found[j].name == found[i].name && priority(found[j].origin) < priority(found[winner].origin)) winner = j;
    for (size_t j = 0; j < i && winner == i; ++j)
      if (found[j].name == found[i].name && priority(found[j].origin) == priority(found[i].origin)) winner = j;
    if (winner != i) {
      const std::string reason = shadowed_reason(found[i], found[winner]);
      spdlog::warn("skipping {}", reason);
      catalog.skipped_.push_back({found[i].file, reason});
      continue;
    }
    for (const PluginRecord& other : found)
      if (&other != &found[i] && other.name == found[i].name && other.origin == PluginOrigin::kBundled &&
          found[i].origin == PluginOrigin::kCommandLine)
        spdlog::warn("plugin '{}' from {} replaces the bundled one at {}", found[i].name, describe_origin(found[i]),
                     other.file.string());
    catalog.records_.push_back(found[i]);
  }
  catalog.slots_.resize(catalog.records_.size());
  return catalog;
}

void PluginCatalog::add_loaded(LoadedPlugin plugin) {
  PluginRecord record;
  record.file = plugin.file;
  record.target = plugin.file;
  record.name = plugin.name();
  record.version = plugin.metadata->version;
  record.kind = plugin.kind();
  record.abi_major = plugin.metadata->abi_major;
  record.abi_minor = plugin.metadata->abi_minor;
  for (size_t i = 0; i < records_.size(); ++i) {
    if (records_[i].name != record.name) continue;
    skipped_.push_back({records_[i].file, shadowed_reason(records_[i], record)});
    records_.erase(records_.begin() + static_cast<std::ptrdiff_t>(i));
    slots_.erase(slots_.begin() + static_cast<std::ptrdiff_t>(i));
    break;
  }
  records_.insert(records_.begin(), record);
  slots_.insert(slots_.begin(), Slot{std::make_shared<const LoadedPlugin>(std::move(plugin)), ""});
}

const LoadedPlugin* PluginCatalog::load(size_t index) const {
  std::lock_guard<std::mutex> lock(*loading_);
  Slot& slot = slots_[index];
  if (slot.plugin || !slot.failure.empty()) return slot.plugin.get();
  const PluginRecord& record = records_[index];
  try {
    // The child that probed this file (or the one the scan cache remembers: same size, time and
    // inode) checked its symbol table before loading it; the host does not read it again.
    LoadedPlugin plugin = load_plugin_library(record.file, SymbolTable::kCheckedByProbe);
    if (plugin.name() != record.name || plugin.kind() != record.kind)
      throw PluginLoadError(record.file.string() + ": changed since it was scanned (now plugin '" + plugin.name() + "')");
    attach_host_services(plugin);
    spdlog::debug("loaded {} plugin '{}' from {}", kind_name(plugin.kind()), plugin.name(), record.file.string());
    slot.plugin = std::make_shared<const LoadedPlugin>(std::move(plugin));
  } catch (const PluginLoadError& failure) {
    slot.failure = failure.what();
    spdlog::warn("skipping plugin {}", slot.failure);
  }
  return slot.plugin.get();
}

const LoadedPlugin* PluginCatalog::find(std::string_view name) const {
  for (size_t i = 0; i < records_.size(); ++i)
    if (records_[i].name == name) return load(i);
  return nullptr;
}

std::vector<const LoadedPlugin*> PluginCatalog::of_kind(pp_plugin_kind kind) const {
  std::vector<const LoadedPlugin*> matching;
  for (size_t i = 0; i < records_.size(); ++i)
    if (records_[i].kind == kind)
      if (const LoadedPlugin* plugin = load(i)) matching.push_back(plugin);
  return matching;
}

std::vector<std::string> PluginCatalog::names_of_kind(pp_plugin_kind kind) const {
  std::vector<std::string> names;
  for (const PluginRecord& record : records_)
    if (record.kind == kind) names.push_back(record.name);
  return names;
}

const LoadedPlugin& PluginCatalog::require(std::string_view name, pp_plugin_kind kind) const {
  for (const PluginRecord& record : records_)
    if (record.name == name && record.kind != kind)
      throw InputError("plugin '" + std::string(name) + "' (" + record.file.string() + ") is a " +
                       kind_name(record.kind) + " plugin, not a " + kind_name(kind) + " plugin");
  if (const LoadedPlugin* plugin = find(name)) return *plugin;
  missing(std::string("no ") + kind_name(kind) + " plugin named '" + std::string(name) + "'", name, names_of_kind(kind));
}

const LoadedPlugin& PluginCatalog::require(std::string_view name) const {
  if (const LoadedPlugin* plugin = find(name)) return *plugin;
  std::vector<std::string> names;
  for (const PluginRecord& record : records_) names.push_back(record.name);
  missing("no plugin named '" + std::string(name) + "'", name, names);
}

void PluginCatalog::missing(std::string message, std::string_view name, const std::vector<std::string>& names) const {
  // A plugin of that name that would not load now says why.
  for (size_t i = 0; i < records_.size(); ++i)
    if (records_[i].name == name && !slots_[i].failure.empty()) throw InputError(message + "; refused " + slots_[i].failure);
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
    for (const PluginDirectory& directory : directories_) message += " " + directory.path.string();
  } else {
    message += "; available:";
    for (const std::string& available : names) message += " " + available;
  }
  throw InputError(message);
}

}  // namespace paraplan::host
