// paraplan/host/export/exporting.h: running an exporter plugin over a composed plan.
//
// The exporter gets the plan, the hardware binding and the strategies' settings (exporter.h) and
// hands back files and the settings its target cannot express. The host checks every file name
// (relative, inside the output directory) so a careless or hostile plugin cannot write elsewhere.
//
//   ExportResult result = run_exporter("megatron", recipe, catalog, composed, hardware);
//   for (const ExportedFile& file : result.files) ...
#pragma once

#include <string>
#include <vector>

#include "host/plan/composer.h"
#include "host/plan/hardware_binding.h"
#include "host/recipe/recipe.h"

namespace paraplan::host {

struct ExportedFile {
  std::string name;  // relative to the output directory
  std::string data;
  bool text = true;
};

struct ExportResult {
  std::vector<ExportedFile> files;
  std::vector<std::string> unexpressed;  // one line each
};

ExportResult run_exporter(const std::string& exporter, const Recipe& recipe, const PluginCatalog& catalog,
                          const ComposedPlan& composed, const HardwareBinding& hardware);

// The [export.<name>] tables: each must name a loaded exporter and match its schema.
void check_export_tables(const Recipe& recipe, const PluginCatalog& catalog);

}  // namespace paraplan::host
