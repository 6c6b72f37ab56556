// test_abi_minor: claims a newer minor than the host's. Its structs may carry fields the host does
// not know, so the host must refuse it (plugin minor <= host minor), naming both versions.
#include "c_abi_plugin.h"

static const pp_plugin_v1 kPlugin = paraplan_test::strategy_plugin(
    "test_abi_minor", "built for a newer SDK minor than the host's", PP_ABI_MAJOR, PP_ABI_MINOR + 1);

PP_EXTERN_C PP_EXPORT const pp_plugin_v1* paraplan_plugin_v1(void) { return &kPlugin; }
PP_DECLARE_ENTRY_ALIAS_V1(paraplan_plugin_v1)
