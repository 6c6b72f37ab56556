#include "host/plugin/plugin_instance.h"

#include "host/core/errors.h"
#include "host/core/text_sanitizer.h"

namespace paraplan::host {

std::string plugin_failure_message(pp_status status, const char* message, const std::string& context) {
  const std::string bounded = bounded_string(message, sizeof(ErrorBuffer::text));
  std::string text = bounded.empty() ? "failed without a message" : one_line(bounded);
  if (status < PP_ERROR_INVALID_ARGUMENT || status > PP_ERROR_INTERNAL)
    text += " (and returned the unknown status " + std::to_string(static_cast<int>(status)) + ")";
  return context + ": " + text;
}

void throw_plugin_failure(pp_status status, const char* message, const std::string& context) {
  std::string full = plugin_failure_message(status, message, context);
  if (refuses_plan(status)) throw PlanError(full);
  throw InputError(full);
}

void throw_escaped_exception(const std::string& context) {
  throw InputError(context + ": the plugin let a C++ exception escape through the C ABI (a plugin must return a "
                             "status; paraplan/sdk.hpp does that for you)");
}

PluginInstance::PluginInstance(const LoadedPlugin& plugin, ParamValues params, std::string context)
    : plugin_(plugin), params_(std::move(params)), context_(std::move(context)) {
  const pp_plugin_v1& metadata = *plugin_.metadata;
  auto create = metadata.kind == PP_KIND_STRATEGY   ? metadata.strategy->create
                : metadata.kind == PP_KIND_HARDWARE ? metadata.hardware->create
                : metadata.kind == PP_KIND_EXPORTER ? metadata.exporter->create
                                                    : metadata.executor->create;
  invoke([&](pp_error* error) { return create(params_.set(), &handle_, error); });
}

PluginInstance::~PluginInstance() {
  if (!handle_) return;
  const pp_plugin_v1& metadata = *plugin_.metadata;
  auto destroy = metadata.kind == PP_KIND_STRATEGY   ? metadata.strategy->destroy
                 : metadata.kind == PP_KIND_HARDWARE ? metadata.hardware->destroy
                 : metadata.kind == PP_KIND_EXPORTER ? metadata.exporter->destroy
                                                     : metadata.executor->destroy;
  try {
    destroy(handle_);
  } catch (...) {  // a destructor must not throw; the plugin's failure here changes no result
  }
}

}  // namespace paraplan::host
