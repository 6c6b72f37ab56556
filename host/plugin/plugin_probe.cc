#include "host/plugin/plugin_probe.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>

#include "host/core/isolated_call.h"
#include "host/core/text_sanitizer.h"
#include "host/plugin/plugin_library.h"

namespace paraplan::host {

double plugin_scan_timeout() {
  const char* text = std::getenv("PARAPLAN_PLUGIN_SCAN_TIMEOUT");
  if (!text || !*text) return 10.0;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  return end && *end == '\0' && std::isfinite(seconds) && seconds > 0 && seconds <= 3600 ? seconds : 10.0;
}

PluginRecord probe_plugin(const std::filesystem::path& file, double timeout_s) {
  const IsolatedOutcome outcome = run_isolated(
      [&](int result) {
        nlohmann::json answer;
        try {
          const LoadedPlugin plugin = load_plugin_library(file);
          const pp_plugin_v1& metadata = *plugin.metadata;
          answer = {{"name", metadata.name},           {"version", metadata.version},
                    {"kind", static_cast<int>(metadata.kind)}, {"abi_major", metadata.abi_major},
                    {"abi_minor", metadata.abi_minor}};
        } catch (const PluginLoadError& failure) {
          answer = {{"refused", valid_utf8(failure.what())}};
        }
        write_all(result, answer.dump());
      },
      timeout_s);
  const std::string where = file.string() + ": ";
  if (outcome.out_bytes > 0)
    throw PluginLoadError(where + "wrote " + std::to_string(outcome.out_bytes) + " bytes to stdout while loading (\"" +
                          one_line(outcome.out, 60) + "\"); a plugin's entry point must have no side effects");
  if (!outcome.exited_cleanly())
    throw PluginLoadError(where + "loading it in a child process: the child " + one_line(outcome.describe(timeout_s), 300));
  const nlohmann::json answer = nlohmann::json::parse(outcome.result, nullptr, /*allow_exceptions=*/false);
  if (!answer.is_object()) throw PluginLoadError(where + "loading it in a child process gave no answer");
  if (answer.contains("refused")) throw PluginLoadError(answer["refused"].get<std::string>());
  PluginRecord record;
  record.name = answer.value("name", "");
  record.version = answer.value("version", "");
  record.kind = static_cast<pp_plugin_kind>(answer.value("kind", 0));
  record.abi_major = answer.value("abi_major", 0u);
  record.abi_minor = answer.value("abi_minor", 0u);
  return record;
}

}  // namespace paraplan::host
