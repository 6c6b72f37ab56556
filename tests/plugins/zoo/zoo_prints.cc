// zoo_prints: writes to stdout from its entry point, which must have no side effects: stdout is
// the report's. Refused, so that no plugin can put text into `--json` output while loading.
#include <cstdio>

#include "c_abi_plugin.h"

static const pp_plugin_v1 kPlugin = paraplan_test::strategy_plugin("zoo_prints", "prints while loading", PP_ABI_MAJOR, PP_ABI_MINOR);

PP_EXTERN_C PP_EXPORT const pp_plugin_v1* paraplan_plugin_v1(void) {
  std::printf("hello from zoo_prints\n");
  std::fflush(stdout);
  return &kPlugin;
}
PP_DECLARE_ENTRY_ALIAS_V1(paraplan_plugin_v1)
