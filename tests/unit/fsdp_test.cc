// ZeRO/FSDP through the whole pipeline (recipe -> fsdp plugin -> analytic executor), against the
// ZeRO paper (Rajbhandari et al. 2020, Figure 1: 7.5B parameters on 64 GPUs with Adam take
// 120 GB, 31.4 GB, 16.6 GB and 1.9 GB per GPU for stages 0-3) and the ring volumes.
#include "test_support.h"

namespace paraplan::host {
namespace {

// A 7.5B GPT: 36 layers of width 4096 and a 32000-token vocabulary (untied embeddings).
const double kLayers = 36, kHidden = 4096, kVocab = 32000;
// Ψ by hand: 12·h² per layer (attention 4h², GELU MLP 8h²) + 2 norm vectors, embeddings + head + final norm.
const double kParameters = kLayers * (12 * kHidden * kHidden + 2 * kHidden) + 2 * kVocab * kHidden + kHidden;

std::string zero_recipe(int stage, bool overlap = true) {
  return "[model]\nlayers = 36\nhidden = 4096\nheads = 32\nvocab = 32000\nseq_len = 1024\n"
         "[training]\nglobal_batch = 64\nmicro_batch = 1\nmain_grads = \"bf16\"\n"
         "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 64\n"
         "[[strategy]]\nname = \"fsdp\"\nstage = " +
         std::to_string(stage) + "\noverlap = " + (overlap ? "true" : "false") + "\n";
}

double model_state_gb(const test::Evaluated& evaluated) {
  return (evaluated.number("memory.parameters_bytes") + evaluated.number("memory.gradients_bytes") +
          evaluated.number("memory.optimizer_bytes")) / 1e9;
}

TEST(Fsdp, ParameterCountIsTheZeroPapersExample) { EXPECT_NEAR(kParameters / 1e9, 7.5, 0.02); }

TEST(Fsdp, ModelStateMatchesTheZeroPaper) {
  const double psi = kParameters, n = 64;
  const double expected_gb[4] = {16 * psi / 1e9, (4 * psi + 12 * psi / n) / 1e9, (2 * psi + 14 * psi / n) / 1e9,
                                 16 * psi / n / 1e9};
  const double paper_gb[4] = {120, 31.4, 16.6, 1.9};
  for (int stage = 0; stage <= 3; ++stage) {
    SCOPED_TRACE("stage " + std::to_string(stage));
    double state = model_state_gb(test::evaluate_recipe(zero_recipe(stage)));
    EXPECT_NEAR(state, expected_gb[stage], 1e-9 * expected_gb[stage]);
    EXPECT_NEAR(state, paper_gb[stage], 0.06 * paper_gb[stage] + 0.05);  // the paper rounds Ψ to 7.5e9
  }
}

TEST(Fsdp, CommunicationVolumesFollowTheRingFormulas) {
  // One micro-batch per step (64 sequences over 64 ranks): every collective runs once.
  const double n = 64, gradient_bytes = 2 * kParameters;
  double plain = test::evaluate_recipe(zero_recipe(0)).number("comm.fsdp.bytes_per_gpu_per_step");
  EXPECT_NEAR(plain / (2 * (n - 1) / n * gradient_bytes), 1.0, 1e-12);  // one all-reduce
  double stage1 = test::evaluate_recipe(zero_recipe(1)).number("comm.fsdp.bytes_per_gpu_per_step");
  EXPECT_NEAR(stage1 / plain, 1.0, 1e-12);  // reduce-scatter + all-gather = an all-reduce
  double stage3 = test::evaluate_recipe(zero_recipe(3)).number("comm.fsdp.bytes_per_gpu_per_step");
  EXPECT_NEAR(stage3 / plain, 1.5, 1e-12);  // ZeRO-3 moves 1.5x the bytes of plain DP
}

TEST(Fsdp, OverlapOnlyEverHidesCommunication) {
  test::Evaluated hidden = test::evaluate_recipe(zero_recipe(3, true));
  test::Evaluated exposed = test::evaluate_recipe(zero_recipe(3, false));
  EXPECT_LE(hidden.number("time.step_s"), exposed.number("time.step_s"));
  EXPECT_GT(exposed.number("time.exposed_comm_s.fsdp"), 0.0);
  // Without overlap every byte is on the critical path: the step is compute plus communication.
  EXPECT_NEAR(exposed.number("time.step_s"),
              exposed.number("time.compute_s") + exposed.number("time.exposed_comm_s.fsdp") +
                  exposed.number("time.optimizer_s"),
              1e-9 * exposed.number("time.step_s"));
}

TEST(Fsdp, ReportsThePlanKeys) {
  test::Evaluated evaluated = test::evaluate_recipe(zero_recipe(3));
  EXPECT_EQ(evaluated.number("plan.num_gpus"), 64);
  EXPECT_EQ(evaluated.number("plan.mesh.dp"), 64);
  EXPECT_EQ(evaluated.number("plan.num_micro_batches"), 1);
  EXPECT_EQ(evaluated.number("pipeline.bubble_fraction"), 0);
  const ResultValue* fits = evaluated.results.find("memory.fits");
  ASSERT_NE(fits, nullptr);
  EXPECT_TRUE(std::get<bool>(*fits));
  EXPECT_DOUBLE_EQ(evaluated.number("memory.headroom_bytes"),
                   evaluated.number("memory.capacity_bytes") - evaluated.number("memory.per_gpu_bytes"));
}


// ZeRO-3 at scale: every gather and reduce-scatter is one NCCL ring through the whole group, so
// at a fixed batch per GPU each collective gets slower as the group grows (per-GPU throughput
// falls, as measured ZeRO-3 runs do). Llama 2 13B, one 2K sequence per micro-batch, 4 per GPU,
// 8-GPU H100 nodes: on 512 and 1024 GPUs the 126 collectives of a micro-batch (gathers forward
// and backward and the reduce-scatter for 40 layers, the embedding and the head) outlast the
// compute. Doubling the ring adds 448 NVLink steps (2 us each) and 64 InfiniBand steps (5 us):
// 1.216 ms per collective, 504 collectives a step.
TEST(Fsdp, Zero3SlowsAsItsRingGrows) {
  auto thirteen_b = [](int gpus) {
    return "[model]\npreset = \"llama2-13b\"\nseq_len = 2048\n[training]\nglobal_batch = " + std::to_string(4 * gpus) +
           "\nmicro_batch = 1\nmain_grads = \"bf16\"\n[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = " +
           std::to_string(gpus) + "\n[[strategy]]\nname = \"fsdp\"\nstage = 3\n";
  };
  const test::Evaluated half = test::evaluate_recipe(thirteen_b(512)), full = test::evaluate_recipe(thirteen_b(1024));
  ASSERT_GT(half.number("time.exposed_comm_s.fsdp"), 0.0);
  const double added_latency = (1023 - 511 - 64) * 2e-6 + 64 * 5e-6;
  EXPECT_NEAR((full.number("time.step_s") - half.number("time.step_s")) / (504 * added_latency), 1.0, 0.02);
}

}  // namespace
}  // namespace paraplan::host

