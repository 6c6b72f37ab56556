// test_good_hardware: a fake GPU with round numbers: bf16 only, 100 TFLOP/s, 80 GB, perfect
// efficiencies and a single unbounded interconnect tier, so any expected time is simple arithmetic.
#include "paraplan/sdk.hpp"

namespace {

class TestGoodHardware : public paraplan::Hardware {
 public:
  static paraplan::PluginInfo info() {
    return {"test_good_hardware", "1.0.0", "Test hardware: bf16 100 TFLOP/s, 80 GB, one tier", {}};
  }
  explicit TestGoodHardware(const paraplan::Params&) {}

  pp_hardware_profile describe() override {
    pp_hardware_profile profile{};
    profile.struct_size = sizeof(profile);
    paraplan::copy_name(profile.name, "test_gpu");
    profile.peak_flops[PP_DTYPE_BF16] = 100e12;  // every other dtype: 0 = unsupported
    profile.memory_bytes = 80e9;
    profile.memory_bandwidth_bytes_per_s = 1e12;
    profile.memory_efficiency = 1.0;
    profile.gpus_per_node = 8;
    profile.gemm_efficiency_max = 1.0;
    profile.gemm_half_efficiency_flops = 0.0;  // no small-GEMM penalty
    profile.attention_efficiency = 1.0;
    profile.tier_count = 1;
    pp_tier& tier = profile.tiers[0];
    tier.struct_size = sizeof(tier);
    paraplan::copy_name(tier.name, "fabric");
    tier.domain_size = 0;  // unbounded: every group stays on this tier
    tier.bandwidth_bytes_per_s = 100e9;
    tier.latency_s = 1e-6;
    tier.efficiency = 1.0;
    return profile;
  }
};

}  // namespace

PARAPLAN_PLUGIN(TestGoodHardware)
