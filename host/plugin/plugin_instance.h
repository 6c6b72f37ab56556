// paraplan/host/plugin/plugin_instance.h: live objects created by plugins.
//
// Each instance pairs a plugin's create() with its destroy() and holds the library's shared_ptr,
// so the code that must destroy the object is still mapped when it does. Plugin failures come
// back as host errors: PP_ERROR_CONSTRAINT / UNSUPPORTED as PlanError (exit 1), anything else as
// InputError (exit 3), each message naming the plugin.
#pragma once

#include <string>

#include "host/core/errors.h"
#include "host/plugin/plugin_library.h"
#include "host/recipe/param_values.h"
#include "paraplan/plugin.h"

namespace paraplan::host {

// "context: message", the plugin's message made one line of valid UTF-8: how a failed call is
// reported, thrown or not.
std::string plugin_failure_message(pp_status status, const char* message, const std::string& context);
// Turns a plugin status into the matching host error; `context` says who and where.
[[noreturn]] void throw_plugin_failure(pp_status status, const char* message, const std::string& context);
// A refusal of the plan (PP_ERROR_CONSTRAINT, PP_ERROR_UNSUPPORTED): what the host reports as a
// PlanError, and what the search counts as a rejected plan.
inline bool refuses_plan(pp_status status) { return status == PP_ERROR_CONSTRAINT || status == PP_ERROR_UNSUPPORTED; }
[[noreturn]] void throw_escaped_exception(const std::string& context);

// A fixed-size, NUL-initialised buffer the plugin writes its error message into (not copyable:
// `error` points into it).
struct ErrorBuffer {
  ErrorBuffer() = default;
  ErrorBuffer(const ErrorBuffer&) = delete;
  ErrorBuffer& operator=(const ErrorBuffer&) = delete;
  char text[1024] = {};
  pp_error error{sizeof(pp_error), text, sizeof(text)};
};

// A plugin's refusal of a plan, kept without throwing: its status and message.
struct Refusal {
  pp_status status = PP_OK;
  ErrorBuffer buffer;
  explicit operator bool() const { return status != PP_OK; }
};

class PluginInstance {
 public:
  PluginInstance(const LoadedPlugin& plugin, ParamValues params, std::string context);
  ~PluginInstance();
  PluginInstance(const PluginInstance&) = delete;
  PluginInstance& operator=(const PluginInstance&) = delete;

  void* handle() const { return handle_; }
  const pp_plugin_v1& metadata() const { return *plugin_.metadata; }
  const LoadedPlugin& plugin() const { return plugin_; }
  const ParamValues& params() const { return params_; }
  const std::string& context() const { return context_; }  // "recipe.toml:12:1: strategy[0] 'tp'"

  // Calls `call(error)`; on failure throws with this instance's context. A C++ exception that
  // escapes the plugin through the C ABI (only a plugin not written with sdk.hpp lets one out)
  // is reported as the plugin's failure, not as the host's.
  template <typename Call>
  void invoke(Call&& call) const {
    Refusal refusal;
    invoke_or_refuse(call, refusal);
    if (refusal) throw_plugin_failure(refusal.status, refusal.buffer.text, context_);
  }

  // As invoke(), but a refusal of the plan comes back in `refusal` instead of as a PlanError: the
  // search rejects most plans this way, and an exception per rejection was half its time. Every
  // other failure still throws.
  template <typename Call>
  void invoke_or_refuse(Call&& call, Refusal& refusal) const {
    refusal.buffer.text[0] = '\0';
    pp_status status = PP_OK;
    try {
      status = call(&refusal.buffer.error);
    } catch (const HostError&) {
      throw;  // the host's own, from a callback of its own that the plugin passed through
    } catch (...) {
      throw_escaped_exception(context_);
    }
    refusal.status = status;
    if (status != PP_OK && !refuses_plan(status)) throw_plugin_failure(status, refusal.buffer.text, context_);
  }

  // The message invoke() would have thrown for `refusal`.
  std::string message_of(const Refusal& refusal) const {
    return plugin_failure_message(refusal.status, refusal.buffer.text, context_);
  }

 private:
  LoadedPlugin plugin_;
  ParamValues params_;
  std::string context_;
  void* handle_ = nullptr;
};

}  // namespace paraplan::host
