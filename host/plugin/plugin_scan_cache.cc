#include "host/plugin/plugin_scan_cache.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "host/core/isolated_call.h"
#include "paraplan/abi.h"

namespace paraplan::host {
namespace {

constexpr int kFormat = 1;
constexpr size_t kMaxEntries = 4096;   // a cache past this is started afresh
constexpr size_t kPruneAbove = 256;    // a cache read with more entries drops the stale ones
constexpr uintmax_t kMaxCacheBytes = 8u << 20;

std::string host_tag() { return "ABI " + std::to_string(PP_ABI_MAJOR) + "." + std::to_string(PP_ABI_MINOR); }

std::filesystem::path default_cache_file() {
  if (const char* chosen = std::getenv("PARAPLAN_PLUGIN_CACHE"); chosen && *chosen) {
    if (std::string(chosen) == "off") return {};
    return chosen;
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg && xdg[0] == '/')
    return std::filesystem::path(xdg) / "paraplan" / "plugin-scan.json";
  if (const char* home = std::getenv("HOME"); home && *home && home[0] == '/')
    return std::filesystem::path(home) / ".cache" / "paraplan" / "plugin-scan.json";
  return {};
}

// Only a cache this user alone can have written is believed.
bool trusted_cache(const std::filesystem::path& file) {
  struct stat status {};
  if (lstat(file.c_str(), &status) != 0 || !S_ISREG(status.st_mode)) return false;
  return status.st_uid == geteuid() && !(status.st_mode & (S_IWGRP | S_IWOTH)) &&
         static_cast<uintmax_t>(status.st_size) <= kMaxCacheBytes;
}

nlohmann::json record_json(const PluginRecord& record) {
  return {{"name", record.name},           {"version", record.version},     {"kind", static_cast<int>(record.kind)},
          {"abi_major", record.abi_major}, {"abi_minor", record.abi_minor}};
}

}  // namespace

std::optional<FileStamp> stamp_of(const std::filesystem::path& file) {
  struct stat status {};
  if (stat(file.c_str(), &status) != 0) return std::nullopt;
  return FileStamp{static_cast<uintmax_t>(status.st_size),
                   static_cast<int64_t>(status.st_mtim.tv_sec) * 1000000000 + status.st_mtim.tv_nsec,
                   static_cast<uint64_t>(status.st_ino), static_cast<uint64_t>(status.st_dev)};
}

PluginScanCache PluginScanCache::open() { return PluginScanCache(default_cache_file()); }

PluginScanCache::PluginScanCache(std::filesystem::path file) : file_(std::move(file)) {
  if (file_.empty() || !trusted_cache(file_)) return;
  // Read whole, then parsed from memory: nlohmann's stream adapter takes a virtual call per
  // character, which made reading the cache most of a one-plan command.
  std::ifstream in(file_, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  const nlohmann::json document = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (!document.is_object() || document.value("format", 0) != kFormat || document.value("host", "") != host_tag() ||
      !document.contains("entries") || !document["entries"].is_object())
    return;
  try {
    for (const auto& [path, entry] : document["entries"].items()) {
      Entry cached;
      cached.stamp = {entry.at("size").get<uintmax_t>(), entry.at("mtime_ns").get<int64_t>(),
                      entry.at("inode").get<uint64_t>(), entry.at("device").get<uint64_t>()};
      if (entry.contains("refusal")) {
        cached.probe.refusal = entry["refusal"].get<std::string>();
      } else {
        PluginRecord record;
        record.name = entry.at("name").get<std::string>();
        record.version = entry.at("version").get<std::string>();
        record.kind = static_cast<pp_plugin_kind>(entry.at("kind").get<int>());
        record.abi_major = entry.at("abi_major").get<uint32_t>();
        record.abi_minor = entry.at("abi_minor").get<uint32_t>();
        cached.probe.record = record;
      }
      entries_[path] = std::move(cached);
    }
  } catch (const nlohmann::json::exception&) {
    entries_.clear();  // a damaged cache is a cold cache
  }
  // A cache written before save() dropped stale entries may hold thousands: drop them once.
  if (entries_.size() > kPruneAbove)
    changed_ = std::erase_if(entries_, [](const auto& entry) { return stamp_of(entry.first) != entry.second.stamp; }) > 0;
}

std::optional<CachedProbe> PluginScanCache::lookup(const std::filesystem::path& file, const FileStamp& stamp) const {
  auto found = entries_.find(file.string());
  if (found == entries_.end() || !(found->second.stamp == stamp)) return std::nullopt;
  return found->second.probe;
}

void PluginScanCache::store(const std::filesystem::path& file, const FileStamp& stamp, const CachedProbe& probe) {
  if (file_.empty()) return;
  if (entries_.size() >= kMaxEntries) entries_.clear();
  entries_[file.string()] = Entry{stamp, probe};
  changed_ = true;
}

void PluginScanCache::save() const {
  if (file_.empty() || !changed_) return;
  nlohmann::json entries = nlohmann::json::object();
  for (const auto& [path, entry] : entries_) {
    // Files deleted or changed since they were probed would be probed anew anyway; kept, they
    // made every later command read them (temporary plugin directories pile up by the thousand).
    if (stamp_of(path) != entry.stamp) continue;
    nlohmann::json item = entry.probe.record ? record_json(*entry.probe.record) : nlohmann::json{{"refusal", entry.probe.refusal}};
    item["size"] = entry.stamp.size;
    item["mtime_ns"] = entry.stamp.mtime_ns;
    item["inode"] = entry.stamp.inode;
    item["device"] = entry.stamp.device;
    entries[path] = std::move(item);
  }
  const nlohmann::json document = {{"format", kFormat}, {"host", host_tag()}, {"entries", std::move(entries)}};
  const std::string text = document.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::error_code error;
  std::filesystem::create_directories(file_.parent_path(), error);
  const std::string temporary = file_.string() + ".tmp." + std::to_string(getpid());
  const int descriptor = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (descriptor < 0) {
    spdlog::debug("plugin scan cache {}: cannot write it; scanning afresh next time", file_.string());
    return;
  }
  write_all(descriptor, text);
  ::close(descriptor);
  if (std::rename(temporary.c_str(), file_.c_str()) != 0) {
    std::remove(temporary.c_str());
    spdlog::debug("plugin scan cache {}: cannot replace it", file_.string());
  }
}

}  // namespace paraplan::host
