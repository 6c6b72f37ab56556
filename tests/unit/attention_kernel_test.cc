// The fused attention kernel's rate: the profile's tuned kernel or FlashAttention-2
// (training.attention_kernel), and a narrower head's lower rate, against the figures the
// profiles and docs/cost-model.md cite and a hand count of the attention FLOPs.
#include <cmath>

#include "paraplan/cost_model.hpp"
#include "test_support.h"

namespace paraplan::host {
namespace {

pp_hardware_profile hopper_like(double tuned, double flash2) {
  pp_hardware_profile profile{};
  profile.struct_size = sizeof(profile);
  profile.attention_efficiency = tuned;
  profile.attention_efficiency_flash2 = flash2;
  return profile;
}

TEST(AttentionEfficiency, EachKernelRunsAtItsOwnFigure) {
  const pp_hardware_profile profile = hopper_like(0.81, 0.45);
  EXPECT_DOUBLE_EQ(cost::attention_efficiency(profile, PP_ATTENTION_KERNEL_TUNED, 128), 0.81);
  EXPECT_DOUBLE_EQ(cost::attention_efficiency(profile, PP_ATTENTION_KERNEL_FLASH2, 128), 0.45);
}

// FlashAttention in Triton: the FlashAttention-2 paper (sec. 4.1) has FlashAttention-2 1.3-2.5x
// faster than it; the geometric middle, sqrt(1.3 x 2.5) = 1.80, below FlashAttention-2's figure,
// with FlashAttention-2's width factor (0.87 at 64) and, on a profile without a FlashAttention-2
// figure, below the tuned one.
TEST(AttentionEfficiency, TritonFlashAttentionRunsBelowFlashAttention2ByThePapersFactor) {
  const double slowdown = std::sqrt(1.3 * 2.5);
  EXPECT_NEAR(cost::attention_efficiency(hopper_like(0.81, 0.45), PP_ATTENTION_KERNEL_TRITON, 128), 0.45 / slowdown, 2e-3);
  EXPECT_NEAR(cost::attention_efficiency(hopper_like(0.81, 0.45), PP_ATTENTION_KERNEL_TRITON, 64), 0.45 * 0.87 / slowdown,
              2e-3);
  EXPECT_NEAR(cost::attention_efficiency(hopper_like(0.94, 0), PP_ATTENTION_KERNEL_TRITON, 128), 0.94 / slowdown, 2e-3);
}

// No FlashAttention-2 figure (an Ampere profile, where it is the tuned kernel), or a profile from
// a plugin older than the field: FlashAttention-2 runs at the tuned rate.
// ... and its tuned kernel is FlashAttention-2, so a 64-wide head pays FlashAttention-2's width
// factor (0.87) whichever kernel the recipe names: the two names price the same.
TEST(AttentionEfficiency, WithoutAFlashAttention2FigureTheTunedOneHolds) {
  EXPECT_DOUBLE_EQ(cost::attention_efficiency(hopper_like(0.94, 0), PP_ATTENTION_KERNEL_FLASH2, 128), 0.94);
  pp_hardware_profile older = hopper_like(0.81, 0.45);
  older.struct_size = offsetof(pp_hardware_profile, attention_efficiency_flash2);
  EXPECT_DOUBLE_EQ(cost::attention_efficiency(older, PP_ATTENTION_KERNEL_FLASH2, 128), 0.81);
  for (pp_attention_kernel kernel : {PP_ATTENTION_KERNEL_TUNED, PP_ATTENTION_KERNEL_FLASH2})
    EXPECT_NEAR(cost::attention_efficiency(hopper_like(0.94, 0), kernel, 64), 0.94 * 0.87, 1e-12);
}

// FlashAttention-3 paper, Fig. 5 (H100): a 64-wide head at 0.6-0.75 of the 128-wide rate, 0.68
// taken; FlashAttention-2 paper, Fig. 4 (A100): 0.87. Halving the width again multiplies again by
// the same factor (a power law); wider heads keep the 128-wide rate.
TEST(AttentionEfficiency, NarrowHeadsRunSlower) {
  const pp_hardware_profile profile = hopper_like(0.8, 0.4);
  EXPECT_NEAR(cost::attention_efficiency(profile, PP_ATTENTION_KERNEL_TUNED, 64), 0.8 * 0.68, 1e-12);
  EXPECT_NEAR(cost::attention_efficiency(profile, PP_ATTENTION_KERNEL_TUNED, 32), 0.8 * 0.68 * 0.68, 1e-12);
  EXPECT_NEAR(cost::attention_efficiency(profile, PP_ATTENTION_KERNEL_FLASH2, 64), 0.4 * 0.87, 1e-12);
  EXPECT_DOUBLE_EQ(cost::attention_efficiency(profile, PP_ATTENTION_KERNEL_TUNED, 192), 0.8);
  const double between = cost::attention_efficiency(profile, PP_ATTENTION_KERNEL_TUNED, 96);
  EXPECT_GT(between, 0.8 * 0.68);
  EXPECT_LT(between, 0.8);
}

// One H100 running a 4-layer model, no recompute: the attention core is 4·b·a·s²·d FLOPs forward
// per layer (QK^T and PV over the full square) and twice that backward. FlashAttention-2 instead
// of the tuned kernel adds exactly those FLOPs at 0.45 instead of 0.81 of the bf16 peak.
TEST(AttentionKernel, FlashAttention2AddsOnlyTheAttentionCoresSlowerRate) {
  const std::string base =
      "[model]\nlayers = 4\nhidden = 4096\nheads = 32\nvocab = 32000\nseq_len = 8192\n"
      "[training]\nglobal_batch = 2\nmicro_batch = 1\n";
  const std::string cluster = "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 1\n";
  const test::Evaluated tuned = test::evaluate_recipe(base + cluster);
  const test::Evaluated flash2 = test::evaluate_recipe(base + "attention_kernel = \"flash2\"\n" + cluster);
  const double b = 1, a = 32, s = 8192, d = 128, layers = 4, micro_batches = 2, peak = 989.4e12;
  const double flops = micro_batches * layers * 3 * 4 * b * a * s * s * d;
  EXPECT_NEAR((flash2.number("time.compute_s") - tuned.number("time.compute_s")) / (flops / peak * (1 / 0.45 - 1 / 0.81)),
              1.0, 1e-9);
  EXPECT_LT(flash2.number("throughput.mfu"), tuned.number("throughput.mfu"));
}

TEST(AttentionKernel, UnfusedAttentionRunsNoKernel) {
  const std::string recipe =
      "[model]\nlayers = 4\nhidden = 4096\nheads = 32\nvocab = 32000\nseq_len = 2048\n"
      "[training]\nglobal_batch = 2\nflash_attention = false\nattention_kernel = \"flash2\"\n"
      "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 1\n";
  test::expect_error<InputError>([&] { test::evaluate_recipe(recipe); },
                                 {"recipe.toml", "attention_kernel", "flash_attention = false"});
}

}  // namespace
}  // namespace paraplan::host
