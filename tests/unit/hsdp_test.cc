// Hybrid sharded data parallelism (Zhao et al. 2023, PyTorch FSDP, HYBRID_SHARD) through the
// whole pipeline: ZeRO within a shard group of G ranks, replication across R = N/G groups.
#include "test_support.h"

namespace paraplan::host {
namespace {

using test::expect_error;

// The ZeRO paper's 7.5B GPT (as in fsdp_test.cc): 36 layers of width 4096, vocabulary 32000.
const double kLayers = 36, kHidden = 4096, kVocab = 32000;
const double kParameters = kLayers * (12 * kHidden * kHidden + 2 * kHidden) + 2 * kVocab * kHidden + kHidden;

// One micro-batch per step (global batch = GPUs), 2-byte gradients as ZeRO counts them.
std::string recipe(int gpus, const std::string& strategy) {
  return "[model]\nlayers = 36\nhidden = 4096\nheads = 32\nvocab = 32000\nseq_len = 1024\n"
         "[training]\nglobal_batch = " +
         std::to_string(gpus) + "\nmicro_batch = 1\nmain_grads = \"bf16\"\n" +
         "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = " + std::to_string(gpus) + "\n" + strategy;
}

std::string hsdp(int stage, const std::string& extra = "") {
  return "[[strategy]]\nname = \"hsdp\"\nstage = " + std::to_string(stage) + "\n" + extra;
}

std::string fsdp(int stage) { return "[[strategy]]\nname = \"fsdp\"\nstage = " + std::to_string(stage) + "\n"; }

double model_state(const test::Evaluated& evaluated) {
  return evaluated.number("memory.parameters_bytes") + evaluated.number("memory.gradients_bytes") +
         evaluated.number("memory.optimizer_bytes");
}

const pp_mesh_axis& axis(const test::Evaluated& evaluated, const std::string& name) {
  for (const pp_mesh_axis& axis : evaluated.composed.plan->axes())
    if (name == axis.name) return axis;
  throw std::runtime_error("no axis " + name);
}

TEST(Hsdp, DefaultShardGroupIsOneNode) {
  test::Evaluated evaluated = test::evaluate_recipe(recipe(64, hsdp(3)));
  EXPECT_EQ(axis(evaluated, "dp").degree, 8);
  EXPECT_EQ(axis(evaluated, "dp").stride, 1);  // inside an 8-GPU node
  EXPECT_EQ(axis(evaluated, "dp_replicate").degree, 8);
  EXPECT_EQ(axis(evaluated, "dp_replicate").stride, 8);
  EXPECT_EQ(evaluated.number("plan.data_parallel_size"), 64);
  // Tensor parallelism takes 2 GPUs of each node: a node holds 4 data-parallel ranks.
  test::Evaluated with_tp = test::evaluate_recipe(recipe(64, "[[strategy]]\nname = \"tp\"\ndegree = 2\n" + hsdp(3)));
  EXPECT_EQ(axis(with_tp, "dp").degree, 4);
  EXPECT_EQ(axis(with_tp, "dp").stride, 2);
  EXPECT_EQ(axis(with_tp, "dp_replicate").degree, 8);
}

TEST(Hsdp, ModelStateIsZeroOverTheShardGroup) {
  // The ZeRO formulas with the group size G = 8 in place of N.
  const double psi = kParameters, g = 8;
  const double expected[4] = {0, 4 * psi + 12 * psi / g, 2 * psi + 14 * psi / g, 16 * psi / g};
  for (int stage = 1; stage <= 3; ++stage) {
    SCOPED_TRACE("stage " + std::to_string(stage));
    EXPECT_NEAR(model_state(test::evaluate_recipe(recipe(64, hsdp(stage)))), expected[stage], 1e-9 * expected[stage]);
  }
  // An explicit group of 16 (two nodes): 16Ψ/16.
  EXPECT_NEAR(model_state(test::evaluate_recipe(recipe(64, hsdp(3, "shard_group = 16\n")))), psi, 1e-9 * psi);
}

TEST(Hsdp, CommunicationIsFsdpWithinTheGroupPlusTheReplicaAllReduce) {
  // Within the group exactly fsdp over G ranks; across the R groups one all-reduce per step of
  // the gradient shard, grads / G, of which a ring puts 2·(R-1)/R on the wire.
  const double gradients = 2 * kParameters;
  for (int g : {8, 16}) {
    const double r = 64.0 / g;
    const double replica = 2 * (r - 1) / r * gradients / g;
    for (int stage = 1; stage <= 3; ++stage) {
      SCOPED_TRACE("G = " + std::to_string(g) + ", stage " + std::to_string(stage));
      double hybrid = test::evaluate_recipe(recipe(64, hsdp(stage, "shard_group = " + std::to_string(g) + "\n")))
                          .number("comm.hsdp.bytes_per_gpu_per_step");
      double group = test::evaluate_recipe(recipe(g, fsdp(stage))).number("comm.fsdp.bytes_per_gpu_per_step");
      EXPECT_NEAR(hybrid, group + replica, 1e-12 * hybrid);
    }
  }
}

// With ring context parallelism of 2 the distributed optimizer (stage 1) spans G x cp ranks: a
// rank's gradient shard is grads / (G x 2), and only that crosses the replicas. 64 GPUs = cp 2 x
// dp 32, shard groups of G = 8 given, R = 4 replicas: 2 (R - 1)/R x grads / 16 on the replica
// axis, on top of what fsdp moves over 8 data-parallel ranks with the same cp (16 GPUs).
TEST(Hsdp, TheReplicaAllReduceMovesTheShardOverGroupAndCp) {
  const double gradients = 2 * kParameters, g = 8, cp = 2, r = 4;
  const std::string ring = "[[strategy]]\nname = \"sp\"\nmode = \"ring\"\ndegree = 2\n";
  const test::Evaluated hybrid = test::evaluate_recipe(recipe(64, ring + hsdp(1, "shard_group = 8\n")));
  const test::Evaluated group = test::evaluate_recipe(recipe(16, ring + fsdp(1)));
  const double replica = 2 * (r - 1) / r * gradients / (g * cp);
  EXPECT_NEAR(hybrid.number("comm.hsdp.bytes_per_gpu_per_step"), group.number("comm.fsdp.bytes_per_gpu_per_step") + replica,
              1e-12 * replica);
}

TEST(Hsdp, ReplicaAllReduceRunsOncePerStepBehindBackward) {
  test::Evaluated evaluated = test::evaluate_recipe(recipe(64, hsdp(3)));
  const int32_t replicate = static_cast<int32_t>(&axis(evaluated, "dp_replicate") - evaluated.composed.plan->axes().data());
  int found = 0;
  for (const pp_op& op : evaluated.composed.plan->op_list()) {
    if (std::string(op.name) != "grad_all_reduce_replicate") continue;
    ++found;
    EXPECT_EQ(op.axis, replicate);
    EXPECT_EQ(op.collective, PP_COLLECTIVE_ALL_REDUCE);
    EXPECT_EQ(op.phase, PP_PHASE_BACKWARD);
    EXPECT_EQ(op.frequency, PP_PER_STEP);
    EXPECT_EQ(op.overlap, PP_OVERLAP_COMPUTE);
  }
  EXPECT_EQ(found, 3);  // embedding, layer, head
}

TEST(Hsdp, OneGroupIsFsdp) {
  test::Evaluated hybrid = test::evaluate_recipe(recipe(8, hsdp(3)));
  test::Evaluated plain = test::evaluate_recipe(recipe(8, fsdp(3)));
  EXPECT_EQ(hybrid.number("plan.mesh.dp_replicate"), 1);
  EXPECT_EQ(hybrid.number("comm.hsdp.bytes_per_gpu_per_step"), plain.number("comm.fsdp.bytes_per_gpu_per_step"));
  EXPECT_EQ(hybrid.number("time.step_s"), plain.number("time.step_s"));
}

TEST(Hsdp, BeatsFullShardingWhenTheRingIsLong) {
  // Llama 2 13B on 64 nodes x 8 H100, one 2K sequence per micro-batch: a layer's forward
  // computes for about 2 ms. Full sharding over 512 ranks runs every per-micro-batch all-gather
  // and reduce-scatter as one NCCL ring through all 512 GPUs: 511 steps, 63 of them across
  // InfiniBand (5 us) and 448 over NVLink (2 us), 1.2 ms of latency, plus 511/512 of the
  // layer's 0.63 GB at 360 GB/s (1.75 ms): about 3 ms per collective, more than the compute it
  // hides behind. HSDP with a node-wide group rings through 8 GPUs (7 steps, the same 1.5 ms of
  // bytes), which the compute hides, and crosses the network once per step with 1/8 of the
  // gradients. Same compute, less exposed communication: hsdp must be faster. It pays in memory
  // (16Ψ/8 against 16Ψ/512 per GPU), small next to the saving here. On 64 GPUs (a ring of 63
  // steps) full sharding is hidden too.
  auto thirteen_b = [](int gpus, const std::string& strategy) {
    return "[model]\npreset = \"llama2-13b\"\nseq_len = 2048\n[training]\nglobal_batch = " + std::to_string(4 * gpus) +
           "\nmicro_batch = 1\nmain_grads = \"bf16\"\n[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = " +
           std::to_string(gpus) + "\n" + strategy;
  };
  test::Evaluated small = test::evaluate_recipe(thirteen_b(64, fsdp(3)));
  EXPECT_EQ(small.number("time.exposed_comm_s.fsdp"), 0.0);
  test::Evaluated hybrid = test::evaluate_recipe(thirteen_b(512, hsdp(3)));
  test::Evaluated full = test::evaluate_recipe(thirteen_b(512, fsdp(3)));
  EXPECT_GT(full.number("time.exposed_comm_s.fsdp"), 0.15 * full.number("time.step_s"));  // latency-bound
  EXPECT_LT(hybrid.number("time.step_s"), full.number("time.step_s"));
  EXPECT_LT(hybrid.number("time.exposed_comm_s.hsdp"), full.number("time.exposed_comm_s.fsdp"));
  EXPECT_GT(hybrid.number("memory.per_gpu_bytes"), full.number("memory.per_gpu_bytes"));
}

TEST(Hsdp, IsNotTheDefaultDataParallelStrategy) {
  test::Evaluated evaluated = test::evaluate_recipe(recipe(8, ""));
  ASSERT_EQ(evaluated.composed.strategies.size(), 1u);
  EXPECT_EQ(evaluated.composed.strategies[0].name, "fsdp");
}

TEST(Hsdp, ShardGroupMustDivideTheDegree) {
  expect_error<PlanError>([] { test::evaluate_recipe(recipe(64, hsdp(3, "shard_group = 3\n"))); },
                          {"strategy[0] 'hsdp'", "shard_group = 3 must divide the hsdp degree 64"});
  expect_error<InputError>([] { test::evaluate_recipe(recipe(64, hsdp(0))); }, {"stage"});
}

TEST(Hsdp, RefusesExpertParallelismAcrossReplicas) {
  expect_error<PlanError>(
      [] {
        test::evaluate_recipe(
            "[model]\npreset = \"mixtral-8x7b\"\nseq_len = 4096\n[training]\nglobal_batch = 16\n[cluster]\n"
            "hardware = \"h100-sxm\"\nnum_gpus = 16\n[[strategy]]\nname = \"ep\"\ndegree = 8\n"
            "[[strategy]]\nname = \"hsdp\"\n");
      },
      {"'hsdp'", "does not support expert parallelism", "use fsdp with ep"});
}

}  // namespace
}  // namespace paraplan::host
