#include "host/plugin/host_services.h"

#include <spdlog/spdlog.h>

#include <deque>
#include <mutex>

#include "host/core/text_sanitizer.h"
#include "host/plugin/abi_history.h"
#include "host/report/report_output.h"

namespace paraplan::host {
namespace {

struct PluginServices {
  std::string name;
  pp_host_v1 host{};
};

spdlog::level::level_enum spdlog_level(pp_log_level level) {
  switch (level) {
    case PP_LOG_DEBUG: return spdlog::level::debug;
    case PP_LOG_INFO: return spdlog::level::info;
    case PP_LOG_WARNING: return spdlog::level::warn;
    default: return spdlog::level::err;  // an unknown level is not hidden
  }
}

void log_message(void* context, pp_log_level level, const char* message) {
  try {  // nothing may throw into the plugin's frames
    const auto& services = *static_cast<const PluginServices*>(context);
    spdlog::log(spdlog_level(level), "{}: {}", services.name, one_line(bounded_string(message, 1 << 16)));
  } catch (...) {
  }
}

void withhold(void*) {
  try {
    withhold_report();
  } catch (...) {
  }
}

const pp_host_v1* services_for(const std::string& name) {
  static std::mutex mutex;
  static std::deque<PluginServices> registry;  // never shrinks: plugins keep these pointers
  std::lock_guard<std::mutex> lock(mutex);
  for (const PluginServices& services : registry)
    if (services.name == name) return &services.host;
  PluginServices& services = registry.emplace_back();
  services.name = name;
  services.host = pp_host_v1{sizeof(pp_host_v1), PP_ABI_MAJOR, PP_ABI_MINOR, &services, &log_message, &withhold};
  return &services.host;
}

}  // namespace

void attach_host_services(const LoadedPlugin& plugin) {
  const pp_plugin_v1& metadata = *plugin.metadata;
  if (!holds_fields_of(metadata.abi_minor, metadata.struct_size, 5, &AbiMinorSizes::plugin) || !metadata.attach_host)
    return;
  try {
    metadata.attach_host(services_for(plugin.name()));
  } catch (...) {  // only a plugin not written with sdk.hpp can let one escape
    throw PluginLoadError(plugin.file.string() + ": attach_host threw a C++ exception across the C ABI");
  }
}

}  // namespace paraplan::host
