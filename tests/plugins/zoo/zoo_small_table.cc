// zoo_small_table: a strategy function table shorter than ABI 1.0's.
#include "c_abi_plugin.h"

namespace {
pp_strategy_v1 table;
pp_plugin_v1 plugin;
}  // namespace

PP_EXTERN_C PP_EXPORT const pp_plugin_v1* paraplan_plugin_v1(void) {
  table = paraplan_test::accepting_strategy;
  table.struct_size = 16;
  plugin = paraplan_test::strategy_plugin("zoo_small_table", "function table too small", PP_ABI_MAJOR, PP_ABI_MINOR, &table);
  return &plugin;
}
PP_DECLARE_ENTRY_ALIAS_V1(paraplan_plugin_v1)
