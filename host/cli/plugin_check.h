// paraplan/host/cli/plugin_check.h: `paraplan plugins check FILE`, a plugin's whole surface run
// in a child process.
//
// The file is loaded (handshake, host services) and its instance created with default
// parameters, then exercised by kind on a small plan (4 layers, 8 GPUs): a strategy is validated
// and applied (composed with the bundled strategies) and the plan evaluated; a hardware profile
// described, checked and its cost functions called, then a plan evaluated on it; an executor run
// on the plan (and its batched figures asked for); an exporter asked to export it. Each stage is
// reported as it ends, so a crash, an abort or a hang names the stage it happened in; a stage the
// small plan cannot take (a constraint) is "refused", not failed.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "host/plugin/plugin_catalog.h"

namespace paraplan::host {

struct CheckStage {
  std::string name;    // "load", "create", "validate", "apply", "evaluate", ...
  std::string status;  // "ok", "refused", "failed"
  std::string detail;  // what happened, one line
};

struct PluginCheck {
  std::filesystem::path file;
  std::string plugin, kind;  // when it loaded
  std::vector<CheckStage> stages;
  bool passed() const;
};

// Runs the check of `file` in a child with at most `timeout_s` seconds; `catalog` gives the
// bundled plugins the small plan is composed with.
PluginCheck check_plugin_file(const std::filesystem::path& file, const PluginCatalog& catalog, double timeout_s);

}  // namespace paraplan::host
