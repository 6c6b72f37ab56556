// test_abi_v2_only: a plugin built for a future SDK whose major 2 entry point is all it exports.
// The host recognises the paraplan_entry_v2 alias in the "paraplan" section but finds no v1 entry
// point, and must skip the file before running any of its code.
#include "c_abi_plugin.h"

// What a future SDK's entry point might return; like every ABI struct it starts with struct_size.
struct test_plugin_v2 {
  uint32_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;
  const char* name;
};

static const test_plugin_v2 kPlugin = {sizeof(test_plugin_v2), 2, 0, "test_abi_v2_only"};

PP_EXTERN_C PP_EXPORT const test_plugin_v2* paraplan_plugin_v2(void) { return &kPlugin; }
// The v2 alias, laid out as PP_DECLARE_ENTRY_ALIAS_V1 lays out the v1 one.
PP_EXTERN_C PP_EXPORT const void* paraplan_entry_v2;
__attribute__((section(PP_ALIAS_SECTION), weak)) const void* paraplan_entry_v2 = (const void*)&paraplan_plugin_v2;
