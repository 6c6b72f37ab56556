// The SDK's default cost functions against hand calculations of the ring formulas
// (Thakur, Rabenseifner and Gropp 2005; NCCL's ring and tree as its tuner prices them) and the
// GEMM efficiency curve.
#include "paraplan/cost_model.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <numbers>

namespace paraplan::cost {
namespace {

pp_hardware_profile two_tier_profile() {
  pp_hardware_profile profile{};
  profile.struct_size = sizeof(profile);
  copy_name(profile.name, "test-gpu");
  profile.peak_flops[PP_DTYPE_BF16] = 1000e12;
  profile.memory_bytes = 80e9;
  profile.memory_bandwidth_bytes_per_s = 3e12;
  profile.memory_efficiency = 1.0;
  profile.gemm_efficiency_max = 0.8;
  profile.gemm_half_efficiency_flops = 1e11;
  profile.tier_count = 2;
  profile.tiers[0] = {sizeof(pp_tier), "nvlink", 8, 100e9, 1e-6, 1.0};
  profile.tiers[1] = {sizeof(pp_tier), "network", 0, 25e9, 5e-6, 1.0};
  return profile;
}

TEST(CollectiveTime, RingInsideOneDomain) {
  pp_hardware_profile profile = two_tier_profile();
  const double n = 1e9;
  // Every NCCL kernel starts with its base latency, 8.4 us (tuning.cc, Simple protocol).
  double all_gather = 7 * 1e-6 + 7.0 / 8.0 * n / 100e9;
  EXPECT_DOUBLE_EQ(default_collective_time(profile, PP_COLLECTIVE_ALL_GATHER, n, 8, 1), 8.4e-6 + all_gather);
  EXPECT_DOUBLE_EQ(default_collective_time(profile, PP_COLLECTIVE_REDUCE_SCATTER, n, 8, 1), 8.4e-6 + all_gather);
  EXPECT_DOUBLE_EQ(default_collective_time(profile, PP_COLLECTIVE_ALL_REDUCE, n, 8, 1), 8.4e-6 + 2 * all_gather);
  EXPECT_DOUBLE_EQ(default_collective_time(profile, PP_COLLECTIVE_ALL_REDUCE, n, 1, 1), 0.0);
}

TEST(CollectiveTime, RingAcrossTwoNodesRunsAtTheSlowerHop) {
  pp_hardware_profile profile = two_tier_profile();
  const double n = 1e9;
  // NCCL's ring through 16 GPUs on 2 nodes: 15 steps, 1 of them (the hop to the other node)
  // over the network. The 8 GPUs of a node drive 8 x 25 GB/s of network, more than NVLink's
  // 100 GB/s, so NVLink sets the bus bandwidth.
  const double all_gather = 14 * 1e-6 + 1 * 5e-6 + 15.0 / 16.0 * n / 100e9;
  EXPECT_DOUBLE_EQ(default_collective_time(profile, PP_COLLECTIVE_ALL_GATHER, n, 16, 1), 8.4e-6 + all_gather);
  EXPECT_DOUBLE_EQ(default_collective_time(profile, PP_COLLECTIVE_REDUCE_SCATTER, n, 16, 1), 8.4e-6 + all_gather);
  // All-reduce: the ring twice (30 steps, 2 across); the tree would pay 2n / (0.92 x 100 GB/s).
  EXPECT_DOUBLE_EQ(default_collective_time(profile, PP_COLLECTIVE_ALL_REDUCE, n, 16, 1), 8.4e-6 + 2 * all_gather);
  // Two GPUs a node (stride 4 in 8-GPU nodes): their two network links are the slower hop.
  EXPECT_DOUBLE_EQ(default_collective_time(profile, PP_COLLECTIVE_ALL_GATHER, n, 8, 4),
                   8.4e-6 + 4 * 1e-6 + 3 * 5e-6 + 7.0 / 8.0 * n / (2 * 25e9));
}

TEST(CollectiveTime, LargeAllReducesOfSmallBuffersRunAsATree) {
  pp_hardware_profile profile = two_tier_profile();
  // 1 MB over 4096 GPUs on 512 nodes: the ring's 8190 steps (1022 across) cost 14.3 ms; NCCL's
  // tree climbs 7 GPUs of a node and 9 levels of nodes, twice.
  const double n = 1e6;
  const double ring = 2 * (3584 * 1e-6 + 511 * 5e-6 + 4095.0 / 4096.0 * n / 100e9);
  const double tree = 2 * (7 * 1e-6 + 9 * 5e-6) + 2 * n / (0.92 * 100e9);
  ASSERT_LT(tree, ring);
  EXPECT_DOUBLE_EQ(default_collective_time(profile, PP_COLLECTIVE_ALL_REDUCE, n, 4096, 1), 8.4e-6 + tree);
  // A large buffer is bandwidth-bound, where the ring's full bus bandwidth wins.
  const double big = 1e10;
  EXPECT_DOUBLE_EQ(default_collective_time(profile, PP_COLLECTIVE_ALL_REDUCE, big, 16, 1),
                   8.4e-6 + 2 * (14 * 1e-6 + 1 * 5e-6 + 15.0 / 16.0 * big / 100e9));
  // All-gathers have no tree: their latency grows with every member.
  EXPECT_DOUBLE_EQ(default_collective_time(profile, PP_COLLECTIVE_ALL_GATHER, n, 4096, 1),
                   8.4e-6 + 3584 * 1e-6 + 511 * 5e-6 + 4095.0 / 4096.0 * n / 100e9);
}

TEST(CollectiveTime, StridedGroupCrossesTheNetworkOnly) {
  // Data parallelism over 8 nodes with tp = 8 innermost: one GPU per node, ring over the network.
  pp_hardware_profile profile = two_tier_profile();
  const double n = 1e9;
  EXPECT_DOUBLE_EQ(default_collective_time(profile, PP_COLLECTIVE_ALL_GATHER, n, 8, 8),
                   8.4e-6 + 7 * 5e-6 + 7.0 / 8.0 * n / 25e9);
}

TEST(CollectiveTime, AllToAllAcrossNodesIsBoundByTheNetworkShare) {
  pp_hardware_profile profile = two_tier_profile();
  const double n = 1.6e9;
  // 16 ranks, 8 per node: 7/16 of the buffer stays on NVLink, 8/16 crosses the network.
  double expected = 8.4e-6 + 7 * 1e-6 + 8 * 5e-6 + std::max(7.0 / 16 * n / 100e9, 8.0 / 16 * n / 25e9);
  EXPECT_DOUBLE_EQ(default_collective_time(profile, PP_COLLECTIVE_ALL_TO_ALL, n, 16, 1), expected);
}

// A routed exchange (DeepEP's dispatch): 16 experts, top-2, one expert per member of a group of
// 16 over 2 nodes of 8. A token reaches 2 members; across, it goes once to each node holding one
// of its experts, 2 x (1 - C(8,2)/C(16,2)) = 2 x 92/120 nodes, half of them the other node.
// Inside, each member moves 2 x 7/8 copies a token (its own node's, and those it forwards).
TEST(CollectiveTime, RoutedExchangeCrossesTheNetworkOncePerNode) {
  const pp_hardware_profile profile = two_tier_profile();
  pp_hardware_binding_v1 binding{};
  binding.struct_size = sizeof(binding);
  binding.profile = &profile;
  const double tokens = 4096, row = 8192;  // 4096 tokens of h = 4096 in bf16
  pp_op op = make_op(PP_OP_COLLECTIVE, PP_PHASE_FORWARD, PP_SCOPE_LAYER, "ep_dispatch", "ep");
  op.collective = PP_COLLECTIVE_ALL_TO_ALL;
  op.m = tokens, op.n = row, op.k = 2;
  op.bytes = tokens * row * 2;
  const routing::Routing routing{16, 2, 0, 0};
  const double inside = 7 * 1e-6 + tokens * row * 2 * 7.0 / 8 / 100e9;
  const double across = 1 * 5e-6 + tokens * row * (2 * 92.0 / 120) * 0.5 / 25e9;
  EXPECT_NEAR(routed_exchange_time(binding, op, routing, 16, 1), 8.4e-6 + std::max(inside, across), 1e-15);
  // The plain all-to-all sends both copies over the network half the time: 2 x 1/2 a token.
  EXPECT_GT(default_collective_time(profile, PP_COLLECTIVE_ALL_TO_ALL, op.bytes, 16, 1),
            1.3 * routed_exchange_time(binding, op, routing, 16, 1));
  // Inside one node there is no network part, and it is the all-to-all of the same copies.
  EXPECT_NEAR(routed_exchange_time(binding, op, routing, 8, 1),
              default_collective_time(profile, PP_COLLECTIVE_ALL_TO_ALL, op.bytes, 8, 1), 1e-15);
  // Two members a node apart (a stride of 8), 8 experts each: every member is its own node, so
  // the copies per member are the copies per node, and it is the plain all-to-all again.
  pp_op two = op;
  two.bytes = tokens * row * 2 * 92.0 / 120;
  EXPECT_NEAR(routed_exchange_time(binding, two, routing, 2, 8),
              default_collective_time(profile, PP_COLLECTIVE_ALL_TO_ALL, two.bytes, 2, 8), 1e-15);
}

TEST(GemmTime, FollowsTheEfficiencyCurve) {
  pp_hardware_profile profile = two_tier_profile();
  const double m = 8192, n = 8192, k = 8192, flops = 2 * m * n * k;
  double efficiency = 0.8 * flops / (flops + 1e11);
  EXPECT_DOUBLE_EQ(default_gemm_time(profile, m, n, k, PP_DTYPE_BF16), flops / (1000e12 * efficiency));
}

TEST(GemmTime, Fp8GemmsHaveTheirOwnPlateau) {
  // FP8 peak 2000 TFLOP/s at a 0.6 plateau; the fixed cost per GEMM is the bf16 curve's,
  // t0 = 1e11 / (1000e12 x 0.8) = 125 ns, so F_half at FP8 = t0 x 2000e12 x 0.6 = 1.5e11.
  pp_hardware_profile profile = two_tier_profile();
  profile.peak_flops[PP_DTYPE_FP8] = 2000e12;
  profile.gemm_efficiency_max_fp8 = 0.6;
  const double m = 8192, n = 8192, k = 8192, flops = 2 * m * n * k;
  EXPECT_DOUBLE_EQ(default_gemm_time(profile, m, n, k, PP_DTYPE_FP8), flops / (2000e12 * 0.6 * flops / (flops + 1.5e11)));
  // Without the field (0, or a profile from a 1.1 plugin that ends before it): the bf16 plateau.
  const double bf16_plateau = flops / (2000e12 * 0.8 * flops / (flops + 2e11));
  profile.gemm_efficiency_max_fp8 = 0;
  EXPECT_DOUBLE_EQ(default_gemm_time(profile, m, n, k, PP_DTYPE_FP8), bf16_plateau);
  profile.gemm_efficiency_max_fp8 = 0.6;
  profile.struct_size = offsetof(pp_hardware_profile, gemm_efficiency_max_fp8);
  EXPECT_DOUBLE_EQ(default_gemm_time(profile, m, n, k, PP_DTYPE_FP8), bf16_plateau);
  // BF16 GEMMs never use it.
  profile.struct_size = sizeof(profile);
  EXPECT_DOUBLE_EQ(default_gemm_time(profile, m, n, k, PP_DTYPE_BF16), flops / (1000e12 * 0.8 * flops / (flops + 1e11)));
}

TEST(GemmTime, BlockScaledFormatsRunAtTheirOwnPeaksOnTheFp8Plateau) {
  // MXFP8 at 2000 and NVFP4 at 4000 TFLOP/s, both on the FP8 plateau 0.6; F_half scales with
  // peak x plateau from the bf16 curve's t0 = 125 ns: 1.5e11 and 3e11.
  pp_hardware_profile profile = two_tier_profile();
  profile.gemm_efficiency_max_fp8 = 0.6;
  profile.peak_flops_mxfp8 = 2000e12;
  profile.peak_flops_nvfp4 = 4000e12;
  const double m = 8192, n = 8192, k = 8192, flops = 2 * m * n * k;
  EXPECT_DOUBLE_EQ(default_gemm_time(profile, m, n, k, PP_DTYPE_MXFP8), flops / (2000e12 * 0.6 * flops / (flops + 1.5e11)));
  EXPECT_DOUBLE_EQ(default_gemm_time(profile, m, n, k, PP_DTYPE_NVFP4), flops / (4000e12 * 0.6 * flops / (flops + 3e11)));
  // Operands carry their scales: a vector-matrix product is bound by (k + kn + n) x bytes.
  profile.gemm_half_efficiency_flops = 0;
  EXPECT_DOUBLE_EQ(default_gemm_time(profile, 1, 1e6, 1024, PP_DTYPE_NVFP4),
                   (1024 + 1024 * 1e6 + 1e6) * (0.5 + 1.0 / 16) / 3e12);
  // A profile that ends before the 1.6 fields (an older plugin's) has no such tensor cores.
  profile.struct_size = offsetof(pp_hardware_profile, peak_flops_mxfp8);
  EXPECT_THROW(peak_flops(profile, PP_DTYPE_MXFP8), ConstraintError);
  EXPECT_THROW(peak_flops(profile, PP_DTYPE_NVFP4), ConstraintError);
}


// Fused attention at 0.8 of a 1000 TFLOP/s bf16 peak, heads of 128 (no width factor): 800
// TFLOP/s. In FP8, 1.6 times that (FlashAttention-3's FP8 against its BF16, not the tensor
// cores' 2x) where the GPU has FP8 tensor cores; a GPU without them runs it at the bf16 rate.
TEST(AttentionRate, Fp8AttentionRunsFlashAttention3sRatioFasterWhereTheGpuHasFp8) {
  pp_hardware_profile profile = two_tier_profile();
  profile.attention_efficiency = 0.8;
  pp_op op = make_op(PP_OP_ATTENTION, PP_PHASE_FORWARD, PP_SCOPE_LAYER, "attention_core", "test");
  op.k = 128;
  op.dtype = PP_DTYPE_BF16;
  EXPECT_DOUBLE_EQ(attention_rate(profile, PP_ATTENTION_KERNEL_TUNED, op), 800e12);
  op.dtype = PP_DTYPE_FP8;
  EXPECT_DOUBLE_EQ(attention_rate(profile, PP_ATTENTION_KERNEL_TUNED, op), 800e12);  // no FP8 peak declared
  profile.peak_flops[PP_DTYPE_FP8] = 2000e12;
  EXPECT_DOUBLE_EQ(attention_rate(profile, PP_ATTENTION_KERNEL_TUNED, op), 1.6 * 800e12);
}

TEST(GemmTime, Nvfp4MayHaveAPlateauOfItsOwn) {
  // NVFP4 at 4000 TFLOP/s on a plateau of 0.4 of its own beside FP8's 0.6: F_half from the bf16
  // curve's t0 = 125 ns is t0 x 4000e12 x 0.4 = 2e11; MXFP8 stays on the FP8 plateau.
  pp_hardware_profile profile = two_tier_profile();
  profile.gemm_efficiency_max_fp8 = 0.6;
  profile.gemm_efficiency_max_fp4 = 0.4;
  profile.peak_flops_mxfp8 = 2000e12;
  profile.peak_flops_nvfp4 = 4000e12;
  const double m = 8192, n = 8192, k = 8192, flops = 2 * m * n * k;
  EXPECT_DOUBLE_EQ(default_gemm_time(profile, m, n, k, PP_DTYPE_NVFP4), flops / (4000e12 * 0.4 * flops / (flops + 2e11)));
  EXPECT_DOUBLE_EQ(default_gemm_time(profile, m, n, k, PP_DTYPE_MXFP8), flops / (2000e12 * 0.6 * flops / (flops + 1.5e11)));
  // Undeclared (0), or a profile that ends before ABI 1.8's field: the FP8 plateau, F_half 3e11.
  const double on_fp8_plateau = flops / (4000e12 * 0.6 * flops / (flops + 3e11));
  profile.gemm_efficiency_max_fp4 = 0;
  EXPECT_DOUBLE_EQ(default_gemm_time(profile, m, n, k, PP_DTYPE_NVFP4), on_fp8_plateau);
  profile.gemm_efficiency_max_fp4 = 0.4;
  profile.struct_size = offsetof(pp_hardware_profile, gemm_efficiency_max_fp4);
  EXPECT_DOUBLE_EQ(default_gemm_time(profile, m, n, k, PP_DTYPE_NVFP4), on_fp8_plateau);
}
TEST(GemmTime, TinyGemmIsBoundByMemory) {
  pp_hardware_profile profile = two_tier_profile();
  profile.gemm_half_efficiency_flops = 0;  // no launch penalty: only the roofline remains
  const double m = 1, n = 1e6, k = 1024;   // a vector-matrix product: 2 flops per weight
  double memory = (m * k + k * n + m * n) * 2.0 / 3e12;
  EXPECT_DOUBLE_EQ(default_gemm_time(profile, m, n, k, PP_DTYPE_BF16), memory);
}

// Compute C beside overlapped communication O, compute 1 + s times slower while both run:
// max(O, C + min(O s / (1 + s), C s)). By hand with s = 0.25: C = 10, O = 5: the compute loses
// 5 x 0.2 = 1 s, 11 s. O = 12: 10 + 2.4 = 12.4 s (the compute, slowed the whole time, would need
// 12.5 s; it finished its last 0.1 s alone at full speed). O = 20: the compute takes 12.5 s, the
// communication 20 s. s = 0: max(O, C).
TEST(OverlappedElapsed, ComputeSlowsWhileCommunicationRunsBesideIt) {
  EXPECT_DOUBLE_EQ(overlapped_elapsed_s(10, 5, 0.25), 11.0);
  EXPECT_DOUBLE_EQ(overlapped_elapsed_s(10, 12, 0.25), 12.4);
  EXPECT_DOUBLE_EQ(overlapped_elapsed_s(10, 20, 0.25), 20.0);
  EXPECT_DOUBLE_EQ(overlapped_elapsed_s(10, 12.5, 0.25), 12.5);
  EXPECT_DOUBLE_EQ(overlapped_elapsed_s(10, 5, 0.0), 10.0);
  EXPECT_DOUBLE_EQ(overlapped_elapsed_s(10, 15, 0.0), 15.0);
  pp_hardware_profile older = two_tier_profile();
  older.overlap_compute_slowdown = 0.25;
  EXPECT_DOUBLE_EQ(overlap_compute_slowdown(older), 0.25);
  older.struct_size = offsetof(pp_hardware_profile, overlap_compute_slowdown);  // a plugin older than the field
  EXPECT_DOUBLE_EQ(overlap_compute_slowdown(older), 0.0);
}

// The expected maximum of n standard normal draws against the published values (Tippett 1925;
// Harter 1961): 1/sqrt(pi) for two, 1.53875 for 10, 2.50759 for 100, 3.24144 for 1000.
TEST(SlowestGpu, ExpectedMaximumOfNormalsMatchesTheTables) {
  EXPECT_EQ(expected_maximum_of_normals(1), 0.0);
  EXPECT_NEAR(expected_maximum_of_normals(2), 1.0 / std::sqrt(std::numbers::pi), 1e-6);
  EXPECT_NEAR(expected_maximum_of_normals(10), 1.53875, 1e-5);
  EXPECT_NEAR(expected_maximum_of_normals(100), 2.50759, 1e-5);
  EXPECT_NEAR(expected_maximum_of_normals(1000), 3.24144, 1e-5);
  EXPECT_NEAR(expected_maximum_of_normals(10), 1.53875, 1e-5);  // again, from the thread's cache
}

TEST(SlowestGpu, ComputeRunsAtTheSlowestGpusPace) {
  pp_hardware_profile profile = two_tier_profile();
  profile.speed_variation = 0.02;
  EXPECT_NEAR(slowest_gpu_factor(profile, 100), 1 + 0.02 * 2.50759, 1e-7);
  EXPECT_DOUBLE_EQ(slowest_gpu_factor(profile, 1), 1.0);
  pp_hardware_profile older = profile;
  older.struct_size = offsetof(pp_hardware_profile, speed_variation);  // a plugin older than the field
  EXPECT_DOUBLE_EQ(slowest_gpu_factor(older, 100), 1.0);
}

TEST(FitToCluster, SmallerNodesShrinkTheNvlinkDomain) {
  pp_hardware_profile profile = two_tier_profile();
  profile.gpus_per_node = 8;
  pp_hardware_profile four = fit_to_cluster(profile, pp_cluster{sizeof(pp_cluster), 16, 4});
  EXPECT_EQ(four.tiers[0].domain_size, 4);
  EXPECT_EQ(four.tiers[1].domain_size, 0);
  // An 8-rank all-gather now crosses the network between two 4-GPU nodes.
  EXPECT_GT(default_collective_time(four, PP_COLLECTIVE_ALL_GATHER, 1e9, 8, 1),
            default_collective_time(profile, PP_COLLECTIVE_ALL_GATHER, 1e9, 8, 1));
  // A rack-scale domain (larger than a node) spans nodes and is left alone.
  profile.tiers[0].domain_size = 72;
  profile.gpus_per_node = 4;
  EXPECT_EQ(fit_to_cluster(profile, pp_cluster{sizeof(pp_cluster), 72, 4}).tiers[0].domain_size, 72);
}

TEST(PeakFlops, Fp8FallsBackToBf16WhereMissing) {
  pp_hardware_profile profile = two_tier_profile();
  EXPECT_DOUBLE_EQ(peak_flops(profile, PP_DTYPE_FP8), 1000e12);
  EXPECT_THROW(peak_flops(profile, PP_DTYPE_FP32), ConstraintError);
}

TEST(HostTransfer, NeedsAHostLink) {
  pp_hardware_profile profile = two_tier_profile();
  EXPECT_THROW(host_transfer_time(profile, 1e9), ConstraintError);
  profile.host_link_bandwidth_bytes_per_s = 50e9;
  EXPECT_DOUBLE_EQ(host_transfer_time(profile, 1e9), 0.02);
}

}  // namespace
}  // namespace paraplan::cost

