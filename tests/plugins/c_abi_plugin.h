// tests/plugins/c_abi_plugin.h: the shared parts of the hand-written C-ABI test plugins.
//
// These plugins break the handshake on purpose (wrong versions, a NULL entry point, a failing
// create), so they fill pp_plugin_v1 by hand instead of through paraplan/sdk.hpp, which always
// writes the SDK's own versions. Their strategy table accepts everything and changes nothing: a
// host that wrongly accepts one of them can still run it safely, and the test catches the
// acceptance itself.
#pragma once

#include <cstdio>

#include "paraplan/plugin.h"

namespace paraplan_test {

inline void write_error(pp_error* error, const char* message) {
  if (error != nullptr && error->message != nullptr && error->capacity > 0)
    std::snprintf(error->message, error->capacity, "%s", message);
}

// Instances are never dereferenced; a non-NULL token keeps hosts that check for NULL happy.
inline int instance_token;

inline pp_status accept_create(const pp_param_set*, void** instance, pp_error*) {
  *instance = &instance_token;
  return PP_OK;
}
inline void accept_destroy(void*) {}
inline pp_status accept_validate(void*, const pp_strategy_context*, pp_error*) { return PP_OK; }
inline pp_status accept_apply(void*, const pp_strategy_context*, const pp_plan_api_v1*, pp_error*) {
  return PP_OK;
}

// Sized as an ABI 1.0 table (no search space): the host must not read past struct_size.
inline constexpr pp_strategy_v1 accepting_strategy = {
    .struct_size = PP_STRATEGY_V1_0_SIZE,
    .apply_order = 100,
    .flags = 0,
    .create = accept_create,
    .destroy = accept_destroy,
    .validate = accept_validate,
    .apply = accept_apply,
    .search_cases = nullptr,
    .search_case_count = 0,
};

// Metadata of a strategy plugin; the caller states the ABI version it claims to be built for.
constexpr pp_plugin_v1 strategy_plugin(const char* name, const char* description,
                                       uint32_t abi_major, uint32_t abi_minor,
                                       const pp_strategy_v1* table = &accepting_strategy) {
  return pp_plugin_v1{
      .struct_size = sizeof(pp_plugin_v1),
      .abi_major = abi_major,
      .abi_minor = abi_minor,
      .kind = PP_KIND_STRATEGY,
      .name = name,
      .version = "1.0.0",
      .description = description,
      .params = nullptr,
      .param_count = 0,
      .strategy = table,
      .hardware = nullptr,
      .executor = nullptr,
      .exporter = nullptr,
      .attach_host = nullptr,
  };
}

}  // namespace paraplan_test
