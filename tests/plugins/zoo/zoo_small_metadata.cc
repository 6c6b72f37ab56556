// zoo_small_metadata: metadata whose struct_size claims fewer bytes than its own minor's struct.
#include "c_abi_plugin.h"

namespace {
pp_plugin_v1 plugin;
}

PP_EXTERN_C PP_EXPORT const pp_plugin_v1* paraplan_plugin_v1(void) {
  plugin = paraplan_test::strategy_plugin("zoo_small_metadata", "metadata too small", PP_ABI_MAJOR, PP_ABI_MINOR);
  plugin.struct_size = 40;
  return &plugin;
}
PP_DECLARE_ENTRY_ALIAS_V1(paraplan_plugin_v1)
