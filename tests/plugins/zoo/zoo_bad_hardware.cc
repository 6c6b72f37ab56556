// zoo_bad_hardware: a compiled profile that skips the datasheet checks: 10^300 bytes of memory.
#include "paraplan/sdk.hpp"

namespace {

class ZooBadHardware : public paraplan::Hardware {
 public:
  static paraplan::PluginInfo info() { return {"zoo_bad_hardware", "1.0.0", "an impossible profile", {}}; }
  explicit ZooBadHardware(const paraplan::Params&) {}
  pp_hardware_profile describe() override {
    pp_hardware_profile profile{};
    profile.struct_size = sizeof(profile);
    paraplan::copy_name(profile.name, "zoo_bad_hardware");
    profile.peak_flops[PP_DTYPE_BF16] = 1e15;
    profile.memory_bytes = 1e300;
    profile.memory_bandwidth_bytes_per_s = 1e12;
    profile.memory_efficiency = 0.8;
    profile.gpus_per_node = 8;
    profile.gemm_efficiency_max = 0.7;
    profile.attention_efficiency = 0.5;
    profile.tier_count = 1;
    profile.tiers[0].struct_size = sizeof(pp_tier);
    paraplan::copy_name(profile.tiers[0].name, "net");
    profile.tiers[0].bandwidth_bytes_per_s = 5e-310;  // denormal
    profile.tiers[0].efficiency = 0.8;
    return profile;
  }
};

}  // namespace

PARAPLAN_PLUGIN(ZooBadHardware)
