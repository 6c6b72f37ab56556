// test_null_entry: exports the v1 entry point (and its alias) but returns NULL, as a plugin whose
// static initialisation failed would. The host must skip it instead of dereferencing NULL.
#include "c_abi_plugin.h"

PP_EXTERN_C PP_EXPORT const pp_plugin_v1* paraplan_plugin_v1(void) { return nullptr; }
PP_DECLARE_ENTRY_ALIAS_V1(paraplan_plugin_v1)