namespace paraplan::cost {
namespace {

pp_model gpt3_175b() {
  pp_model model{};
  model.struct_size = sizeof(model);
  model.layers = 96, model.hidden = 12288, model.heads = 96, model.kv_heads = 96, model.head_dim = 128;
  model.ffn_hidden = 4 * 12288, model.ffn_type = PP_FFN_GELU, model.vocab = 51200, model.seq_len = 2048;
  return model;
}

TEST(ModelFlopsPerStep, IsMegatronF72ForAGpt) {
  pp_training training{sizeof(pp_training), 64, 1, PP_PRECISION_BF16, PP_RECOMPUTE_FULL, PP_OPTIMIZER_ADAM, 0, 0, PP_MASTER_WEIGHTS_SEPARATE, PP_ATTENTION_KERNEL_TUNED, 0, 0, PP_ELEMENTWISE_FUSED, 0, 0};
  const double B = 64, s = 2048, l = 96, h = 12288, V = 51200;
  EXPECT_NEAR(model_flops_per_step(gpt3_175b(), training) / (72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h))),
              1.0, 1e-12);
}

TEST(ModelFlopsPerStep, MoeCountsTheRouterAndTheChosenExperts) {
  pp_model moe = gpt3_175b();
  moe.layers = 1, moe.moe_experts = 8, moe.moe_top_k = 2, moe.moe_ffn_hidden = 1000, moe.ffn_type = PP_FFN_SWIGLU;
  pp_model dense = moe;
  dense.moe_experts = 0, dense.ffn_hidden = 2000;  // two SwiGLU experts of 1000 = one of 2000
  pp_training training{sizeof(pp_training), 1, 1, PP_PRECISION_BF16, PP_RECOMPUTE_NONE, PP_OPTIMIZER_ADAM, 0, 0, PP_MASTER_WEIGHTS_SEPARATE, PP_ATTENTION_KERNEL_TUNED, 0, 0, PP_ELEMENTWISE_FUSED, 0, 0};
  // The only difference is the router: 2·h·E FLOPs per token forward, ×3 with backward.
  EXPECT_DOUBLE_EQ(model_flops_per_step(moe, training) - model_flops_per_step(dense, training), 3 * 2 * 12288.0 * 8 * 2048);
}

}  // namespace
}  // namespace paraplan::cost
