// paraplan/host/plan/hardware_binding.h: the recipe's hardware, opened and described.
//
// [cluster] hardware = "h100-sxm" names a hardware plugin; a path ("profiles/my-gpu.toml")
// selects the `toml` hardware plugin with file = that path, so users add machines without
// compiling anything.
#pragma once

#include <memory>

#include "host/plugin/plugin_catalog.h"
#include "host/plugin/plugin_instance.h"
#include "host/recipe/recipe.h"
#include "paraplan/hardware.h"

namespace paraplan::host {

class HardwareBinding {
 public:
  // Describes the profile and checks it (profile_check.h); an impossible one is an InputError.
  explicit HardwareBinding(std::unique_ptr<PluginInstance> instance);
  ~HardwareBinding();

  const pp_hardware_profile& profile() const { return profile_; }
  // What executors receive: the checked profile, and the plugin's cost functions behind a guard
  // that refuses a time that is not finite or is negative.
  pp_hardware_binding_v1 binding() const;
  const PluginInstance& instance() const { return *instance_; }

 private:
  struct Guard;
  std::unique_ptr<PluginInstance> instance_;
  pp_hardware_profile profile_{};
  std::unique_ptr<Guard> guard_;
};

// The plugin name for hardware given as a profile file.
inline constexpr const char* kTomlHardwarePlugin = "toml";

// Opens the recipe's hardware and checks it has the tensor cores the recipe's precision needs.
std::unique_ptr<HardwareBinding> open_hardware(const Recipe& recipe, const PluginCatalog& catalog);

// Opens hardware plugin `hardware`, or the profile `file` (not empty: the `toml` plugin reads it,
// and a `base = "NAME"` in it is resolved here); errors start with `context`.
std::unique_ptr<HardwareBinding> open_hardware(const std::string& hardware, const std::string& file,
                                               const std::string& context, const PluginCatalog& catalog);

// InputError, at the recipe's training.precision, where it asks for a block-scaled format
// (mxfp8, nvfp4) the profile has no peak for.
void require_precision_support(const Recipe& recipe, const pp_hardware_profile& profile);

// GPUs per node: the recipe's [cluster] gpus_per_node, else the profile's; InputError if neither.
int64_t gpus_per_node(const Recipe& recipe, const HardwareBinding& hardware);

}  // namespace paraplan::host
