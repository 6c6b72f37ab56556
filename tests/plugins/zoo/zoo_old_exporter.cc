// zoo_old_exporter: an exporter claiming ABI 1.2, before exporters existed.
#include "c_abi_plugin.h"

namespace {
pp_plugin_v1 plugin;
}

PP_EXTERN_C PP_EXPORT const pp_plugin_v1* paraplan_plugin_v1(void) {
  plugin = paraplan_test::strategy_plugin("zoo_old_exporter", "an exporter of ABI 1.2", PP_ABI_MAJOR, 2);
  plugin.kind = PP_KIND_EXPORTER;
  plugin.strategy = nullptr;
  return &plugin;
}
PP_DECLARE_ENTRY_ALIAS_V1(paraplan_plugin_v1)
