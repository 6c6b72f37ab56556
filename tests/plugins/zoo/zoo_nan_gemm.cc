// zoo_nan_gemm: a valid profile whose own GEMM time is NaN; the host's guard refuses the time.
#include <limits>

#include "paraplan/sdk.hpp"

namespace {

class ZooNanGemm : public paraplan::Hardware {
 public:
  static paraplan::PluginInfo info() { return {"zoo_nan_gemm", "1.0.0", "a GEMM time that is NaN", {}}; }
  explicit ZooNanGemm(const paraplan::Params&) {}
  pp_hardware_profile describe() override {
    pp_hardware_profile profile{};
    profile.struct_size = sizeof(profile);
    paraplan::copy_name(profile.name, "zoo_nan_gemm");
    profile.peak_flops[PP_DTYPE_BF16] = 1e15;
    profile.peak_flops[PP_DTYPE_FP32] = 6e13;
    profile.memory_bytes = 80e9;
    profile.memory_bandwidth_bytes_per_s = 3e12;
    profile.memory_efficiency = 0.8;
    profile.gpus_per_node = 8;
    profile.gemm_efficiency_max = 0.7;
    profile.attention_efficiency = 0.5;
    profile.tier_count = 1;
    profile.tiers[0].struct_size = sizeof(pp_tier);
    paraplan::copy_name(profile.tiers[0].name, "net");
    profile.tiers[0].bandwidth_bytes_per_s = 5e10;
    profile.tiers[0].efficiency = 0.8;
    return profile;
  }
  double gemm_time(double, double, double, pp_dtype) { return std::numeric_limits<double>::quiet_NaN(); }
};

}  // namespace

PARAPLAN_PLUGIN(ZooNanGemm)
