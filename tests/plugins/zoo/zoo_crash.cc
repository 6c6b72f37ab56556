// zoo_crash: dereferences a null pointer in its entry point; scanning runs it in a child, which
// dies of SIGSEGV, and the file is listed as failed with that signal.
#include "paraplan/plugin.h"

static volatile int* volatile nowhere = nullptr;

PP_EXTERN_C PP_EXPORT const pp_plugin_v1* paraplan_plugin_v1(void) {
  *nowhere = 1;
  return nullptr;
}
PP_DECLARE_ENTRY_ALIAS_V1(paraplan_plugin_v1)
