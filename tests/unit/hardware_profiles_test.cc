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

// The block-scaled formats, dense TFLOP/s per GPU, from the sheets' per-board or per-rack
// figures: Blackwell runs MXFP8 at its FP8 rate (HGX B200 72 PFLOP/s sparse per 8 GPUs, GB200
// NVL72 720 per 72) and NVFP4 at FP4's (HGX B200 144 sparse; GB200 NVL72 1,440 sparse; HGX B300
// 108 dense per 8; GB300 NVL72 1,080 dense per 72). Hopper, Ampere and CDNA3 have neither.
struct BlockScaledPeaks {
  const char* name;
  double mxfp8_tflops, nvfp4_tflops;
};
const BlockScaledPeaks kBlockScaled[] = {
    {"b200", 72e3 / 8 / 2, 144e3 / 8 / 2},          {"gb200-nvl72", 720e3 / 72 / 2, 1440e3 / 72 / 2},
    {"b300", 72e3 / 8 / 2, 108e3 / 8},              {"gb300-nvl72", 720e3 / 72 / 2, 1080e3 / 72},
    {"h100-sxm", 0, 0}, {"h800-sxm", 0, 0}, {"h200-sxm", 0, 0}, {"a100-sxm-80g", 0, 0}, {"mi300x", 0, 0},
};

TEST(HardwareProfiles, BlockScaledPeaksMatchTheirDatasheets) {
  for (const BlockScaledPeaks& sheet : kBlockScaled) {
    SCOPED_TRACE(sheet.name);
    const pp_hardware_profile profile = describe(sheet.name);
    EXPECT_NEAR(profile.peak_flops_mxfp8, sheet.mxfp8_tflops * 1e12, 1e9);
    EXPECT_NEAR(profile.peak_flops_nvfp4, sheet.nvfp4_tflops * 1e12, 1e9);
    if (sheet.nvfp4_tflops == 0) {
      EXPECT_THROW(cost::peak_flops(profile, PP_DTYPE_NVFP4), ConstraintError);
      EXPECT_THROW(cost::peak_flops(profile, PP_DTYPE_MXFP8), ConstraintError);
    }
  }
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
