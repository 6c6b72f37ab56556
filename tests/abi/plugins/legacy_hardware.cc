// abi_1_<m>_gpu: a hardware profile built against minor m's frozen headers, round numbers, with
// its own GEMM time (flops / half the bf16 peak) so a test can tell it was called.
#include "legacy_names.h"
#include "paraplan/sdk.hpp"

namespace {

class LegacyGpu : public paraplan::Hardware {
 public:
  static paraplan::PluginInfo info() {
    return {PARAPLAN_LEGACY_NAME("gpu"), "1.0.0", "a hardware profile built against a frozen ABI minor", {}};
  }
  explicit LegacyGpu(const paraplan::Params&) {}

  pp_hardware_profile describe() override {
    pp_hardware_profile profile{};
    profile.struct_size = sizeof(profile);
    paraplan::copy_name(profile.name, PARAPLAN_LEGACY_NAME("gpu"));
    profile.peak_flops[PP_DTYPE_BF16] = 200e12;
    profile.peak_flops[PP_DTYPE_FP32] = 50e12;
    profile.memory_bytes = 64e9;
    profile.memory_bandwidth_bytes_per_s = 2e12;
    profile.memory_efficiency = 0.8;
    profile.gpus_per_node = 8;
    profile.gemm_efficiency_max = 0.7;
    profile.gemm_half_efficiency_flops = 1e9;
    profile.attention_efficiency = 0.5;
    profile.tier_count = 2;
    const char* names[2] = {"nvlink", "network"};
    const double bandwidths[2] = {200e9, 25e9};
    for (int i = 0; i < 2; ++i) {
      pp_tier& tier = profile.tiers[i];
      tier.struct_size = sizeof(tier);
      paraplan::copy_name(tier.name, names[i]);
      tier.domain_size = i == 0 ? 8 : 0;
      tier.bandwidth_bytes_per_s = bandwidths[i];
      tier.latency_s = 5e-6;
      tier.efficiency = 0.8;
    }
    profile.host_link_bandwidth_bytes_per_s = 32e9;
    return profile;
  }

  double gemm_time(double m, double n, double k, pp_dtype) { return 2.0 * m * n * k / 100e12; }
};

}  // namespace

PARAPLAN_PLUGIN(LegacyGpu)
