/* paraplan/plugin.h: the one entry point every plugin exports.
 *
 *   PP_EXTERN_C PP_EXPORT const pp_plugin_v1* paraplan_plugin_v1(void);
 *
 * It returns static metadata plus the function table of the plugin's kind; calling it must have
 * no side effects. The C++ authoring layer (paraplan/sdk.hpp) also exports the entry point as a
 * Boost.DLL alias in the section "paraplan", so the host can recognise a plugin and its ABI major
 * from the file's symbol table without loading it.
 *
 * A future incompatible ABI adds `paraplan_plugin_v2`; a plugin may export both.
 */
#ifndef PARAPLAN_PLUGIN_H
#define PARAPLAN_PLUGIN_H

#include "paraplan/abi.h"
#include "paraplan/executor.h"
#include "paraplan/exporter.h"
#include "paraplan/hardware.h"
#include "paraplan/host.h"
#include "paraplan/names.h"
#include "paraplan/params.h"
#include "paraplan/strategy.h"

#define PP_ENTRY_POINT_V1 "paraplan_plugin_v1"
#define PP_ALIAS_SECTION "paraplan"

typedef struct pp_plugin_v1 {
  uint32_t struct_size;
  uint32_t abi_major; /* PP_ABI_MAJOR the plugin was built against */
  uint32_t abi_minor; /* PP_ABI_MINOR the plugin was built against */
  pp_plugin_kind kind;
  const char* name;    /* unique, lowercase, used in recipes: [[strategy]] name = "tp" */
  const char* version; /* the plugin's own version, e.g. "1.2.0" */
  const char* description;
  const pp_param_spec* params;
  uint32_t param_count;
  /* Exactly one is non-NULL, matching `kind`. */
  const pp_strategy_v1* strategy;
  const pp_hardware_v1* hardware;
  const pp_executor_v1* executor;
  const pp_exporter_v1* exporter; /* ABI 1.3 */
  /* ABI 1.5, optional (NULL: the plugin uses no host services). Called once, after loading and
   * before any other call, with services that stay valid while the plugin is loaded (host.h). */
  void (*attach_host)(const pp_host_v1* host);
} pp_plugin_v1;

typedef const pp_plugin_v1* (*pp_plugin_entry_v1)(void);

/* Exports `entry` (a function named paraplan_plugin_v1) a second time as a Boost.DLL-style alias:
 * a pointer named paraplan_entry_v1 in the section "paraplan", which boost::dll::library_info
 * lists without loading the file. Weak, like Boost's own aliases, and Boost-free so plugins do
 * not pull Boost's unique symbols into the process (which would keep them from unloading). */
#if defined(__GNUC__) && !defined(_WIN32)
#define PP_DECLARE_ENTRY_ALIAS_V1(entry)                                                        \
  PP_EXTERN_C PP_EXPORT const void* paraplan_entry_v1;                                         \
  __attribute__((section(PP_ALIAS_SECTION), weak)) const void* paraplan_entry_v1 = (const void*)&entry;
#else
#define PP_DECLARE_ENTRY_ALIAS_V1(entry)
#endif

#endif /* PARAPLAN_PLUGIN_H */
