// zoo_crash: crashes with SIGSEGV in its entry point (raised, as a stray pointer would, but
// without undefined behaviour a sanitizer would report first); scanning runs it in a child,
// which dies of the signal, and the file is listed as failed with it.
#include <signal.h>

#include "paraplan/plugin.h"

PP_EXTERN_C PP_EXPORT const pp_plugin_v1* paraplan_plugin_v1(void) {
  raise(SIGSEGV);
  return nullptr;
}
PP_DECLARE_ENTRY_ALIAS_V1(paraplan_plugin_v1)
