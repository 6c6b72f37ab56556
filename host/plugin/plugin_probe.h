// paraplan/host/plugin/plugin_probe.h: a plugin file's metadata, asked for in a child process.
//
// Scanning must survive any file on the plugin path: the handshake (plugin_library.h) runs the
// file's constructors and entry point, which may crash, abort, hang or print. probe_plugin runs
// it in a child (core/isolated_call.h) and brings back what `plugins list` shows, or why the
// file is refused: the handshake's own reason, the signal that ended the child, the timeout, or
// output written to stdout (which belongs to the report: the entry point must have no side
// effects). Only files that pass are ever loaded into the host process, and only when used.
#pragma once

#include <filesystem>
#include <string>

#include "host/plugin/plugin_search_path.h"
#include "paraplan/plugin.h"

namespace paraplan::host {

// A usable plugin file, known without loading it into this process.
struct PluginRecord {
  std::filesystem::path file;    // as found in its directory
  std::filesystem::path target;  // what it resolves to (the same unless `file` is a link)
  PluginOrigin origin = PluginOrigin::kCommandLine;
  std::string name;
  std::string version;
  pp_plugin_kind kind = PP_KIND_STRATEGY;
  uint32_t abi_major = 0, abi_minor = 0;
};

// The handshake of `file` in a child, at most `timeout_s` seconds. Returns the record's name,
// version, kind and ABI (the caller fills file, target and origin); throws PluginLoadError with
// the reason the file is refused.
PluginRecord probe_plugin(const std::filesystem::path& file, double timeout_s);

// The scan's time limit per file: PARAPLAN_PLUGIN_SCAN_TIMEOUT seconds, 10 by default.
double plugin_scan_timeout();

}  // namespace paraplan::host
