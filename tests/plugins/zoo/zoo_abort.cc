// zoo_abort: aborts while its library is being loaded (a static initialiser), before any
// entry point runs; the child dies of SIGABRT.
#include <cstdlib>

#include "paraplan/plugin.h"

namespace {
struct AbortsOnLoad {
  AbortsOnLoad() { std::abort(); }
} aborts_on_load;
}  // namespace

PP_EXTERN_C PP_EXPORT const pp_plugin_v1* paraplan_plugin_v1(void) { return nullptr; }
PP_DECLARE_ENTRY_ALIAS_V1(paraplan_plugin_v1)
