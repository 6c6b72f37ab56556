// paraplan/host/plugin/plugin_scan_cache.h: what earlier scans learned about plugin files.
//
// Probing a file in a child process (plugin_probe.h) costs a fork and a dlopen, so the answer,
// the record or the reason it was refused, is kept keyed by the file's path and the size,
// modification time and inode of what it resolves to: change any of them and it is probed anew.
// The cache is one JSON file, PARAPLAN_PLUGIN_CACHE if set ("off" disables it), else
// $XDG_CACHE_HOME/paraplan/plugin-scan.json or ~/.cache/paraplan/plugin-scan.json. It is written
// atomically (a temporary file renamed over it), readable by its owner only, and ignored when
// another user could have written it. Entries name the host's ABI, so a new host probes again.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "host/plugin/plugin_probe.h"

namespace paraplan::host {

struct FileStamp {
  uintmax_t size = 0;
  int64_t mtime_ns = 0;
  uint64_t inode = 0, device = 0;
  bool operator==(const FileStamp&) const = default;
};

// The stamp of what `file` resolves to; nullopt when it cannot be read.
std::optional<FileStamp> stamp_of(const std::filesystem::path& file);

struct CachedProbe {
  std::optional<PluginRecord> record;  // name, version, kind and ABI of a usable plugin
  std::string refusal;                 // else why it is refused
};

class PluginScanCache {
 public:
  // The cache the environment names (disabled when there is none or it cannot be trusted).
  static PluginScanCache open();
  // A cache in `file` (empty path: disabled).
  explicit PluginScanCache(std::filesystem::path file);

  std::optional<CachedProbe> lookup(const std::filesystem::path& file, const FileStamp& stamp) const;
  void store(const std::filesystem::path& file, const FileStamp& stamp, const CachedProbe& probe);
  // Writes the cache back if anything changed; failures are logged, never fatal.
  void save() const;
  const std::filesystem::path& file() const { return file_; }

 private:
  struct Entry {
    FileStamp stamp;
    CachedProbe probe;
  };
  std::filesystem::path file_;
  std::map<std::string, Entry> entries_;
  bool changed_ = false;
};

}  // namespace paraplan::host
