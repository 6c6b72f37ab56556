// Every bundled hardware profile against its datasheet (dense bf16 peak, HBM capacity and
// bandwidth, GPUs per NVLink/xGMI domain), the numbers written here from the vendors' sheets.
#include "host/plugin/plugin_instance.h"
#include "host/recipe/param_values.h"
#include "paraplan/cost_model.hpp"
#include "test_support.h"

namespace paraplan::host {
namespace {

struct Datasheet {
  const char* name;
  double bf16_tflops, memory_gb, memory_tb_s;
  int64_t nvlink_domain;
};

// NVIDIA A100/H100/H200/B200/GB200 NVL72 and AMD MI300X datasheets, dense (not sparse) rates.
const Datasheet kDatasheets[] = {
    {"a100-sxm-80g", 312, 80, 2.039, 8}, {"h100-sxm", 989.4, 80, 3.35, 8}, {"h200-sxm", 989.4, 141, 4.8, 8},
    {"b200", 2250, 180, 8.0, 8},         {"gb200-nvl72", 2500, 186, 8.0, 72}, {"mi300x", 1307.4, 192, 5.3, 8},
};

pp_hardware_profile describe(const std::string& name) {
  const LoadedPlugin& plugin = test::bundled_catalog().require(name, PP_KIND_HARDWARE);
  PluginInstance instance(plugin, ParamValues::bind(*plugin.metadata, nullptr, "hardware", "test"), name);
  pp_hardware_profile profile{};
  profile.struct_size = sizeof(profile);
  instance.invoke([&](pp_error* error) { return plugin.metadata->hardware->describe(instance.handle(), &profile, error); });
  return profile;
}

TEST(HardwareProfiles, MatchTheirDatasheets) {
  for (const Datasheet& sheet : kDatasheets) {
    SCOPED_TRACE(sheet.name);
    pp_hardware_profile profile = describe(sheet.name);
    EXPECT_NEAR(profile.peak_flops[PP_DTYPE_BF16], sheet.bf16_tflops * 1e12, 1e9);
    EXPECT_NEAR(profile.memory_bytes, sheet.memory_gb * 1e9, 1e6);
    EXPECT_NEAR(profile.memory_bandwidth_bytes_per_s, sheet.memory_tb_s * 1e12, 1e9);
    ASSERT_GE(profile.tier_count, 2u);
    EXPECT_EQ(profile.tiers[0].domain_size, sheet.nvlink_domain);
    EXPECT_EQ(profile.tiers[profile.tier_count - 1].domain_size, 0);  // the network is unbounded
    // Efficiencies are fractions: a large GEMM runs below peak, never above it.
    double gemm_s = cost::default_gemm_time(profile, 8192, 8192, 8192, PP_DTYPE_BF16);
    double peak_s = 2.0 * 8192 * 8192 * 8192 / profile.peak_flops[PP_DTYPE_BF16];
    EXPECT_GT(gemm_s, peak_s);
    EXPECT_LT(gemm_s, 3 * peak_s);
  }
}

}  // namespace
}  // namespace paraplan::host
