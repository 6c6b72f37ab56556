// zoo_unterminated: a name with no terminating NUL within any bound the host reads.
#include <cstring>

#include "c_abi_plugin.h"

namespace {
char name[256];
pp_plugin_v1 plugin;
}  // namespace

PP_EXTERN_C PP_EXPORT const pp_plugin_v1* paraplan_plugin_v1(void) {
  std::memset(name, 'z', sizeof(name));  // the host reads at most 64 bytes of it
  plugin = paraplan_test::strategy_plugin(name, "an unterminated name", PP_ABI_MAJOR, PP_ABI_MINOR);
  return &plugin;
}
PP_DECLARE_ENTRY_ALIAS_V1(paraplan_plugin_v1)
