#include "host/plan/profile_check.h"

#include <cmath>
#include <cstring>
#include <sstream>
#include <vector>

namespace paraplan::host {
namespace {

struct Bound {
  const char* field;
  double value, low, high;
  bool zero_allowed;
};

std::string out_of_bounds(const Bound& bound) {
  std::ostringstream text;
  text << bound.field << " is " << bound.value << ", not " << (bound.zero_allowed ? "0 or " : "") << "in [" << bound.low
       << ", " << bound.high << "]";
  return text.str();
}

bool within(const Bound& bound) {
  if (!std::isfinite(bound.value)) return false;
  return (bound.zero_allowed && bound.value == 0.0) || (bound.value >= bound.low && bound.value <= bound.high);
}

}  // namespace

std::string profile_problem(const pp_hardware_profile& profile) {
  if (!std::memchr(profile.name, '\0', sizeof(profile.name)) || profile.name[0] == '\0')
    return "the profile's name is empty or not NUL-terminated";
  if (profile.tier_count < 1 || profile.tier_count > PP_MAX_TIERS) return "tier_count must be 1 to 4";
  if (profile.gpus_per_node < 0 || profile.gpus_per_node > 100000) return "gpus_per_node must be 0 (none) to 100000";
  const char* dtype_names[PP_DTYPE_COUNT] = {"peak_flops[fp32]", "peak_flops[tf32]", "peak_flops[bf16]",
                                              "peak_flops[fp16]", "peak_flops[fp8]"};
  std::vector<Bound> bounds;
  for (int dtype = 0; dtype < PP_DTYPE_COUNT; ++dtype)
    bounds.push_back({dtype_names[dtype], profile.peak_flops[dtype], 1e6, 1e21, dtype != PP_DTYPE_BF16});
  bounds.insert(bounds.end(), {
                                  {"memory_bytes", profile.memory_bytes, 1e6, 1e18, false},
                                  {"memory_bandwidth_bytes_per_s", profile.memory_bandwidth_bytes_per_s, 1e3, 1e21, false},
                                  {"memory_efficiency", profile.memory_efficiency, 1e-6, 1.0, false},
                                  {"gemm_efficiency_max", profile.gemm_efficiency_max, 1e-6, 1.0, false},
                                  {"gemm_half_efficiency_flops", profile.gemm_half_efficiency_flops, 0.0, 1e18, true},
                                  {"attention_efficiency", profile.attention_efficiency, 1e-6, 1.0, true},
                                  {"host_link_bandwidth_bytes_per_s", profile.host_link_bandwidth_bytes_per_s, 1e3, 1e21, true},
                                  {"gemm_efficiency_max_fp8", profile.gemm_efficiency_max_fp8, 1e-6, 1.0, true},
                                  {"peak_flops_mxfp8", profile.peak_flops_mxfp8, 1e6, 1e21, true},
                                  {"peak_flops_nvfp4", profile.peak_flops_nvfp4, 1e6, 1e21, true},
                                  {"attention_efficiency_flash2", profile.attention_efficiency_flash2, 1e-6, 1.0, true},
                                  {"overlap_compute_slowdown", profile.overlap_compute_slowdown, 0.0, 1.0, true},
                                  {"speed_variation", profile.speed_variation, 0.0, 0.5, true},
                                  {"gemm_efficiency_max_fp4", profile.gemm_efficiency_max_fp4, 1e-6, 1.0, true},
                              });
  for (const Bound& bound : bounds)
    if (!within(bound)) return out_of_bounds(bound);
  for (uint32_t i = 0; i < profile.tier_count; ++i) {
    const pp_tier& tier = profile.tiers[i];
    const std::string at = "tiers[" + std::to_string(i) + "].";
    if (!std::memchr(tier.name, '\0', sizeof(tier.name))) return at + "name is not NUL-terminated";
    if (tier.domain_size < 0 || tier.domain_size > (int64_t{1} << 24)) return at + "domain_size must be 0 to 16777216";
    if (i + 1 < profile.tier_count && tier.domain_size < 2) return at + "domain_size: only the outermost tier may be unbounded";
    const std::string bandwidth = at + "bandwidth_bytes_per_s", latency = at + "latency_s", efficiency = at + "efficiency";
    for (const Bound& bound : {Bound{bandwidth.c_str(), tier.bandwidth_bytes_per_s, 1e3, 1e21, false},
                               Bound{latency.c_str(), tier.latency_s, 0.0, 1.0, true},
                               Bound{efficiency.c_str(), tier.efficiency, 1e-6, 1.0, false}})
      if (!within(bound)) return out_of_bounds(bound);
  }
  return "";
}

}  // namespace paraplan::host
