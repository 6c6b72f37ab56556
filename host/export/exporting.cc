#include "host/export/exporting.h"

#include <algorithm>
#include <filesystem>

#include "host/core/errors.h"
#include "host/core/text_sanitizer.h"
#include "host/plan/execution.h"
#include "host/plan/plugin_tables.h"
#include "host/plugin/plugin_instance.h"
#include "host/recipe/param_values.h"
#include "host/recipe/source_location.h"

namespace paraplan::host {
namespace {

constexpr size_t kMaxNameLength = 1024;

// A name the host may create under the output directory: relative, no "..", no empty segment.
bool safe_name(const std::string& name) {
  if (name.empty() || name.front() == '/' || name.find('\\') != std::string::npos) return false;
  for (char c : name)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) return false;
  if (valid_utf8(name) != name) return false;
  for (const auto& part : std::filesystem::path(name))
    if (part == ".." || part == "." || part.empty()) return false;
  return true;
}

struct Collector {
  ExportResult result;
  std::string failure;  // the first bad file name, reported after the call returns

  // The callbacks never throw into the plugin: a failure is kept and reported after the call.
  static void file(void* context, const char* name, const void* data, uint64_t size, int32_t text) {
    auto& self = *static_cast<Collector*>(context);
    try {
      self.add_file(name, data, size, text);
    } catch (...) {
      if (self.failure.empty()) self.failure = "wrote more than the host could hold";
    }
  }
  void add_file(const char* name, const void* data, uint64_t size, int32_t text) {
    Collector& self = *this;
    const std::string file_name = bounded_string(name, kMaxNameLength + 1);
    if (file_name.size() > kMaxNameLength || !safe_name(file_name)) {
      if (self.failure.empty()) self.failure = "wrote a file named '" + one_line(file_name, 120) + "' outside the output directory";
      return;
    }
    if (size > 0 && !data) {
      if (self.failure.empty()) self.failure = "wrote the file '" + file_name + "' without its data";
      return;
    }
    const bool taken = std::any_of(self.result.files.begin(), self.result.files.end(),
                                   [&](const ExportedFile& other) { return other.name == file_name; });
    if (taken) {
      if (self.failure.empty()) self.failure = "wrote the file '" + file_name + "' twice";
      return;
    }
    self.result.files.push_back({file_name, std::string(static_cast<const char*>(data), data ? size : 0), text != 0});
  }
  static void unexpressed(void* context, const char* message) {
    try {
      static_cast<Collector*>(context)->result.unexpressed.push_back(one_line(bounded_string(message, 1 << 16)));
    } catch (...) {
    }
  }
};

}  // namespace

void check_export_tables(const Recipe& recipe, const PluginCatalog& catalog) {
  checked_plugin_tables(recipe, recipe.export_table, "export", catalog, PP_KIND_EXPORTER, "exporter");
}

ExportResult run_exporter(const std::string& exporter, const Recipe& recipe, const PluginCatalog& catalog,
                          const ComposedPlan& composed, const HardwareBinding& hardware) {
  const LoadedPlugin& plugin = catalog.require(exporter, PP_KIND_EXPORTER);
  require_plan_reader(plugin, recipe, "exporter");
  const toml::table* table =
      checked_plugin_tables(recipe, recipe.export_table, "export", catalog, PP_KIND_EXPORTER, "exporter", exporter);
  ParamValues params = ParamValues::bind(*plugin.metadata, table, "export." + exporter, recipe.file);
  PluginInstance instance(plugin, std::move(params),
                          location_of(recipe.file, table ? table : recipe.export_table) + ": exporter '" + exporter + "'");

  // The strategies' settings, kept alive for the call.
  std::vector<std::vector<pp_export_setting>> settings;
  std::vector<pp_export_strategy> strategies;
  for (const AppliedStrategy& strategy : composed.strategies) {
    std::vector<pp_export_setting>& list = settings.emplace_back();
    for (const auto& [key, value] : strategy.settings)
      list.push_back(pp_export_setting{sizeof(pp_export_setting), key.c_str(), value.c_str()});
  }
  for (size_t i = 0; i < composed.strategies.size(); ++i)
    strategies.push_back(pp_export_strategy{sizeof(pp_export_strategy), composed.strategies[i].name.c_str(),
                                            composed.strategies[i].degree, settings[i].data(),
                                            static_cast<uint32_t>(settings[i].size())});
  const pp_export_context_v1 context{sizeof(pp_export_context_v1), recipe.file.c_str(), recipe.model.name.c_str(),
                                     strategies.data(), static_cast<uint32_t>(strategies.size())};
  Collector collector;
  const pp_artifact_sink_v1 sink{sizeof(pp_artifact_sink_v1), &collector, &Collector::file, &Collector::unexpressed};
  const pp_plan_view_v1 view = composed.plan->view();
  const pp_hardware_binding_v1 binding = hardware.binding();
  instance.invoke([&](pp_error* error) {
    return plugin.metadata->exporter->export_plan(instance.handle(), &view, &binding, &context, &sink, error);
  });
  if (!collector.failure.empty())
    throw InputError(plugin.file.string() + ": exporter '" + exporter + "' " + collector.failure);
  return std::move(collector.result);
}

}  // namespace paraplan::host
