#include "host/plan/hardware_binding.h"

#include <algorithm>
#include <cstring>

#include "host/core/errors.h"
#include "host/recipe/source_location.h"

namespace paraplan::host {

HardwareBinding::HardwareBinding(std::unique_ptr<PluginInstance> instance) : instance_(std::move(instance)) {
  const pp_hardware_v1& functions = *instance_->metadata().hardware;
  pp_hardware_profile described{};
  described.struct_size = sizeof(described);
  instance_->invoke([&](pp_error* error) { return functions.describe(instance_->handle(), &described, error); });
  // Accept an older (shorter) profile; unknown trailing fields stay zero.
  std::memcpy(&profile_, &described, std::min<size_t>(std::max<uint32_t>(described.struct_size, 4), sizeof(profile_)));
  profile_.struct_size = sizeof(profile_);
  profile_.name[PP_NAME_CAPACITY - 1] = '\0';
  std::string context = instance_->context();
  if (profile_.memory_bytes <= 0) throw InputError(context + ": profile has no memory capacity");
  if (profile_.tier_count > PP_MAX_TIERS) throw InputError(context + ": profile declares more than 4 tiers");
  for (uint32_t i = 0; i < profile_.tier_count; ++i) {
    profile_.tiers[i].name[PP_TIER_NAME_CAPACITY - 1] = '\0';
    if (profile_.tiers[i].bandwidth_bytes_per_s <= 0)
      throw InputError(context + ": tier " + std::to_string(i) + " has no bandwidth");
  }
}

pp_hardware_binding_v1 HardwareBinding::binding() const {
  return pp_hardware_binding_v1{sizeof(pp_hardware_binding_v1), &profile_, instance_->metadata().hardware,
                                instance_->handle()};
}

std::unique_ptr<HardwareBinding> open_hardware(const Recipe& recipe, const PluginCatalog& catalog) {
  const toml::node* where = recipe.document->at_path("cluster.hardware").node();
  std::string context = location_of(recipe.file, where) + ": cluster.hardware '" + recipe.cluster.hardware + "'";
  bool from_file = !recipe.cluster.hardware_file.empty();
  const std::string name = from_file ? kTomlHardwarePlugin : recipe.cluster.hardware;
  const LoadedPlugin* plugin = nullptr;
  try {
    plugin = &catalog.require(name, PP_KIND_HARDWARE);
  } catch (const InputError& failure) {
    throw InputError(context + ": " + failure.what());
  }
  toml::table arguments;
  if (from_file) arguments.insert("file", recipe.cluster.hardware_file);
  ParamValues params = ParamValues::bind(*plugin->metadata, &arguments, "cluster.hardware", recipe.file);
  return std::make_unique<HardwareBinding>(std::make_unique<PluginInstance>(*plugin, std::move(params), context));
}

int64_t gpus_per_node(const Recipe& recipe, const HardwareBinding& hardware) {
  int64_t per_node = recipe.cluster.gpus_per_node.value_or(hardware.profile().gpus_per_node);
  if (per_node < 1) throw InputError(recipe.file + ": cluster.gpus_per_node: the hardware profile gives none; set it");
  return per_node;
}

}  // namespace paraplan::host
