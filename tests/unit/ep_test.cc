// Expert parallelism through the whole pipeline (recipe -> ep + fsdp -> analytic executor), on
// Mixtral 8x7B (Jiang et al. 2024, Table 1: 32 layers, h = 4096, SwiGLU experts of width 14336,
// 8 experts, top-2, GQA with 8 KV heads, vocabulary 32000) at a 4K sequence.
#include <cmath>

#include "paraplan/moe_kernels.hpp"
#include "test_support.h"

namespace paraplan::host {
namespace {

// The routed path's memory-bound kernels carry this many times their minimal bytes
// (paraplan/moe_kernels.hpp): each figure below is the minimal traffic by hand, times it.
constexpr double kPasses = moe::kUnfusedMoePasses;

using test::expect_error;

const double kLayers = 32, kHidden = 4096, kExpertFfn = 14336, kExperts = 8, kTopK = 2, kVocab = 32000;
const double kSeq = 4096;
// Ψ by hand. Experts: 3 SwiGLU matrices of h x f each, 8 per layer. Dense: attention (Q and O are
// h x h, K and V h x 1024 with 8 KV heads of 128), the router (h x 8), two norm vectors; the
// untied embedding and output matrices and the final norm.
const double kExpertParameters = kLayers * kExperts * 3 * kHidden * kExpertFfn;
const double kDenseParameters =
    kLayers * (2 * kHidden * kHidden + 2 * kHidden * 1024 + kHidden * kExperts + 2 * kHidden) + 2 * kVocab * kHidden +
    kHidden;

std::string mixtral_recipe(int gpus, const std::string& ep_keys, int global_batch = 32,
                           const std::string& training = "", const std::string& fsdp_keys = "") {
  return "[model]\npreset = \"mixtral-8x7b\"\nseq_len = 4096\n"
         "[training]\nglobal_batch = " +
         std::to_string(global_batch) + "\nmicro_batch = 1\n" + training +
         "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = " + std::to_string(gpus) +
         "\n[[strategy]]\nname = \"ep\"\n" + ep_keys + "[[strategy]]\nname = \"fsdp\"\n" + fsdp_keys;
}

double ep_bytes(const std::string& recipe) {
  return test::evaluate_recipe(recipe).number("comm.ep.bytes_per_gpu_per_step");
}

const pp_op& find_op(const test::Evaluated& evaluated, const std::string& name, pp_phase phase) {
  for (const pp_op& op : evaluated.composed.plan->op_list())
    if (name == op.name && op.phase == phase) return op;
  throw std::runtime_error("no op " + name);
}

TEST(ExpertParallel, MixtralHasItsPublishedParameterCount) {
  EXPECT_NEAR((kExpertParameters + kDenseParameters) / 1e9, 46.7, 0.05);  // Jiang et al.: 46.7B total
}

TEST(ExpertParallel, EachRankHoldsAnEighthOfTheExperts) {
  // fsdp stage 0 replicates everything else, so per GPU: all dense state + 1/8 of the experts,
  // 2 + 4 (fp32 main grads) + 12 bytes per parameter.
  test::Evaluated evaluated = test::evaluate_recipe(mixtral_recipe(8, "degree = 8\n"));
  const double held = kDenseParameters + kExpertParameters / 8;
  EXPECT_NEAR(evaluated.number("memory.parameters_bytes"), 2 * held, 1e-9 * 2 * held);
  EXPECT_NEAR(evaluated.number("memory.gradients_bytes"), 4 * held, 1e-9 * 4 * held);
  EXPECT_NEAR(evaluated.number("memory.optimizer_bytes"), 12 * held, 1e-9 * 12 * held);
  // Expert weights alone: 1.41e9 parameters per layer, 176M per GPU, 11.3 GB over 32 layers.
  EXPECT_NEAR(2 * kExpertParameters / 8 / 1e9, 11.27, 0.01);
}

TEST(ExpertParallel, ExpertsShardOverExpertDataParallelism) {
  // 16 GPUs, ep = 8: edp = 2, so ZeRO-3 divides expert state by 2 and dense state by 16
  // (2-byte gradients: 16 bytes per parameter).
  test::Evaluated evaluated =
      test::evaluate_recipe(mixtral_recipe(16, "degree = 8\n", 32, "main_grads = \"bf16\"\n", "stage = 3\n"));
  const double state = 16 * (kDenseParameters / 16 + kExpertParameters / 8 / 2);
  EXPECT_NEAR(evaluated.number("memory.parameters_bytes") + evaluated.number("memory.gradients_bytes") +
                  evaluated.number("memory.optimizer_bytes"),
              state, 1e-9 * state);
  // ep is the inner child of dp: its 8 ranks are neighbours on one NVLink node; edp strides over it.
  EXPECT_EQ(evaluated.number("plan.mesh.ep"), 8);
  EXPECT_EQ(evaluated.number("plan.mesh.edp"), 2);
  for (const pp_mesh_axis& axis : evaluated.composed.plan->axes()) {
    if (std::string(axis.name) == "ep") {
      EXPECT_EQ(axis.stride, 1);
    } else if (std::string(axis.name) == "edp") {
      EXPECT_EQ(axis.stride, 8);
    }
  }
}

// The seed claim: "Mixtral 8x7B with 8 experts on 8 GPUs, batch 32, 4K sequence: 1 GB all-to-all
// per MoE layer, 32 GB per step". It holds if "batch 32" is the global batch (4 sequences per
// GPU, here 4 micro-batches of 1), the four all-to-alls of a layer (dispatch and combine, forward
// and backward) are counted, each at its full buffer size, and GB means GiB:
//   one all-to-all: 4096 tokens x top-2 x 4096 x 2 bytes = 2^26 B = 64 MiB
//   per layer and step: 4 micro-batches x 4 all-to-alls x 64 MiB = 1 GiB; 32 layers: 32 GiB.
// paraplan reports what a GPU puts on the wire (nccl-tests bus bytes): 7/8 of each buffer stays
// off the GPU, 28 GiB = 30.06 GB per step.
TEST(ExpertParallel, MixtralAllToAllVolumeMatchesTheSeedClaim) {
  test::Evaluated evaluated = test::evaluate_recipe(mixtral_recipe(8, "degree = 8\n"));
  const double per_all_to_all = kSeq * kTopK * kHidden * 2;
  EXPECT_EQ(per_all_to_all, std::pow(2.0, 26));
  EXPECT_EQ(find_op(evaluated, "ep_dispatch", PP_PHASE_FORWARD).bytes, per_all_to_all);
  EXPECT_EQ(find_op(evaluated, "ep_combine", PP_PHASE_BACKWARD).bytes, per_all_to_all);
  EXPECT_EQ(find_op(evaluated, "ep_dispatch", PP_PHASE_FORWARD).collective, PP_COLLECTIVE_ALL_TO_ALL);

  const double micro_batches = 32.0 / 8;
  EXPECT_EQ(evaluated.number("plan.num_micro_batches"), micro_batches);
  const double buffer_per_layer = micro_batches * 4 * per_all_to_all;
  EXPECT_EQ(buffer_per_layer, std::pow(2.0, 30));                   // the claim's "1 GB" per layer
  EXPECT_EQ(kLayers * buffer_per_layer, 32 * std::pow(2.0, 30));     // and "32 GB" per step
  const double on_wire = kLayers * buffer_per_layer * 7 / 8;
  EXPECT_NEAR(evaluated.number("comm.ep.bytes_per_gpu_per_step"), on_wire, 1e-9 * on_wire);
  EXPECT_NEAR(on_wire / 1e9, 30.06, 0.01);
}

TEST(ExpertParallel, FullRecomputeRunsTheForwardPairAgain) {
  double plain = ep_bytes(mixtral_recipe(8, "degree = 8\n"));
  double full = ep_bytes(mixtral_recipe(8, "degree = 8\n", 32, "recompute = \"full\"\n"));
  EXPECT_NEAR(full / plain, 6.0 / 4.0, 1e-12);
  double selective = ep_bytes(mixtral_recipe(8, "degree = 8\n", 32, "recompute = \"selective\"\n"));
  EXPECT_NEAR(selective / plain, 1.0, 1e-12);
}

TEST(ExpertParallel, CapacityFactorSizesTheBuffers) {
  double base = ep_bytes(mixtral_recipe(8, "degree = 8\n"));
  // Padded to capacity: the buffers are capacity_factor x the mean, imbalance or not.
  EXPECT_NEAR(ep_bytes(mixtral_recipe(8, "degree = 8\ncapacity_factor = 1.25\nimbalance = 0.5\n")) / base, 1.25, 1e-12);
  // Unpadded: the busiest rank's tokens, capped by the capacity.
  EXPECT_NEAR(ep_bytes(mixtral_recipe(8, "degree = 8\ncapacity_factor = 1.25\npad_to_capacity = false\n"
                                         "imbalance = 0.2\n")) / base, 1.2, 1e-12);
  EXPECT_NEAR(ep_bytes(mixtral_recipe(8, "degree = 8\ncapacity_factor = 1.25\npad_to_capacity = false\n"
                                         "imbalance = 0.5\n")) / base, 1.25, 1e-12);
  // Dropless: everything the busiest rank is sent.
  EXPECT_NEAR(ep_bytes(mixtral_recipe(8, "degree = 8\ncapacity_factor = 0\nimbalance = 0.3\n")) / base, 1.3, 1e-12);
}

TEST(ExpertParallel, AllGatherDispatcherMovesExpertsOverTopKTimesTheBytes) {
  // Every rank gathers the group's tokens once (e x tokens x h x 2 buffer, (e-1)/e of it on the
  // wire) instead of sending top_k copies of its own: (e-1) / ((e-1)/e x top_k) = e / top_k = 4.
  test::Evaluated gathered = test::evaluate_recipe(mixtral_recipe(8, "degree = 8\ndispatcher = \"allgather\"\n"));
  EXPECT_NEAR(gathered.number("comm.ep.bytes_per_gpu_per_step") / ep_bytes(mixtral_recipe(8, "degree = 8\n")), 4.0,
              1e-12);
  EXPECT_EQ(find_op(gathered, "ep_dispatch", PP_PHASE_FORWARD).collective, PP_COLLECTIVE_ALL_GATHER);
  EXPECT_EQ(find_op(gathered, "ep_combine", PP_PHASE_FORWARD).collective, PP_COLLECTIVE_REDUCE_SCATTER);
  EXPECT_EQ(find_op(gathered, "ep_dispatch", PP_PHASE_BACKWARD).collective, PP_COLLECTIVE_REDUCE_SCATTER);
  EXPECT_EQ(find_op(gathered, "ep_combine", PP_PHASE_BACKWARD).collective, PP_COLLECTIVE_ALL_GATHER);
}

TEST(ExpertParallel, ImbalanceSlowsTheStepByTheExpertShare) {
  // Dropless, so the busiest rank computes and receives 1.2x the mean routed tokens.
  test::Evaluated even = test::evaluate_recipe(mixtral_recipe(8, "degree = 8\ncapacity_factor = 0\n"));
  test::Evaluated skewed = test::evaluate_recipe(mixtral_recipe(8, "degree = 8\ncapacity_factor = 0\nimbalance = 0.2\n"));

  // The expert work of one step by hand on an H100 SXM (hardware/h100_sxm.cc): GEMMs at
  // 989.4 TFLOP/s x 0.64 (a GEMM's fixed overhead does not grow with m, so it cancels in the
  // difference), the SwiGLU activation memory-bound at 3.35 TB/s x 0.85. Per layer and
  // micro-batch, m = 4096 x 2 routed tokens: 3 GEMMs of 2·m·f·h forward, twice that backward;
  // the activation reads and writes 3 x 2 x m x f bytes forward (times the routed path's passes),
  // twice that backward. Compute runs at the slowest of the 8 GPUs' pace: 1 + 0.005 x 1.4236
  // (the profile's speed variation times E[max of 8 standard normals]).
  const double m = kSeq * kTopK, steps = kLayers * 4, slowest = 1 + 0.005 * 1.42360;
  const double gemm_s = 3 * (3 * 2 * m * kExpertFfn * kHidden) / (989.4e12 * 0.64);
  const double activation_s = kPasses * 3 * (3 * 2 * m * kExpertFfn) / (3350e9 * 0.85);
  const double expert_compute_s = slowest * steps * (gemm_s + activation_s);
  EXPECT_NEAR(skewed.number("time.compute_s") - even.number("time.compute_s"), 0.2 * expert_compute_s,
              1e-6 * expert_compute_s);
  // The all-to-alls carry 0.2x more too: 4 per layer and micro-batch, 7/8 of the buffer over
  // NVLink at 450 GB/s x 0.80 (the latency term does not grow).
  const double all_to_all_s = steps * 4 * (7.0 / 8) * (m * kHidden * 2) / (450e9 * 0.80);
  EXPECT_NEAR(skewed.number("time.exposed_comm_s.ep") - even.number("time.exposed_comm_s.ep"), 0.2 * all_to_all_s,
              1e-6 * all_to_all_s);
  // Nothing else changes: the step grows by exactly those two.
  EXPECT_NEAR(skewed.number("time.step_s") - even.number("time.step_s"), 0.2 * (expert_compute_s + all_to_all_s),
              1e-6 * expert_compute_s);
  // With padded capacity buffers the pace is the capacity, not the skew: imbalance drops tokens.
  EXPECT_EQ(test::evaluate_recipe(mixtral_recipe(8, "degree = 8\nimbalance = 0.2\n")).number("time.step_s"),
            test::evaluate_recipe(mixtral_recipe(8, "degree = 8\n")).number("time.step_s"));
  // Skew is not model work: the model FLOPs stay, so MFU falls as the step slows down.
  EXPECT_EQ(skewed.number("throughput.model_flops_per_step"), even.number("throughput.model_flops_per_step"));
  EXPECT_NEAR(skewed.number("throughput.mfu") / even.number("throughput.mfu"),
              even.number("time.step_s") / skewed.number("time.step_s"), 1e-12);
  EXPECT_GT(skewed.number("throughput.hardware_tflops_per_gpu") * skewed.number("time.step_s"),
            even.number("throughput.hardware_tflops_per_gpu") * even.number("time.step_s"));
}

// A model's own expert passes (the clamped GLU's clamps, fc2's bias added per expert) are the
// experts' work: they follow the busiest rank's load as the GEMMs do, and the combine leaves
// after the bias is added (experts.py adds it inside the experts, before the tokens go back).
TEST(ExpertParallel, TheExpertsOwnPassesFollowTheirLoad) {
  auto recipe = [](const std::string& ep_keys) {
    return "[model]\npreset = \"mixtral-8x7b\"\nseq_len = 4096\nlinear_bias = true\nactivation_clamp = 7.0\n"
           "[training]\nglobal_batch = 32\nmicro_batch = 1\n[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 8\n"
           "[[strategy]]\nname = \"ep\"\n" + ep_keys + "[[strategy]]\nname = \"fsdp\"\n";
  };
  const test::Evaluated even = test::evaluate_recipe(recipe("degree = 8\ncapacity_factor = 0\n"));
  const test::Evaluated skewed = test::evaluate_recipe(recipe("degree = 8\ncapacity_factor = 0\nimbalance = 0.2\n"));
  for (const char* name : {PP_OP_EXPERT_CLAMP, PP_OP_EXPERT_BIAS}) {
    // 4096 tokens x top 2 copies on the mean rank; clamps 16 bytes per copy and f, bias 12 per copy and h.
    const double bytes = std::string(name) == PP_OP_EXPERT_CLAMP ? 16.0 * kSeq * kTopK * kExpertFfn : 12.0 * kSeq * kTopK * kHidden;
    EXPECT_DOUBLE_EQ(find_op(even, name, PP_PHASE_FORWARD).bytes, bytes) << name;
    EXPECT_DOUBLE_EQ(find_op(skewed, name, PP_PHASE_FORWARD).bytes, 1.2 * bytes) << name;
  }
  const auto ops = even.composed.plan->op_list();
  auto index_of = [&](const std::string& name) {
    for (size_t i = 0; i < ops.size(); ++i)
      if (name == ops[i].name && ops[i].phase == PP_PHASE_FORWARD) return i;
    return ops.size();
  };
  EXPECT_LT(index_of(PP_OP_EXPERT_BIAS), index_of(PP_OP_EP_COMBINE));
  EXPECT_LT(index_of(PP_OP_EP_DISPATCH), index_of(PP_OP_EXPERT_CLAMP));
}

TEST(ExpertParallel, SharedExpertsStayOnEveryRank) {
  // 8 routed experts over ep = 4 and one shared expert: each rank holds 2 + 1 experts; the shared
  // one is split off so data parallelism treats it as dense state.
  const std::string recipe =
      "[model]\nlayers = 2\nhidden = 1024\nheads = 8\nvocab = 1000\nseq_len = 512\nffn_type = \"swiglu\"\nffn_hidden = 512\n"
      "moe_experts = 8\nmoe_top_k = 2\nmoe_ffn_hidden = 512\nmoe_shared_experts = 1\n"
      "[training]\nglobal_batch = 4\nmicro_batch = 1\n[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 4\n"
      "[[strategy]]\nname = \"ep\"\ndegree = 4\n";
  test::Evaluated evaluated = test::evaluate_recipe(recipe);
  const double expert = 3 * 1024.0 * 512;
  double routed = 0, shared = 0;
  for (const pp_memory_item& item : evaluated.composed.plan->memory_items()) {
    if (std::string(item.name) == "weights.experts") routed = item.bytes;
    if (std::string(item.name) == "weights.shared_experts") shared = item.bytes;
  }
  EXPECT_DOUBLE_EQ(routed, 2 * 2 * expert);
  EXPECT_DOUBLE_EQ(shared, 2 * 1 * expert);
  // The shared expert's tokens stay home: it is a dense GEMM over the rank's 512 tokens (gate and
  // up in one, n = 2 x 512). The routed copies (512 x 2 per rank, 1/8 to each expert) travel: a
  // rank's 2 local experts each get 128 copies from each of the 4 ranks, one grouped GEMM of 2.
  const pp_op& shared_up = find_op(evaluated, "shared_expert_up", PP_PHASE_FORWARD);
  EXPECT_EQ(shared_up.m, 512);
  EXPECT_EQ(shared_up.n, 2 * 512);
  const pp_op& routed_up = find_op(evaluated, "expert_up", PP_PHASE_FORWARD);
  EXPECT_EQ(routed_up.m, 512 * 2 / 8 * 4);
  EXPECT_EQ(routed_up.count, 8 / 4);
  EXPECT_EQ(routed_up.n, 2 * 512);
  EXPECT_DOUBLE_EQ(routed_up.flops, 2.0 * (512 * 2 / 8 * 4) * (2 * 512) * 1024 * 2);
  EXPECT_EQ(find_op(evaluated, "ep_dispatch", PP_PHASE_FORWARD).bytes, 512 * 2 * 1024 * 2 * 1.0);
}

// One Mixtral MoE layer on one GPU, op by op as Megatron-Core's MoELayer runs it (router.py,
// token_dispatcher.py, experts.py TEGroupedMLP), each figure from the shapes above.
TEST(ExpertParallel, TheMoELayerOpByOp) {
  test::Evaluated one = test::evaluate_recipe(mixtral_recipe(1, "degree = 1\n", 1));
  const double copies = kSeq * kTopK;  // 8192 routed token copies per micro-batch
  EXPECT_EQ(find_op(one, "router", PP_PHASE_FORWARD).n, kExperts);
  // Scores: fp32 logits read and probabilities written per token and expert, the k chosen scores
  // (fp32) and their indices (int64) written per copy.
  EXPECT_DOUBLE_EQ(find_op(one, "router_topk", PP_PHASE_FORWARD).bytes, kPasses * (kSeq * kExperts * 8 + copies * 12));
  // Permute gathers each copy's bf16 row (read and write); unpermute reads the k outputs and the
  // scores and writes each token's row.
  EXPECT_DOUBLE_EQ(find_op(one, "moe_permute", PP_PHASE_FORWARD).bytes, kPasses * 2 * 2 * copies * kHidden);
  EXPECT_DOUBLE_EQ(find_op(one, "moe_unpermute", PP_PHASE_FORWARD).bytes,
                   kPasses * (2 * (copies + kSeq) * kHidden + 4 * copies));
  EXPECT_DOUBLE_EQ(find_op(one, "moe_permute", PP_PHASE_BACKWARD).bytes, kPasses * 2 * 2 * 2 * copies * kHidden);
  // A grouped GEMM: one GEMM per expert of 8192 / 8 = 1024 copies, fc1 holding gate and up.
  const pp_op& up = find_op(one, "expert_up", PP_PHASE_FORWARD);
  EXPECT_EQ(up.m, 1024);
  EXPECT_EQ(up.n, 2 * kExpertFfn);
  EXPECT_EQ(up.k, kHidden);
  EXPECT_EQ(up.count, kExperts);
  const pp_op& down = find_op(one, "expert_down", PP_PHASE_FORWARD);
  EXPECT_EQ(down.m * down.count, copies);
  EXPECT_EQ(down.n, kHidden);
  EXPECT_EQ(down.k, kExpertFfn);
  EXPECT_DOUBLE_EQ(find_op(one, "expert_down", PP_PHASE_BACKWARD).flops, 2 * 2.0 * copies * kHidden * kExpertFfn);
  // No separate gate GEMM, and no shared experts in Mixtral.
  for (const pp_op& op : one.composed.plan->op_list()) {
    EXPECT_NE(std::string(op.name), "expert_gate");
    EXPECT_NE(std::string(op.name), "shared_expert_up");
  }
  // The grouped GEMM's 8 GEMMs of 1024 rows cost more than one GEMM of 8192 rows would on the
  // same hardware (each pays its fixed cost), and ep = 8 turns them into one GEMM of 8192 rows
  // per rank: a rank's expert time falls by more than 8x.
  test::Evaluated eight = test::evaluate_recipe(mixtral_recipe(8, "degree = 8\n", 8));
  const pp_op& local = find_op(eight, "expert_up", PP_PHASE_FORWARD);
  EXPECT_EQ(local.m, 1024 * 8);
  EXPECT_EQ(local.count, 1);
  // With one local expert the all-to-all's chunks arrive in expert order: no sort pass.
  EXPECT_DOUBLE_EQ(find_op(eight, "moe_permute", PP_PHASE_FORWARD).bytes, kPasses * 2 * 2 * copies * kHidden);
}

// With several local experts, Megatron's all-to-all dispatcher sorts the received chunks by expert
// (sort_chunks_by_idxs) after the dispatch and back before the combine: one more pass each way
// over the copies the rank receives.
TEST(ExpertParallel, SeveralLocalExpertsSortTheirChunks) {
  test::Evaluated four = test::evaluate_recipe(mixtral_recipe(4, "degree = 4\n", 4));
  const double copies = kSeq * kTopK, received = copies;  // balanced: a rank receives what it sends
  EXPECT_DOUBLE_EQ(find_op(four, "moe_permute", PP_PHASE_FORWARD).bytes,
                   kPasses * (2 * 2 * copies * kHidden + 2 * 2 * received * kHidden));
  EXPECT_DOUBLE_EQ(find_op(four, "moe_unpermute", PP_PHASE_FORWARD).bytes,
                   kPasses * (2 * (copies + kSeq) * kHidden + 4 * copies + 2 * 2 * received * kHidden));
  EXPECT_EQ(find_op(four, "expert_up", PP_PHASE_FORWARD).count, 2);
  EXPECT_EQ(find_op(four, "expert_up", PP_PHASE_FORWARD).m, 1024 * 4);
  // The all-gather dispatcher gathers every token and masks: no sort.
  test::Evaluated gathered = test::evaluate_recipe(mixtral_recipe(4, "degree = 4\ndispatcher = \"allgather\"\n", 4));
  EXPECT_DOUBLE_EQ(find_op(gathered, "moe_permute", PP_PHASE_FORWARD).bytes, kPasses * 2 * 2 * copies * kHidden);
}

// DeepEP and HybridEP (Megatron's flex dispatcher) send a token once to each rank holding any of
// its experts. Mixtral on ep = 4: 2 experts per rank, top-2 of 8; a rank is missed by both
// choices with probability C(6, 2) / C(8, 2) = 15/28, so a token reaches 4 x 13/28 ranks on
// average against 2 copies for the all-to-all dispatcher. Neither the sort of received chunks
// nor anything else changes.
TEST(ExpertParallel, FlexDispatchSendsATokenOncePerRank) {
  const double tokens = kSeq, row = kHidden * 2;
  test::Evaluated alltoall = test::evaluate_recipe(mixtral_recipe(4, "degree = 4\n", 4));
  test::Evaluated flex = test::evaluate_recipe(mixtral_recipe(4, "degree = 4\ndispatcher = \"flex\"\n", 4));
  EXPECT_DOUBLE_EQ(find_op(alltoall, "ep_dispatch", PP_PHASE_FORWARD).bytes, tokens * kTopK * row);
  EXPECT_NEAR(find_op(flex, "ep_dispatch", PP_PHASE_FORWARD).bytes, tokens * 4 * 13.0 / 28 * row, 1e-6);
  EXPECT_NEAR(find_op(flex, "ep_combine", PP_PHASE_BACKWARD).bytes, tokens * 4 * 13.0 / 28 * row, 1e-6);
  EXPECT_DOUBLE_EQ(find_op(flex, "moe_permute", PP_PHASE_FORWARD).bytes, kPasses * 2 * 2 * tokens * kTopK * kHidden);
  // One expert per rank (ep = 8): a token's 2 experts are on 2 different ranks, 8 x (1 - 7/8 x 6/7).
  test::Evaluated one_each = test::evaluate_recipe(mixtral_recipe(8, "degree = 8\ndispatcher = \"flex\"\n", 8));
  EXPECT_NEAR(find_op(one_each, "ep_dispatch", PP_PHASE_FORWARD).bytes, tokens * 2 * row, 1e-6);
}

// Group-limited routing: Mixtral's 8 experts in 4 groups of 2, a token's 2 from 2 groups (one
// each, the group's best). On ep = 4 a rank holds one group, so a token reaches exactly 2 ranks
// (4 x 13/28 without the limit). The flex exchange says what it routes: its tokens, the bytes of
// one row, top_k (a routed exchange, plan.h); the all-to-all dispatcher's does not.
TEST(ExpertParallel, GroupLimitedRoutingReachesFewerRanks) {
  const double tokens = kSeq, row = kHidden * 2;
  const std::string groups = "moe_router_groups = 4\nmoe_router_group_topk = 2\n";
  auto recipe = [&](const std::string& ep_keys) {
    return "[model]\npreset = \"mixtral-8x7b\"\nseq_len = 4096\n" + groups +
           "[training]\nglobal_batch = 4\nmicro_batch = 1\n[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 4\n"
           "[[strategy]]\nname = \"ep\"\n" + ep_keys + "[[strategy]]\nname = \"fsdp\"\n";
  };
  test::Evaluated flex = test::evaluate_recipe(recipe("degree = 4\ndispatcher = \"flex\"\n"));
  const pp_op& dispatch = find_op(flex, "ep_dispatch", PP_PHASE_FORWARD);
  EXPECT_NEAR(dispatch.bytes, tokens * 2 * row, 1e-6);
  EXPECT_DOUBLE_EQ(dispatch.m, tokens);
  EXPECT_DOUBLE_EQ(dispatch.n, row);
  EXPECT_DOUBLE_EQ(dispatch.k, kTopK);
  test::Evaluated alltoall = test::evaluate_recipe(recipe("degree = 4\n"));
  const pp_op& plain = find_op(alltoall, "ep_dispatch", PP_PHASE_FORWARD);
  EXPECT_DOUBLE_EQ(plain.bytes, tokens * kTopK * row);
  EXPECT_DOUBLE_EQ(plain.k, 0.0);
}

// Batch-level overlap (Megatron-LM --overlap-moe-expert-parallel-comm): each all-to-all is split
// into a critical share x = 1/m + (1 - 1/m) x 20/132 and an overlappable rest. Mixtral, 8 GPUs,
// global batch 32, micro-batch 1: m = 32 / 8 = 4 micro-batches per rank.
TEST(ExpertParallel, OverlapLeavesTheUnpairedPassesAndTheSmShareExposed) {
  test::Evaluated plain = test::evaluate_recipe(mixtral_recipe(8, "degree = 8\n"));
  test::Evaluated hidden = test::evaluate_recipe(mixtral_recipe(8, "degree = 8\noverlap = true\n"));
  const double m = 4, x = 1 / m + (1 - 1 / m) * 20.0 / 132;
  const double buffer = kSeq * kTopK * kHidden * 2;
  int exposed = 0, overlapped = 0;
  for (const pp_op& op : hidden.composed.plan->op_list()) {
    if (std::string(op.name) != "ep_dispatch" || op.phase != PP_PHASE_FORWARD) continue;
    if (op.overlap == PP_OVERLAP_NONE) {
      EXPECT_NEAR(op.bytes, x * buffer, 1e-6);
      ++exposed;
    } else {
      EXPECT_NEAR(op.bytes, (1 - x) * buffer, 1e-6);
      ++overlapped;
    }
  }
  EXPECT_EQ(exposed, 1);
  EXPECT_EQ(overlapped, 1);
  // The bytes on the wire are the same. Every all-to-all's exposed time, on NVLink (NCCL's 8.4 us
  // kernel latency and 7 x 2 us of hops, 7/8 of the buffer at 450 GB/s x 0.80), keeps its latency
  // and x of its transfer; the rest hides behind the experts' compute.
  EXPECT_DOUBLE_EQ(hidden.number("comm.ep.bytes_per_gpu_per_step"), plain.number("comm.ep.bytes_per_gpu_per_step"));
  const double latency = 8.4e-6 + 7 * 2e-6, transfer = 7.0 / 8 * buffer / (450e9 * 0.80);
  EXPECT_NEAR(hidden.number("time.exposed_comm_s.ep") / plain.number("time.exposed_comm_s.ep"),
              (latency + x * transfer) / (latency + transfer), 1e-9);
}

// Experts split over tp = 2 under SP (etp = tp): Megatron-Core's all-to-all dispatcher gathers
// the two tensor-parallel ranks' received rows over tp after the dispatch and reduce-scatters
// the experts' outputs before the combine (token_dispatcher.py, dispatch_postprocess and
// combine_preprocess). Mixtral, micro-batch 1 of 4096 tokens: each rank dispatches its 2048,
// top 2, padded buffers (load 1); the gathered buffer is 2 x 2048 x 2 rows of 4096 x 2 bytes.
TEST(ExpertParallel, ExpertsSplitOverTpGatherTheirRowsOverTp) {
  const std::string tp_sp = "[[strategy]]\nname = \"tp\"\ndegree = 2\n[[strategy]]\nname = \"sp\"\nmode = \"megatron\"\n";
  test::Evaluated split = test::evaluate_recipe(mixtral_recipe(16, "degree = 8\n", 16) + tp_sp);
  const std::vector<pp_op> ops = split.composed.plan->op_list();
  auto position = [&](const std::string& name, pp_phase phase) {
    for (size_t i = 0; i < ops.size(); ++i)
      if (name == ops[i].name && ops[i].phase == phase) return static_cast<int64_t>(i);
    return int64_t{-1};
  };
  const double rows = 2 * 2048.0 * 2, bytes = rows * kHidden * 2;
  for (pp_phase phase : {PP_PHASE_FORWARD, PP_PHASE_BACKWARD}) {
    SCOPED_TRACE(phase);
    const pp_op& gather = find_op(split, "ep_tp_gather", phase);
    const pp_op& scatter = find_op(split, "ep_tp_scatter", phase);
    EXPECT_DOUBLE_EQ(gather.bytes, bytes);
    EXPECT_DOUBLE_EQ(scatter.bytes, bytes);
    EXPECT_EQ(gather.collective, phase == PP_PHASE_FORWARD ? PP_COLLECTIVE_ALL_GATHER : PP_COLLECTIVE_REDUCE_SCATTER);
    EXPECT_EQ(scatter.collective, phase == PP_PHASE_FORWARD ? PP_COLLECTIVE_REDUCE_SCATTER : PP_COLLECTIVE_ALL_GATHER);
    EXPECT_EQ(std::string(split.composed.plan->axes()[static_cast<size_t>(gather.axis)].name), "tp");
    // In the layer's order: dispatch, gather, experts, scatter, combine.
    EXPECT_LT(position("ep_dispatch", phase), position("ep_tp_gather", phase));
    EXPECT_LT(position("ep_tp_gather", phase), position("expert_up", phase));
    EXPECT_LT(position("expert_down", phase), position("ep_tp_scatter", phase));
    EXPECT_LT(position("ep_tp_scatter", phase), position("ep_combine", phase));
  }
  // Whole experts (etp = 1) and the flex dispatcher (one tp x ep group) gather nothing over tp.
  for (const char* keys : {"degree = 8\netp = 1\n", "degree = 8\ndispatcher = \"flex\"\n"}) {
    test::Evaluated other = test::evaluate_recipe(mixtral_recipe(16, keys, 16) + tp_sp);
    for (const pp_op& op : other.composed.plan->op_list()) EXPECT_NE(std::string(op.name), "ep_tp_gather") << keys;
  }
}

// The simulator runs an exchange's overlapped share on a stream of its own (it is another
// micro-batch's exchange), so the critical share does not queue behind it: the exposed time
// keeps at least the critical share x of the plain exchange and, with the rest hidden behind the
// layer's compute, well under the 0.68 it was when both shared one stream.
TEST(ExpertParallel, SimulatedOverlapHidesTheOverlappedShare) {
  const double plain = test::evaluate_recipe(mixtral_recipe(8, "degree = 8\n"), "simulate").number("time.exposed_comm_s.ep");
  const double hidden =
      test::evaluate_recipe(mixtral_recipe(8, "degree = 8\noverlap = true\n"), "simulate").number("time.exposed_comm_s.ep");
  const double m = 4, x = 1 / m + (1 - 1 / m) * 20.0 / 132;
  EXPECT_GT(hidden / plain, x);
  EXPECT_LT(hidden / plain, 0.6);
}

// Megatron-Core's TransformerConfig refuses the overlap with full
// recomputation, and with pp > 1 without virtual stages; DualPipe-V pairs a
// forward with a backward by construction.
TEST(ExpertParallel, OverlapNeedsASchedulePairingForwardAndBackward) {
  expect_error<PlanError>(
      [] { test::evaluate_recipe(mixtral_recipe(8, "degree = 8\noverlap = true\n", 32, "recompute = \"full\"\n")); },
      {"strategy[0] 'ep'", "cannot run with recompute = \"full\""});
  auto piped = [](const std::string &schedule) {
    return "[model]\npreset = \"mixtral-8x7b\"\nseq_len = "
           "4096\n[training]\nglobal_batch = 32\nmicro_batch = 1\n"
           "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = "
           "16\n[[strategy]]\nname = \"ep\"\ndegree = 8\n"
           "overlap = true\n[[strategy]]\nname = \"pp\"\ndegree = 2\n" +
           schedule;
  };
  for (const char *schedule : {"schedule = \"1f1b\"\n", "schedule = \"zero-bubble\"\n"})
    expect_error<PlanError>([&] { test::evaluate_recipe(piped(schedule)); },
                            {"strategy[1] 'pp'", "ep's overlap", "\"interleaved-1f1b\" or \"dualpipe-v\""});
  EXPECT_GT(test::evaluate_recipe(piped("schedule = \"interleaved-1f1b\"\nvirtual_stages = 2\n")).number("time.step_s"),
            0);
  EXPECT_GT(test::evaluate_recipe(piped("schedule = \"dualpipe-v\"\n")).number("time.step_s"), 0);
}

// Dropless routing with imbalance is an uneven exchange, and the plan says so (pp_op.count = the
// busiest rank's load, which an executor moving real bytes turns into per-peer counts); padded
// capacity buffers are even whatever the routing.
TEST(ExpertParallel, UnevenRoutingIsMarkedOnTheExchange) {
  test::Evaluated dropless = test::evaluate_recipe(mixtral_recipe(8, "degree = 8\ncapacity_factor = 0\nimbalance = 0.5\n"));
  test::Evaluated padded = test::evaluate_recipe(mixtral_recipe(8, "degree = 8\nimbalance = 0.5\n"));
  EXPECT_DOUBLE_EQ(find_op(dropless, "ep_dispatch", PP_PHASE_FORWARD).count, 1.5);
  EXPECT_DOUBLE_EQ(find_op(dropless, "ep_combine", PP_PHASE_BACKWARD).count, 1.5);
  EXPECT_DOUBLE_EQ(find_op(dropless, "ep_dispatch", PP_PHASE_FORWARD).bytes, kSeq * kTopK * kHidden * 2 * 1.5);
  EXPECT_DOUBLE_EQ(find_op(padded, "ep_dispatch", PP_PHASE_FORWARD).count, 1.0);
}

// Recomputing the MoE block (Megatron-LM --recompute-modules moe) re-runs its router and its
// dispatch and combine during backward: one more pair of all-to-alls per layer and micro-batch,
// as full recomputation has; recomputing only the activation (moe_act) re-runs no exchange.
TEST(ExpertParallel, ARecomputedMoEBlockDispatchesAgain) {
  auto exchanges = [](const std::string& training) {
    test::Evaluated run = test::evaluate_recipe(mixtral_recipe(8, "degree = 8\n", 32, training));
    size_t recomputed = 0, all = 0;
    for (const pp_op& op : run.composed.plan->op_list()) {
      if (std::string(op.name) != "ep_dispatch" && std::string(op.name) != "ep_combine") continue;
      ++all;
      if (op.phase == PP_PHASE_RECOMPUTE) ++recomputed;
    }
    return std::make_pair(all, recomputed);
  };
  EXPECT_EQ(exchanges(""), std::make_pair(size_t{4}, size_t{0}));
  EXPECT_EQ(exchanges("recompute = \"selective\"\nrecompute_modules = [\"moe\"]\n"), std::make_pair(size_t{6}, size_t{2}));
  EXPECT_EQ(exchanges("recompute = \"selective\"\nrecompute_modules = [\"moe_act\"]\n"), std::make_pair(size_t{4}, size_t{0}));
  EXPECT_EQ(exchanges("recompute = \"full\"\n"), std::make_pair(size_t{6}, size_t{2}));
}

// Megatron-LM's expert grid (etp x ep x edp) over the dense one (tp x cp x dp), on Mixtral with
// 8 GPUs, tp = 2 with sequence parallelism, dp = 4.
TEST(ExpertParallel, ExpertParallelismIsCarvedOutOfTensorContextAndDataParallelism) {
  const std::string tp_sp = "[[strategy]]\nname = \"tp\"\ndegree = 2\n[[strategy]]\nname = \"sp\"\nmode = \"megatron\"\n";
  auto axis = [](const test::Evaluated& run, const std::string& name) {
    for (const pp_mesh_axis& axis : run.composed.plan->axes())
      if (name == axis.name) return axis;
    throw std::runtime_error("no axis " + name);
  };
  // Experts split like attention (etp = tp = 2): EP out of dp's 4 ranks, stride 2 (after tp).
  test::Evaluated split = test::evaluate_recipe(mixtral_recipe(8, "degree = 4\n", 8) + tp_sp);
  EXPECT_STREQ(axis(split, "ep").parent, "dp");
  EXPECT_EQ(axis(split, "ep").stride, 2);
  EXPECT_EQ(axis(split, "edp").degree, 1);
  // Whole experts (etp = 1): EP out of tp x dp, 8 ranks, stride 1: ep = 8 now fits.
  test::Evaluated whole = test::evaluate_recipe(mixtral_recipe(8, "degree = 8\netp = 1\n", 8) + tp_sp);
  EXPECT_STREQ(axis(whole, "ep").parent, "tp*dp");
  EXPECT_EQ(axis(whole, "ep").stride, 1);
  EXPECT_EQ(axis(whole, "ep").degree, 8);
  EXPECT_EQ(axis(whole, "edp").degree, 1);
  // Each rank routes its own 4096 / 2 tokens: the dispatch carries 2048 x top-2 rows of h; its
  // one local expert gets 2048 x 2 / 8 copies from each of the 8 ranks and runs them through
  // the whole expert (n = 2 x 14336, not split by tp); its weights are whole too.
  EXPECT_DOUBLE_EQ(find_op(whole, "ep_dispatch", PP_PHASE_FORWARD).bytes, 2048 * kTopK * kHidden * 2);
  EXPECT_EQ(find_op(whole, "router", PP_PHASE_FORWARD).m, 2048);  // it scores only its own tokens
  EXPECT_DOUBLE_EQ(find_op(whole, "router_aux_loss", PP_PHASE_FORWARD).bytes, kPasses * 2048 * kExperts * 4 * 2);
  const pp_op& up = find_op(whole, "expert_up", PP_PHASE_FORWARD);
  EXPECT_EQ(up.m, 2048 * 2 / 8 * 8);
  EXPECT_EQ(up.n, 2 * kExpertFfn);
  EXPECT_EQ(up.count, 1);
  EXPECT_EQ(find_op(whole, "expert_down", PP_PHASE_FORWARD).k, kExpertFfn);
  double routed = 0;
  for (const pp_memory_item& item : whole.composed.plan->memory_items())
    if (std::string(item.name) == "weights.experts") routed = item.bytes;
  EXPECT_DOUBLE_EQ(routed, 2 * kExpertParameters / kLayers / 8);  // per layer: one whole expert's 3 h x f
  // The same expert FLOPs per rank either way: 4096 copies through whole experts (etp = 1)
  // against all 8192 copies through half of each (etp = tp = 2), 2 x 4096 x 2f x h.
  const pp_op& split_up = find_op(split, "expert_up", PP_PHASE_FORWARD);
  EXPECT_DOUBLE_EQ(up.flops, split_up.flops);
  EXPECT_DOUBLE_EQ(up.flops, 2.0 * 4096 * 2 * kExpertFfn * kHidden);
  // With context parallelism EP takes cp's ranks too: cp = 2, dp = 4 on 8 GPUs, ep = 8.
  test::Evaluated ring = test::evaluate_recipe(mixtral_recipe(8, "degree = 8\n", 8) +
                                               "[[strategy]]\nname = \"sp\"\ndegree = 2\nmode = \"ring\"\n");
  EXPECT_STREQ(axis(ring, "ep").parent, "cp*dp");
  EXPECT_EQ(axis(ring, "ep").stride, 1);
}

TEST(ExpertParallel, RouterAuxiliaryLossIsAMemoryPass) {
  test::Evaluated evaluated = test::evaluate_recipe(mixtral_recipe(8, "degree = 8\n"));
  const pp_op& forward = find_op(evaluated, "router_aux_loss", PP_PHASE_FORWARD);
  EXPECT_EQ(forward.kind, PP_OP_MEMORY);
  EXPECT_DOUBLE_EQ(forward.bytes, kPasses * kSeq * kExperts * 4 * 2);
  EXPECT_EQ(find_op(evaluated, "router_aux_loss", PP_PHASE_BACKWARD).bytes, 2 * forward.bytes);
}

TEST(ExpertParallel, RefusesADenseModel) {
  expect_error<PlanError>(
      [] {
        test::evaluate_recipe(
            "[model]\npreset = \"llama2-7b\"\n[training]\nglobal_batch = 8\n[cluster]\nhardware = \"h100-sxm\"\n"
            "num_gpus = 8\n[[strategy]]\nname = \"ep\"\ndegree = 2\n");
      },
      {"strategy[0] 'ep'", "mixture-of-experts", "'llama2-7b' is dense"});
}

TEST(ExpertParallel, DegreeMustDivideTheExperts) {
  expect_error<PlanError>([] { test::evaluate_recipe(mixtral_recipe(6, "degree = 3\n", 6)); },
                          {"ep = 3 must divide moe_experts = 8"});
}

TEST(ExpertParallel, DegreeMustDivideTheRanksItIsCarvedOutOf) {
  // 8 GPUs, tp = 4 with the experts split like attention (etp = tp): data parallelism has 2
  // ranks, which 8-way expert parallelism cannot divide.
  const std::string recipe = mixtral_recipe(8, "degree = 8\n", 8) + "[[strategy]]\nname = \"tp\"\ndegree = 4\n";
  expect_error<PlanError>([&] { test::evaluate_recipe(recipe); },
                          {"ep = 8 must divide the 2 ranks it is carved out of (dp, etp = 4)"});
  // Whole experts (etp = 1) need sequence parallelism, then EP spans tp x dp: 8 ranks.
  expect_error<PlanError>([&] { test::evaluate_recipe(mixtral_recipe(8, "degree = 8\netp = 1\n", 8) +
                                                      "[[strategy]]\nname = \"tp\"\ndegree = 4\n"); },
                          {"etp = 1 with tp = 4 needs sequence parallelism"});
  expect_error<PlanError>([&] { test::evaluate_recipe(mixtral_recipe(8, "degree = 8\netp = 2\n", 8) +
                                                      "[[strategy]]\nname = \"tp\"\ndegree = 4\n"); },
                          {"etp = 2 must be 1 or tp's degree 4"});
  // A degree above the GPU count is refused before any strategy sees it.
  expect_error<PlanError>([] { test::evaluate_recipe(mixtral_recipe(2, "degree = 4\n", 2)); },
                          {"strategy[0] 'ep': degree 4 exceeds cluster.num_gpus = 2"});
}

}  // namespace
}  // namespace paraplan::host
