#include "host/plan/hardware_binding.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include <spdlog/spdlog.h>
#include <toml++/toml.h>

#include "paraplan/cost_model.hpp"

#include "host/core/edit_distance.h"
#include "host/core/errors.h"
#include "host/model/precision_names.h"
#include "host/plan/workload_builder.h"
#include "host/plan/profile_check.h"
#include "host/plan/profile_toml.h"
#include "host/plugin/abi_history.h"
#include "host/plugin/plugin_trust.h"
#include "host/recipe/input_file.h"
#include "host/recipe/source_location.h"

namespace paraplan::host {

namespace {

// The host's copy of a hardware plugin's cost functions: each call's status, exceptions and
// result are checked before an executor sees them (a time must be finite and not negative).
struct GuardedFunctions {
  const pp_hardware_v1* plugin;
  void* instance;
  std::string name;
  const pp_hardware_profile* profile;  // the checked one
};

pp_status refuse_time(pp_error* error, const std::string& message) {
  if (error && error->message && error->capacity > 0) std::snprintf(error->message, error->capacity, "%s", message.c_str());
  return PP_ERROR_INVALID_ARGUMENT;
}

template <typename Call>
pp_status guarded_time(const GuardedFunctions& functions, const char* what, double* seconds, pp_error* error,
                       Call&& call) noexcept {
  try {
    double result = 0.0;
    const pp_status status = call(&result);
    if (status != PP_OK) return status;
    if (!std::isfinite(result) || result < 0)
      return refuse_time(error, "hardware '" + functions.name + "' " + what + " gave " + std::to_string(result) +
                                    " s, not a finite time >= 0");
    *seconds = result;
    return PP_OK;
  } catch (...) {
    return refuse_time(error, "hardware '" + functions.name + "' " + what + " let a C++ exception escape");
  }
}

pp_status guarded_gemm_time(void* instance, double m, double n, double k, pp_dtype dtype, double* seconds, pp_error* error) {
  const auto& functions = *static_cast<const GuardedFunctions*>(instance);
  return guarded_time(functions, "gemm_time", seconds, error, [&](double* result) {
    return functions.plugin->gemm_time(functions.instance, m, n, k, dtype, result, error);
  });
}

pp_status guarded_collective_time(void* instance, pp_collective kind, double bytes, int64_t group, int64_t stride,
                                  double* seconds, pp_error* error) {
  const auto& functions = *static_cast<const GuardedFunctions*>(instance);
  return guarded_time(functions, "collective_time", seconds, error, [&](double* result) {
    return functions.plugin->collective_time(functions.instance, kind, bytes, group, stride, result, error);
  });
}

// The checked profile again (an executor has it in the binding already).
pp_status guarded_describe(void* instance, pp_hardware_profile* profile, pp_error*) {
  const auto& functions = *static_cast<const GuardedFunctions*>(instance);
  if (!profile || profile->struct_size < sizeof(uint32_t)) return PP_ERROR_INVALID_ARGUMENT;
  const uint32_t size = std::min<uint32_t>(profile->struct_size, sizeof(pp_hardware_profile));
  std::memcpy(profile, functions.profile, size);
  profile->struct_size = size;
  return PP_OK;
}

}  // namespace

struct HardwareBinding::Guard {
  GuardedFunctions state;
  pp_hardware_v1 table{};
};

HardwareBinding::HardwareBinding(std::unique_ptr<PluginInstance> instance) : instance_(std::move(instance)) {
  const pp_hardware_v1& functions = *instance_->metadata().hardware;
  pp_hardware_profile described{};
  described.struct_size = sizeof(described);
  instance_->invoke([&](pp_error* error) { return functions.describe(instance_->handle(), &described, error); });
  const std::string context = instance_->context();
  // An older (shorter) profile is accepted down to its own minor's size; fields it lacks stay zero.
  const size_t least = abi_sizes(instance_->plugin().abi_minor()).hardware_profile;
  if (described.struct_size < least)
    throw InputError(context + ": the profile it describes is " + std::to_string(described.struct_size) +
                     " bytes, but ABI 1." + std::to_string(instance_->plugin().abi_minor()) + "'s is " + std::to_string(least));
  std::memcpy(&profile_, &described, std::min<size_t>(described.struct_size, sizeof(profile_)));
  profile_.struct_size = sizeof(profile_);
  if (std::string problem = profile_problem(profile_); !problem.empty())
    throw InputError(context + ": the hardware profile is impossible: " + problem);
  guard_ = std::make_unique<Guard>();
  guard_->state = {&functions, instance_->handle(), profile_.name, &profile_};
  guard_->table = pp_hardware_v1{};
  guard_->table.struct_size = sizeof(pp_hardware_v1);
  guard_->table.describe = &guarded_describe;  // create and destroy are the host's business: NULL
  guard_->table.gemm_time = functions.gemm_time ? &guarded_gemm_time : nullptr;
  guard_->table.collective_time = functions.collective_time ? &guarded_collective_time : nullptr;
}

HardwareBinding::~HardwareBinding() = default;

pp_hardware_binding_v1 HardwareBinding::binding() const {
  // describe/create/destroy in the table are the plugin's; only the cost functions are wrapped,
  // so the instance handed out is the guard's.
  return pp_hardware_binding_v1{sizeof(pp_hardware_binding_v1), &profile_, &guard_->table, &guard_->state};
}

namespace {

// What a profile file's `base = "NAME"` names, in the toml plugin's format ("" without a base):
// the named plugin's profile, checked. A base is a hardware plugin (bundled or installed), not
// another file, and one whose GEMM or collective times are its own functions cannot be a base (a
// TOML profile carries figures, not functions).
std::string base_document(const std::string& file, const std::string& text, const PluginCatalog& catalog) {
  toml::table document;
  try {
    document = toml::parse(text, file);
  } catch (const toml::parse_error&) {
    return "";  // the plugin reports it, with its position
  }
  auto found = document.find("base");
  if (found == document.end() || !found->second.is_string()) return "";  // a wrong type: the plugin's message
  const std::string name = found->second.as_string()->get();
  const std::string where = location_of(file, found->first) + ": base '" + name + "'";
  if (name == kTomlHardwarePlugin || name.find('/') != std::string::npos || name.ends_with(".toml"))
    throw InputError(where + ": a base names a hardware plugin ('paraplan plugins list'), not a profile file");
  const LoadedPlugin* plugin = nullptr;
  try {
    plugin = &catalog.require(name, PP_KIND_HARDWARE);
  } catch (const InputError& failure) {
    throw InputError(where + ": " + failure.what());
  }
  const HardwareBinding base(std::make_unique<PluginInstance>(
      *plugin, ParamValues::bind(*plugin->metadata, nullptr, "base", file), where));
  const pp_hardware_v1& functions = *plugin->metadata->hardware;
  if (functions.gemm_time || functions.collective_time)
    throw InputError(where + ": it prices " + (functions.gemm_time ? "GEMMs" : "collectives") +
                     " with functions of its own, which a TOML profile cannot carry; write the whole profile");
  return profile_toml(base.profile());
}

}  // namespace

std::unique_ptr<HardwareBinding> open_hardware(const std::string& hardware, const std::string& file,
                                               const std::string& context, const PluginCatalog& catalog) {
  const bool from_file = !file.empty();
  std::string name = from_file ? kTomlHardwarePlugin : hardware;
  // Hardware is named as datasheets spell it ("H100-SXM"): a name that differs from exactly one
  // plugin's only in case is that plugin.
  if (!from_file) {
    std::vector<std::string> same;
    for (const std::string& candidate : catalog.names_of_kind(PP_KIND_HARDWARE))
      if (lowercase(candidate) == lowercase(name)) same.push_back(candidate);
    if (same.size() == 1) name = same.front();
  }
  const LoadedPlugin* plugin = nullptr;
  try {
    plugin = &catalog.require(name, PP_KIND_HARDWARE);
  } catch (const InputError& failure) {
    throw InputError(context + ": " + failure.what());
  }
  toml::table arguments;
  if (from_file) {
    // Named by the user, so used; but say so when anyone could have changed its figures.
    if (std::string untrusted = untrusted_file_reason(file); !untrusted.empty())
      spdlog::warn("hardware profile {}: {}; its figures may not be what you expect", file, untrusted);
    // Bounded and shallow before the plugin parses it, like every TOML input (input_file.h).
    const std::string text = read_bounded_file(file, kMaxTomlBytes, "hardware profile");
    check_toml_depth(text, file);
    arguments.insert("file", file);
    if (std::string base = base_document(file, text, catalog); !base.empty()) arguments.insert("base_document", base);
  }
  ParamValues params = ParamValues::bind(*plugin->metadata, &arguments, "cluster.hardware", file);
  return std::make_unique<HardwareBinding>(std::make_unique<PluginInstance>(*plugin, std::move(params), context));
}

std::unique_ptr<HardwareBinding> open_hardware(const Recipe& recipe, const PluginCatalog& catalog) {
  const toml::node* where = recipe.document->at_path("cluster.hardware").node();
  const std::string context = location_of(recipe.file, where) + ": cluster.hardware '" + recipe.cluster.hardware + "'";
  std::unique_ptr<HardwareBinding> binding = open_hardware(recipe.cluster.hardware, recipe.cluster.hardware_file, context, catalog);
  require_precision_support(recipe, binding->profile());
  return binding;
}

void require_precision_support(const Recipe& recipe, const pp_hardware_profile& profile) {
  const pp_dtype dtype = gemm_dtype(recipe.training);
  if (dtype != PP_DTYPE_MXFP8 && dtype != PP_DTYPE_NVFP4) return;  // fp8 falls back to bf16 where absent
  if (cost::declared_peak_flops(profile, dtype) > 0) return;
  const toml::node* where = recipe.document ? recipe.document->at_path("training.precision").node() : nullptr;
  const std::string name(precision_name(recipe.training.precision));
  throw InputError(location_of(recipe.file, where) + ": training.precision '" + name + "': hardware '" + profile.name +
                   "' has no " + name + " tensor cores (its profile's peak_flops_" + name +
                   " is 0; block-scaled formats need Blackwell or later); use \"fp8\" or \"bf16\"");
}

int64_t gpus_per_node(const Recipe& recipe, const HardwareBinding& hardware) {
  int64_t per_node = recipe.cluster.gpus_per_node.value_or(hardware.profile().gpus_per_node);
  if (per_node < 1) throw InputError(recipe.file + ": cluster.gpus_per_node: the hardware profile gives none; set it");
  return per_node;
}

}  // namespace paraplan::host
