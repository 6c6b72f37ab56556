// paraplan/host/plugin/host_services.h: what the host offers a loaded plugin (paraplan/host.h).
//
// A plugin built against ABI 1.5 or later that has attach_host gets one pp_host_v1 right after it
// is loaded in this process. Its log function sends the plugin's messages through the host's
// logger (stderr, -v/-q/--debug), as one sanitised line prefixed with the plugin's name. The
// services of a plugin name live as long as the process: a library may stay mapped after the
// catalog that loaded it is gone, and must never hold a dangling pointer.
#pragma once

#include "host/plugin/plugin_library.h"

namespace paraplan::host {

void attach_host_services(const LoadedPlugin& plugin);

}  // namespace paraplan::host
