// zoo_huge_strings: a 1 MiB description; the host bounds what it reads and refuses the file.
#include <cstring>

#include "c_abi_plugin.h"

namespace {
char description[1 << 20];
pp_plugin_v1 plugin;
}  // namespace

PP_EXTERN_C PP_EXPORT const pp_plugin_v1* paraplan_plugin_v1(void) {
  std::memset(description, 'x', sizeof(description) - 1);
  plugin = paraplan_test::strategy_plugin("zoo_huge_strings", description, PP_ABI_MAJOR, PP_ABI_MINOR);
  return &plugin;
}
PP_DECLARE_ENTRY_ALIAS_V1(paraplan_plugin_v1)