namespace paraplan::host {
namespace {

TEST(Fsdp, ContextParallelGradientsAreReducedOverCpToo) {
  // 64 GPUs = cp 2 x dp 32, ZeRO-1: reduce-scatter of the gradients and all-gather of the weights
  // over dp (once per step), then the same over cp of the 1/32 shard: as Megatron-LM's one
  // reduce-scatter and all-gather over the 64 ranks of dp x cp, (P - 1)/P of each buffer.
  std::string recipe = zero_recipe(1) + "[[strategy]]\nname = \"sp\"\nmode = \"ring\"\ndegree = 2\n";
  const double dp = 32, cp = 2, bytes = 2 * kParameters;  // bf16 gradients and weights
  const double expected = (dp - 1) / dp * (bytes + bytes) + (cp - 1) / cp * (bytes + bytes) / dp;
  EXPECT_NEAR(expected / (2 * (dp * cp - 1) / (dp * cp) * bytes), 1.0, 1e-12);
  EXPECT_NEAR(test::evaluate_recipe(recipe).number("comm.fsdp.bytes_per_gpu_per_step") / expected, 1.0, 1e-12);
}

// Megatron-LM builds its distributed optimizer on the dp x cp group (megatron/core/optimizer/
// __init__.py, intra_dp_cp_group): with cp = 2 the Adam state of ZeRO-1 is 12Ψ/(32 x 2), not
// 12Ψ/32; weights and gradients stay whole. ZeRO-3 shards everything over dp x cp too, as
// torchtitan's FSDP2 does on its dp_shard_cp mesh: weights 2Ψ/64, gradients 2Ψ/64, Adam 12Ψ/64.
TEST(Fsdp, TheDistributedOptimizerShardsOverDpTimesCp) {
  const std::string ring = "[[strategy]]\nname = \"sp\"\nmode = \"ring\"\ndegree = 2\n";
  const test::Evaluated stage1 = test::evaluate_recipe(zero_recipe(1) + ring);
  EXPECT_NEAR(stage1.number("memory.optimizer_bytes") / (12 * kParameters / 64), 1.0, 1e-12);
  EXPECT_NEAR(stage1.number("memory.gradients_bytes") / (2 * kParameters), 1.0, 1e-12);
  const test::Evaluated stage3 = test::evaluate_recipe(zero_recipe(3) + ring);
  EXPECT_NEAR(stage3.number("memory.optimizer_bytes") / (12 * kParameters / 64), 1.0, 1e-12);
  EXPECT_NEAR(stage3.number("memory.parameters_bytes") / (2 * kParameters / 64), 1.0, 1e-12);
  EXPECT_NEAR(stage3.number("memory.gradients_bytes") / (2 * kParameters / 64), 1.0, 1e-12);
}

// ZeRO-3 over dp x cp moves what one all-gather / reduce-scatter over the 64 ranks would: per
// micro-batch (64 sequences over dp = 32: two) the weights gathered for forward and again for
// backward and the gradients reduce-scattered, over dp (32) then over cp (2) of the 1/32 shard:
// 3 x (63/64) x 2Ψ bytes each, the ZeRO paper's 1.5x plain data parallelism's 2 x (63/64) x 2Ψ.
TEST(Fsdp, Zero3OverContextParallelRanksMovesOneCollectiveOverDpTimesCp) {
  const std::string ring = "[[strategy]]\nname = \"sp\"\nmode = \"ring\"\ndegree = 2\n";
  const double dp = 32, cp = 2, bytes = 2 * kParameters, micro_batches = 64 / dp;
  const double expected = micro_batches * 3 * ((dp - 1) / dp * bytes + (cp - 1) / cp * bytes / dp);
  EXPECT_NEAR(expected / (micro_batches * 3 * (dp * cp - 1) / (dp * cp) * bytes), 1.0, 1e-12);
  EXPECT_NEAR(test::evaluate_recipe(zero_recipe(3) + ring).number("comm.fsdp.bytes_per_gpu_per_step") / expected, 1.0,
              1e-12);
}

// PyTorch FSDP keeps the fp32 weights themselves as the master (master_weights = "in_place"):
// 4-byte weights and only Adam's two moments in the optimizer, 4 + 2 + 8 = 14 bytes per parameter
// with bf16 gradients against the ZeRO paper's 2 + 2 + 12 = 16; the all-gathers still move 2-byte
// weights, so ZeRO-3's traffic is the same.
TEST(Fsdp, MasterWeightsInPlaceKeepFp32WeightsAndNoCopy) {
  auto with = [](std::string recipe, const std::string& key) {
    return recipe.insert(recipe.find("[training]\n") + 11, key + "\n");
  };
  const test::Evaluated plain = test::evaluate_recipe(with(zero_recipe(0), "master_weights = \"in_place\""));
  EXPECT_NEAR(plain.number("memory.parameters_bytes") / (4 * kParameters), 1.0, 1e-12);
  EXPECT_NEAR(plain.number("memory.optimizer_bytes") / (8 * kParameters), 1.0, 1e-12);
  EXPECT_NEAR(model_state_gb(plain) / (14 * kParameters / 1e9), 1.0, 1e-12);
  const test::Evaluated sharded = test::evaluate_recipe(with(zero_recipe(3), "master_weights = \"in_place\""));
  EXPECT_NEAR(sharded.number("comm.fsdp.bytes_per_gpu_per_step") /
                  test::evaluate_recipe(zero_recipe(3)).number("comm.fsdp.bytes_per_gpu_per_step"),
              1.0, 1e-12);
  EXPECT_NEAR(model_state_gb(sharded) / (14 * kParameters / 64 / 1e9), 1.0, 1e-12);
}

// ZeRO-3 holds a layer's weights whole while it runs and the next one's as it arrives (one layer
// of prefetch, FSDP's default), plus the running layer's whole gradients before their
// reduce-scatter; the embedding and the head stay gathered from forward to backward. By hand for
// the 7.5B GPT (bf16 weights and gradients): a layer is 12h² + 2h parameters, the embedding V·h,
// the head V·h and the final norm's h.
TEST(Fsdp, Zero3HoldsTheRunningAndThePrefetchedLayerWhole) {
  const double layer = 12 * kHidden * kHidden + 2 * kHidden, ends = 2 * kVocab * kHidden + kHidden;
  const double overhead = 1024.0 * 1024 * 1024;  // the analytic executor's runtime_overhead_gib
  const test::Evaluated prefetching = test::evaluate_recipe(zero_recipe(3, true));
  EXPECT_NEAR((prefetching.number("memory.other_bytes") - overhead) / (2 * (2 * layer + layer + ends)), 1.0, 1e-12);
  const test::Evaluated on_demand = test::evaluate_recipe(zero_recipe(3, false));
  EXPECT_NEAR((on_demand.number("memory.other_bytes") - overhead) / (2 * (layer + layer + ends)), 1.0, 1e-12);
  EXPECT_EQ(test::evaluate_recipe(zero_recipe(2)).number("memory.other_bytes"), overhead);
  // With the weights kept in fp32 in place they are still gathered in 2 bytes: the same buffers.
  std::string in_place = zero_recipe(3, true);
  in_place.insert(in_place.find("[training]\n") + 11, "master_weights = \"in_place\"\n");
  EXPECT_NEAR(test::evaluate_recipe(in_place).number("memory.other_bytes"), prefetching.number("memory.other_bytes"), 1e-3);
}

// Under pipeline parallelism ZeRO-2 and ZeRO-3 run as PyTorch FSDP2 under
// torch.distributed.pipelining runs them (the only engine that pipelines them): gradients
// accumulate whole and are reduce-scattered once per step, and ZeRO-3's weights, gathered in the
// step's first forward, stay gathered. So both move what the distributed optimizer (stage 1)
// moves, one reduce-scatter and one all-gather per step, and hold whole gradients. Without a
// pipeline, ZeRO-2 reduce-scatters every micro-batch: with bf16 gradients (as many bytes as the
// weights) and m = 8 micro-batches it moves (m + 1) / 2 = 4.5 times stage 1's bytes.
std::string pipelined_recipe(int stage, int pp) {
  return "[model]\nlayers = 36\nhidden = 4096\nheads = 32\nvocab = 32000\nseq_len = 1024\n"
         "[training]\nglobal_batch = 512\nmicro_batch = 1\nmain_grads = \"bf16\"\n"
         "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 64\n" +
         std::string(pp > 1 ? "[[strategy]]\nname = \"pp\"\ndegree = " + std::to_string(pp) + "\n" : "") +
         "[[strategy]]\nname = \"fsdp\"\nstage = " + std::to_string(stage) + "\n";
}

TEST(Fsdp, UnderPipeliningGradientsSyncOncePerStep) {
  const auto bytes = [](const test::Evaluated& run) { return run.number("comm.fsdp.bytes_per_gpu_per_step"); };
  const test::Evaluated flat1 = test::evaluate_recipe(pipelined_recipe(1, 1));
  const test::Evaluated flat2 = test::evaluate_recipe(pipelined_recipe(2, 1));
  EXPECT_EQ(flat1.number("plan.num_micro_batches"), 8);
  EXPECT_NEAR(bytes(flat2) / bytes(flat1), (8.0 + 1.0) / 2.0, 1e-12);

  const test::Evaluated piped1 = test::evaluate_recipe(pipelined_recipe(1, 2));
  EXPECT_EQ(piped1.number("plan.num_micro_batches"), 16);
  for (int stage : {2, 3}) {
    SCOPED_TRACE("stage " + std::to_string(stage));
    const test::Evaluated piped = test::evaluate_recipe(pipelined_recipe(stage, 2));
    EXPECT_NEAR(bytes(piped) / bytes(piped1), 1.0, 1e-12);
    EXPECT_NEAR(piped.number("memory.gradients_bytes") / piped1.number("memory.gradients_bytes"), 1.0, 1e-12);
  }
  // ZeRO-3 keeps the stage's layers gathered (2 bytes each) instead of two layers in flight; the
  // busiest stage by hand: 18 layers and one end (the embedding, or the head with the final norm).
  const double layer = 12 * kHidden * kHidden + 2 * kHidden, overhead = 1024.0 * 1024 * 1024;
  const test::Evaluated piped3 = test::evaluate_recipe(pipelined_recipe(3, 2));
  EXPECT_NEAR((piped3.number("memory.other_bytes") - overhead) / (2 * (18 * layer + kVocab * kHidden + kHidden)), 1.0,
              1e-3);
}

}  // namespace
}  // namespace paraplan::host

