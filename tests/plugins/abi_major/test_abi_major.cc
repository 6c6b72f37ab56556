// test_abi_major: claims the next ABI major. The host must refuse it at load time, naming both
// majors and this file, without calling anything in its table.
#include "c_abi_plugin.h"

static const pp_plugin_v1 kPlugin = paraplan_test::strategy_plugin(
    "test_abi_major", "built for an incompatible future SDK major", PP_ABI_MAJOR + 1, PP_ABI_MINOR);

PP_EXTERN_C PP_EXPORT const pp_plugin_v1* paraplan_plugin_v1(void) { return &kPlugin; }
PP_DECLARE_ENTRY_ALIAS_V1(paraplan_plugin_v1)
