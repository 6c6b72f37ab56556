// zoo_throws: a C++ strategy written without sdk.hpp's trampolines, whose apply lets an exception
// out through the C ABI; the host reports it as the plugin's failure, not its own.
#include <stdexcept>

#include "c_abi_plugin.h"

namespace {

pp_status apply(void*, const pp_strategy_context*, const pp_plan_api_v1*, pp_error*) {
  throw std::runtime_error("zoo_throws: thrown through the C ABI");
}

pp_strategy_v1 table;
pp_plugin_v1 plugin;

}  // namespace

PP_EXTERN_C PP_EXPORT const pp_plugin_v1* paraplan_plugin_v1(void) {
  table = paraplan_test::accepting_strategy;
  table.struct_size = sizeof(pp_strategy_v1);  // this minor's table, search cases empty
  table.apply = &apply;
  plugin = paraplan_test::strategy_plugin("zoo_throws", "throws across the C ABI", PP_ABI_MAJOR, PP_ABI_MINOR, &table);
  return &plugin;
}
PP_DECLARE_ENTRY_ALIAS_V1(paraplan_plugin_v1)
