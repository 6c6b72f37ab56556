// zoo_hang: never returns from its entry point; the scan's timeout ends the child.
#include <unistd.h>

#include "paraplan/plugin.h"

PP_EXTERN_C PP_EXPORT const pp_plugin_v1* paraplan_plugin_v1(void) {
  for (;;) pause();
}
PP_DECLARE_ENTRY_ALIAS_V1(paraplan_plugin_v1)
