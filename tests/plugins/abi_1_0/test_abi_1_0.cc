// test_abi_1_0: a strategy built against ABI 1.0, before search cases existed: it claims minor 0
// and its function table ends where 1.0's did. A 1.1 host must load it and never read past it.
#include "c_abi_plugin.h"

static const pp_plugin_v1 kPlugin = paraplan_test::strategy_plugin(
    "test_abi_1_0", "built for SDK ABI 1.0 (no search cases)", PP_ABI_MAJOR, 0);

PP_EXTERN_C PP_EXPORT const pp_plugin_v1* paraplan_plugin_v1(void) { return &kPlugin; }
PP_DECLARE_ENTRY_ALIAS_V1(paraplan_plugin_v1)
