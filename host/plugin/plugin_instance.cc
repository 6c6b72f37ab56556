#include "host/plugin/plugin_instance.h"

#include "host/core/errors.h"

namespace paraplan::host {

void throw_plugin_failure(pp_status status, const char* message, const std::string& context) {
  std::string text = message && *message ? message : "failed without a message";
  std::string full = context + ": " + text;
  if (status == PP_ERROR_CONSTRAINT || status == PP_ERROR_UNSUPPORTED) throw PlanError(full);
  throw InputError(full);
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
  destroy(handle_);
}

}  // namespace paraplan::host