namespace paraplan::host {
namespace {

// The data-parallel engine's own behaviour (issue 18 item 2): gradient buckets of a fixed number
// of parameters, each a collective that pays the ring's latency (Megatron-LM's --ddp-bucket-size,
// DeepSpeed's reduce_bucket_size), and how many layers ZeRO-3 gathers ahead.
std::string engine_recipe(int stage, const std::string& engine, bool overlap = false) {
  return zero_recipe(stage, overlap) + engine;
}

// ZeRO-1 without overlap on 64 GPUs (8 nodes of 8): every reduce-scatter and all-gather is on the
// step's path. Buckets of 5e7 parameters cut a layer (12h² + 2h = 201,334,784 parameters) into 5
// collectives, the embedding and the head (32000·4096 = 131,072,000, + 4096 for the final norm)
// into 3 each: 36·4 + 2 + 2 = 148 more reduce-scatters and as many more all-gathers, the same
// bytes. Each collective is a ring through the 64 ranks: NCCL's 8.4 us, 56 NVLink steps (2 us)
// and 7 InfiniBand steps (5 us) = 155.4 us.
TEST(Fsdp, EachGradientBucketPaysTheRingsLatency) {
  const test::Evaluated per_layer = test::evaluate_recipe(engine_recipe(1, ""));
  const test::Evaluated bucketed = test::evaluate_recipe(engine_recipe(1, "bucket_parameters = 5e7\n"));
  EXPECT_NEAR(bucketed.number("comm.fsdp.bytes_per_gpu_per_step") / per_layer.number("comm.fsdp.bytes_per_gpu_per_step"),
              1.0, 1e-12);
  const double latency = 8.4e-6 + 56 * 2e-6 + 7 * 5e-6, added = 2 * (36 * 4 + 2 + 2);
  EXPECT_NEAR((bucketed.number("time.step_s") - per_layer.number("time.step_s")) / (added * latency), 1.0, 0.01);
  // A bucket of a whole layer or more is one collective per layer, as with no bucket size.
  EXPECT_DOUBLE_EQ(test::evaluate_recipe(engine_recipe(1, "bucket_parameters = 5e8\n")).number("time.step_s"),
                   per_layer.number("time.step_s"));
}

// Each layer prefetched holds one more layer's weights gathered (2 bytes a parameter); with none
// prefetched a layer's gather waits for nothing to hide behind, and the buffer holds the running
// layer only, as without overlap.
TEST(Fsdp, Zero3PrefetchDepthHoldsThatManyLayersAhead) {
  const double layer = 12 * kHidden * kHidden + 2 * kHidden;
  const test::Evaluated one = test::evaluate_recipe(engine_recipe(3, "", true));
  const test::Evaluated three = test::evaluate_recipe(engine_recipe(3, "prefetch = 3\n", true));
  EXPECT_NEAR((three.number("memory.other_bytes") - one.number("memory.other_bytes")) / (2 * 2 * layer), 1.0, 1e-12);
  const test::Evaluated none = test::evaluate_recipe(engine_recipe(3, "prefetch = 0\n", true));
  EXPECT_NEAR(none.number("memory.other_bytes"), test::evaluate_recipe(zero_recipe(3, false)).number("memory.other_bytes"),
              1e-3);
  EXPECT_GT(none.number("time.exposed_comm_s.fsdp"), one.number("time.exposed_comm_s.fsdp"));
  EXPECT_GT(none.number("time.step_s"), one.number("time.step_s"));
}

TEST(Fsdp, EngineSettingsThatCannotRunAreRefused) {
  test::expect_error<PlanError>([] { test::evaluate_recipe(engine_recipe(1, "bucket_parameters = 1000\n")); },
                                {"fsdp bucket_parameters = 1000: 0 (one bucket per layer) or at least 100000 parameters"});
  test::expect_error<PlanError>([] { test::evaluate_recipe(engine_recipe(1, "prefetch = 2\n")); },
                                {"fsdp prefetch = 2: prefetching is stage 3's"});
  test::expect_error<InputError>([] { test::evaluate_recipe(engine_recipe(3, "prefetch = 9\n")); },
                                 {"strategy[0].prefetch: 9 is out of range [0, 8]"});
}

}  // namespace
}  // namespace paraplan::host
