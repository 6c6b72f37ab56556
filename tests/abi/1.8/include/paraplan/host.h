/* paraplan/host.h: the services the host offers every plugin (ABI 1.5).
 *
 * After loading a plugin built against 1.5 or later, and before any other call, the host calls
 * its optional pp_plugin_v1.attach_host with a pp_host_v1 that stays valid until the plugin is
 * unloaded. Through it a plugin logs: its messages go where the host's own go (stderr, filtered
 * by -v/-q/--debug, prefixed with "paraplan: <level>: <plugin name>: "), never to stdout, which
 * belongs to the report. A plugin built against an older minor is never attached and can keep
 * writing to stderr itself.
 *
 * An executor that runs one plan in several processes, each a whole paraplan command (the MPI
 * ranks of `paraplan execute`), says in all but one of them that this process's report is not
 * wanted: withhold_report makes the host print nothing on stdout for the command. Whatever a
 * plugin writes to stdout itself goes to stderr (stdout is the report's).
 *
 * The functions may be called from any thread; a message is one line of UTF-8 text (the host
 * replaces invalid bytes and cuts it at 4 KiB). Appended fields follow the struct_size rule.
 */
#ifndef PARAPLAN_HOST_H
#define PARAPLAN_HOST_H

#include "paraplan/abi.h"

typedef enum pp_log_level {
  PP_LOG_DEBUG = 1,   /* shown with --debug */
  PP_LOG_INFO = 2,    /* shown with -v */
  PP_LOG_WARNING = 3, /* shown unless -q */
  PP_LOG_ERROR = 4    /* always shown */
} pp_log_level;

typedef struct pp_host_v1 {
  uint32_t struct_size;
  uint32_t abi_major; /* the host's PP_ABI_MAJOR and PP_ABI_MINOR */
  uint32_t abi_minor;
  void* context;
  void (*log)(void* context, pp_log_level level, const char* message);
  void (*withhold_report)(void* context);
} pp_host_v1;

#endif /* PARAPLAN_HOST_H */
