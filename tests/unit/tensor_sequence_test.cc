// Tensor, sequence and context parallelism against Korthikanti et al. 2022 (activation memory,
// eq. 2-4 and Table 2) and the Megatron-LM communication pattern, derived by hand here.
#include <algorithm>
#include <cmath>
#include <string_view>

#include "test_support.h"

namespace paraplan::host {
namespace {

using test::expect_error;

// A GPT with a 4h GELU MLP, the shape Korthikanti's formulas assume (GPT-3 175B's widths).
const double s = 2048, b = 1, h = 12288, a = 96;

std::string gpt_recipe(int gpus, const std::string& strategies, const std::string& training_extra = "") {
  return "[model]\nlayers = 8\nhidden = 12288\nheads = 96\nvocab = 51200\nseq_len = 2048\n"
         "[training]\nglobal_batch = 1\nmicro_batch = 1\nflash_attention = false\n" +  // one micro-batch

         training_extra + "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = " + std::to_string(gpus) + "\n" + strategies;
}

const std::string kTp8 = "[[strategy]]\nname = \"tp\"\ndegree = 8\n";
const std::string kSp = "[[strategy]]\nname = \"sp\"\nmode = \"megatron\"\n";

double layer_activations(const test::Evaluated& evaluated) {
  double bytes = 0;
  for (const pp_memory_item& item : evaluated.composed.plan->memory_items())
    if (item.kind == PP_MEMORY_ACTIVATIONS && item.scope == PP_SCOPE_LAYER) bytes += item.bytes;
  return bytes;
}

TEST(TensorParallel, ActivationsFollowKorthikantiEquation2) {
  const double t = 8;
  auto evaluated = test::evaluate_recipe(gpt_recipe(8, kTp8));
  EXPECT_NEAR(layer_activations(evaluated), s * b * h * (10 + 24 / t + 5 * a * s / (h * t)), 1.0);
}

TEST(TensorParallel, WithSequenceParallelismEverythingDivides) {
  const double t = 8;
  auto evaluated = test::evaluate_recipe(gpt_recipe(8, kTp8 + kSp));
  EXPECT_NEAR(layer_activations(evaluated), s * b * h / t * (34 + 5 * a * s / h), 1.0);  // eq. 3
  auto selective = test::evaluate_recipe(gpt_recipe(8, kTp8 + kSp, "recompute = \"selective\"\n"));
  EXPECT_NEAR(layer_activations(selective), 34 * s * b * h / t, 1.0);  // eq. 4
  auto full = test::evaluate_recipe(gpt_recipe(8, kTp8 + kSp, "recompute = \"full\"\n"));
  EXPECT_NEAR(layer_activations(full), 2 * s * b * h / t, 1.0);  // only the layer input
}

TEST(TensorParallel, DividesComputeAndModelState) {
  auto single = test::evaluate_recipe(gpt_recipe(1, ""));
  auto split = test::evaluate_recipe(gpt_recipe(8, kTp8));
  // Each of the 8 ranks does 1/8 of the work: the model FLOPs per step are unchanged.
  EXPECT_NEAR(split.number("throughput.model_flops_per_step") / single.number("throughput.model_flops_per_step"), 1.0,
              1e-9);
  double single_state = single.number("memory.parameters_bytes") + single.number("memory.optimizer_bytes");
  double split_state = split.number("memory.parameters_bytes") + split.number("memory.optimizer_bytes");
  EXPECT_NEAR(split_state / single_state, 1.0 / 8, 1e-9);
}

// The passes a model's features add split with the tensors they touch: the rotary embedding of
// this rank's query and key heads, a clamped GLU's clamps of its f/t columns.
TEST(TensorParallel, DividesTheModelsOwnPasses) {
  const std::string model = "[model]\nlayers = 2\nhidden = 4096\nheads = 32\nkv_heads = 8\nffn_type = \"swiglu\"\n"
                            "ffn_hidden = 14336\nvocab = 32000\nseq_len = 2048\nposition_embedding = \"yarn\"\n"
                            "activation_clamp = 7.0\n[training]\nglobal_batch = 1\nmicro_batch = 1\n"
                            "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = ";
  auto bytes = [](const test::Evaluated& evaluated, const char* name) {
    for (const pp_op& op : evaluated.composed.plan->op_list())
      if (name == std::string_view(op.name) && op.phase == PP_PHASE_FORWARD) return op.bytes;
    return 0.0;
  };
  const test::Evaluated single = test::evaluate_recipe(model + "1\n");
  const test::Evaluated split = test::evaluate_recipe(model + "8\n" + kTp8);
  for (const char* name : {PP_OP_ROTARY, PP_OP_MLP_CLAMP}) {
    EXPECT_GT(bytes(single, name), 0) << name;
    EXPECT_DOUBLE_EQ(bytes(split, name), bytes(single, name) / 8) << name;
  }
}

TEST(TensorParallel, FourAllReducesPerLayerOfTheLayerActivation) {
  // One micro-batch: per layer 2 forward + 2 backward all-reduces of s·b·h·2 bytes, plus the
  // embedding's forward and the logits' backward all-reduce; ring all-reduce sends 2(t-1)/t·n.
  const double t = 8, layers = 8, n = s * b * h * 2;
  auto evaluated = test::evaluate_recipe(gpt_recipe(8, kTp8));
  EXPECT_NEAR(evaluated.number("comm.tp.bytes_per_gpu_per_step"), (4 * layers + 2) * 2 * (t - 1) / t * n, 1.0);
  // Sequence parallelism swaps each all-reduce for a reduce-scatter and an all-gather: same bytes.
  auto with_sp = test::evaluate_recipe(gpt_recipe(8, kTp8 + kSp));
  EXPECT_NEAR(with_sp.number("comm.tp.bytes_per_gpu_per_step"), evaluated.number("comm.tp.bytes_per_gpu_per_step"), 1.0);
  // Full recompute runs the forward all-reduces again.
  auto recomputed = test::evaluate_recipe(gpt_recipe(8, kTp8, "recompute = \"full\"\n"));
  EXPECT_NEAR(recomputed.number("comm.tp.bytes_per_gpu_per_step"), (6 * layers + 2) * 2 * (t - 1) / t * n, 1.0);
}

// A scope's ops of one phase in execution order (plan.h: list order, backward reversed): GEMMs by
// name, tensor-parallel collectives as AR, AG or RS; memory-bound ops left out.
std::vector<std::string> sequence(const test::Evaluated& evaluated, pp_phase phase, pp_scope scope = PP_SCOPE_LAYER) {
  std::vector<std::string> names;
  for (const pp_op& op : evaluated.composed.plan->op_list()) {
    if (op.scope != scope || op.phase != phase || (op.kind == PP_OP_MEMORY && std::string_view(op.name) != "embedding"))
      continue;
    std::string name = op.name;
    if (op.kind == PP_OP_COLLECTIVE)
      name = op.collective == PP_COLLECTIVE_ALL_REDUCE ? "AR" : op.collective == PP_COLLECTIVE_ALL_GATHER ? "AG" : "RS";
    names.push_back(name);
  }
  if (phase == PP_PHASE_BACKWARD) std::reverse(names.begin(), names.end());
  return names;
}

// Megatron-LM's f and g operators (Shoeybi et al. 2019, Fig. 3): forward, an all-reduce after each
// row-parallel GEMM; backward, one after each block's column-parallel GEMMs. With sequence
// parallelism (Korthikanti et al. 2022, Fig. 5) the forward all-gather precedes the column-parallel
// GEMM and the reduce-scatter follows the row-parallel one; backward the conjugates swap places.
// The vocabulary-parallel ends: the embedding's partial sums are all-reduced (with SP scattered)
// forward and its gradient gathered backward; the output layer's input is gathered forward and
// its gradient reduced (scattered) backward.
TEST(TensorParallel, CollectivesSitWhereTheyRun) {
  auto tp = test::evaluate_recipe(gpt_recipe(8, kTp8));
  EXPECT_EQ(sequence(tp, PP_PHASE_FORWARD),
            (std::vector<std::string>{"qkv", "attention_scores", "attention_context", "attn_out", "AR", "mlp_up",
                                      "mlp_down", "AR"}));
  EXPECT_EQ(sequence(tp, PP_PHASE_BACKWARD),
            (std::vector<std::string>{"mlp_down", "mlp_up", "AR", "attn_out", "attention_context", "attention_scores",
                                      "qkv", "AR"}));
  auto sp = test::evaluate_recipe(gpt_recipe(8, kTp8 + kSp));
  EXPECT_EQ(sequence(sp, PP_PHASE_FORWARD),
            (std::vector<std::string>{"AG", "qkv", "attention_scores", "attention_context", "attn_out", "RS", "AG",
                                      "mlp_up", "mlp_down", "RS"}));
  EXPECT_EQ(sequence(sp, PP_PHASE_BACKWARD),
            (std::vector<std::string>{"AG", "mlp_down", "mlp_up", "RS", "AG", "attn_out", "attention_context",
                                      "attention_scores", "qkv", "RS"}));
  EXPECT_EQ(sequence(tp, PP_PHASE_FORWARD, PP_SCOPE_EMBEDDING), (std::vector<std::string>{"embedding", "AR"}));
  EXPECT_EQ(sequence(tp, PP_PHASE_BACKWARD, PP_SCOPE_HEAD), (std::vector<std::string>{"logits", "AR"}));
  EXPECT_EQ(sequence(sp, PP_PHASE_FORWARD, PP_SCOPE_EMBEDDING), (std::vector<std::string>{"embedding", "RS"}));
  EXPECT_EQ(sequence(sp, PP_PHASE_BACKWARD, PP_SCOPE_EMBEDDING), (std::vector<std::string>{"AG", "embedding"}));
  EXPECT_EQ(sequence(sp, PP_PHASE_FORWARD, PP_SCOPE_HEAD), (std::vector<std::string>{"AG", "logits"}));
  EXPECT_EQ(sequence(sp, PP_PHASE_BACKWARD, PP_SCOPE_HEAD), (std::vector<std::string>{"logits", "RS"}));
}

TEST(TensorParallel, CollectivesAreExposedUnlessOverlapped) {
  auto exposed = test::evaluate_recipe(gpt_recipe(8, kTp8));
  auto hidden = test::evaluate_recipe(gpt_recipe(8, "[[strategy]]\nname = \"tp\"\ndegree = 8\noverlap = true\n"));
  EXPECT_GT(exposed.number("time.exposed_comm_s.tp"), 0.0);
  EXPECT_LT(hidden.number("time.exposed_comm_s.tp"), exposed.number("time.exposed_comm_s.tp"));
  EXPECT_LT(hidden.number("time.step_s"), exposed.number("time.step_s"));
}

// Megatron-LM's --tp-comm-overlap with sequence parallelism runs as Transformer Engine's
// userbuffers do by default (transformer_engine/pytorch/module/base.py, initialize_ub): forward,
// qkv and fc1 are ring exchanges (the GEMM in t chunks as the shards arrive, nothing exposed),
// proj and fc2 are "pipeline" reduce-scatters with 4 splits (the GEMM in 4 chunks, the last
// chunk's quarter of the reduction exposed); backward all hidden, the GEMMs whole.
TEST(TensorParallel, OverlapWithSequenceParallelismRunsAsUserbuffersDo) {
  const double t = 8, rows = s * b;
  auto plain = test::evaluate_recipe(gpt_recipe(8, kTp8 + kSp));
  auto overlapped =
      test::evaluate_recipe(gpt_recipe(8, "[[strategy]]\nname = \"tp\"\ndegree = 8\noverlap = true\n" + kSp));
  auto find = [](const test::Evaluated& evaluated, std::string_view name, pp_phase phase) {
    std::vector<pp_op> found;
    for (const pp_op& op : evaluated.composed.plan->op_list())
      if (op.scope == PP_SCOPE_LAYER && op.phase == phase && name == op.name) found.push_back(op);
    return found;
  };
  const std::vector<std::pair<std::string_view, double>> chunks = {{"qkv", t}, {"mlp_up", t}, {"attn_out", 4}, {"mlp_down", 4}};
  for (const auto& [name, pieces] : chunks) {
    const std::vector<pp_op> forward = find(overlapped, name, PP_PHASE_FORWARD);
    ASSERT_EQ(forward.size(), 1u) << name;
    EXPECT_DOUBLE_EQ(forward[0].m, rows / pieces) << name;
    EXPECT_DOUBLE_EQ(forward[0].count, pieces) << name;
    EXPECT_DOUBLE_EQ(forward[0].flops, find(plain, name, PP_PHASE_FORWARD)[0].flops) << name;  // the same work
    const std::vector<pp_op> backward = find(overlapped, name, PP_PHASE_BACKWARD);
    ASSERT_EQ(backward.size(), 1u) << name;
    EXPECT_DOUBLE_EQ(backward[0].m, rows) << name;
  }
  // Forward: after each row-parallel GEMM a reduce-scatter of s·b·h·2 bytes, 3/4 beside compute
  // and the last quarter on the critical path; the all-gathers and every backward collective hidden.
  const double n = s * b * h * 2;
  EXPECT_EQ(sequence(overlapped, PP_PHASE_FORWARD),
            (std::vector<std::string>{"AG", "qkv", "attention_scores", "attention_context", "attn_out", "RS", "RS", "AG",
                                      "mlp_up", "mlp_down", "RS", "RS"}));
  std::vector<std::pair<double, pp_overlap>> reductions;
  for (const pp_op& op : find(overlapped, "tp_reduce_scatter", PP_PHASE_FORWARD)) reductions.push_back({op.bytes, op.overlap});
  const std::vector<std::pair<double, pp_overlap>> expected = {
      {0.75 * n, PP_OVERLAP_COMPUTE}, {0.25 * n, PP_OVERLAP_NONE}, {0.75 * n, PP_OVERLAP_COMPUTE}, {0.25 * n, PP_OVERLAP_NONE}};
  EXPECT_EQ(reductions, expected);
  for (const pp_op& op : overlapped.composed.plan->op_list()) {
    if (op.kind == PP_OP_COLLECTIVE && op.scope == PP_SCOPE_LAYER && op.phase == PP_PHASE_BACKWARD) {
      EXPECT_EQ(op.overlap, PP_OVERLAP_COMPUTE) << op.name;
    }
  }
  // Same bytes on the wire; a little exposed, and the chunked GEMMs run below the whole ones' rate.
  EXPECT_NEAR(overlapped.number("comm.tp.bytes_per_gpu_per_step"), plain.number("comm.tp.bytes_per_gpu_per_step"), 1.0);
  EXPECT_GT(overlapped.number("time.exposed_comm_s.tp"), 0.0);
  EXPECT_LT(overlapped.number("time.exposed_comm_s.tp"), 0.25 * plain.number("time.exposed_comm_s.tp"));
  EXPECT_GT(overlapped.number("time.compute_s"), plain.number("time.compute_s"));
}

// PyTorch's async TP (torchtitan's enable_async_tensor_parallel) decomposes an all-gather along
// the rows of the matmul reading it, and a reduce-scatter after one; not one gathered along the
// reduction dimension, as the backward pass's are where they feed the weight gradient (first
// proposed in pytorch/pytorch#163068, September 2025). overlap_method = "micro_pipeline": the
// forward and recomputed forward passes as userbuffers run them, every backward collective on the
// critical path (the measured end-to-end gains, 8-10 %, are what the forward alone gives).
TEST(TensorParallel, MicroPipelinedOverlapHidesTheForwardPassesOnly) {
  const std::string tp = "[[strategy]]\nname = \"tp\"\ndegree = 8\noverlap = true\n";
  const std::string full = "recompute = \"full\"\n";
  auto plain = test::evaluate_recipe(gpt_recipe(8, kTp8 + kSp, full));
  auto userbuffers = test::evaluate_recipe(gpt_recipe(8, tp + kSp, full));
  auto micro = test::evaluate_recipe(gpt_recipe(8, tp + "overlap_method = \"micro_pipeline\"\n" + kSp, full));
  size_t forward = 0, recomputed = 0, backward = 0;
  const std::vector<pp_op> ub_ops = userbuffers.composed.plan->op_list(), micro_ops = micro.composed.plan->op_list();
  ASSERT_EQ(ub_ops.size(), micro_ops.size());
  for (size_t i = 0; i < micro_ops.size(); ++i) {
    const pp_op& op = micro_ops[i];
    EXPECT_STREQ(op.name, ub_ops[i].name);  // the same ops, the forward's GEMMs in the same chunks
    EXPECT_DOUBLE_EQ(op.m, ub_ops[i].m) << op.name;
    const std::string_view owner = op.owner;
    // The layers' collectives (the vocabulary-parallel ends pair their halves across phases).
    if (op.kind != PP_OP_COLLECTIVE || op.scope != PP_SCOPE_LAYER || (owner != PP_STRATEGY_TP && owner != PP_STRATEGY_SP))
      continue;
    if (op.phase == PP_PHASE_BACKWARD) {
      EXPECT_EQ(op.overlap, PP_OVERLAP_NONE) << op.name;
      ++backward;
    } else {
      EXPECT_EQ(op.overlap, ub_ops[i].overlap) << op.name;
      ++(op.phase == PP_PHASE_RECOMPUTE ? recomputed : forward);
    }
  }
  EXPECT_GT(forward, 0u);
  EXPECT_GT(recomputed, 0u);
  EXPECT_GT(backward, 0u);
  // Exposed: more than userbuffers leave, less than nothing hidden; the bytes are the same.
  EXPECT_GT(micro.number("time.exposed_comm_s.tp"), userbuffers.number("time.exposed_comm_s.tp"));
  EXPECT_LT(micro.number("time.exposed_comm_s.tp"), plain.number("time.exposed_comm_s.tp"));
  EXPECT_NEAR(micro.number("comm.tp.bytes_per_gpu_per_step"), plain.number("comm.tp.bytes_per_gpu_per_step"), 1.0);
  // The method without overlap says nothing: refused, naming both keys.
  expect_error<PlanError>(
      [&] { test::evaluate_recipe(gpt_recipe(8, kTp8 + "overlap_method = \"micro_pipeline\"\n" + kSp)); },
      {"strategy[0] 'tp'", "overlap_method = \"micro_pipeline\" says how overlap runs, but overlap = false"});
}

TEST(TensorParallel, EachRankUpdatesItsShareOfTheWeights) {
  // Adam reads and writes 30 bytes per parameter (workload_builder.cc); with tp = 8 a rank
  // updates 1/8 of them, memory-bound at 3.35 TB/s x 0.85 on an H100. The 8-layer GPT holds
  // 12h² + 2h per layer, V·h of embedding and V·h + h of output layer and final norm. It runs at
  // the slowest of the 8 GPUs' pace: 1 + 0.005 x 1.4236 (speed variation x E[max of 8 normals]).
  const double V = 51200, parameters = 8 * (12 * h * h + 2 * h) + 2 * V * h + h, slowest = 1 + 0.005 * 1.42360;
  auto evaluated = test::evaluate_recipe(gpt_recipe(8, kTp8));
  EXPECT_NEAR(evaluated.number("time.optimizer_s"), slowest * 30 * parameters / 8 / (3350e9 * 0.85), 1e-8);
}

TEST(TensorParallel, DegreeMustDivideHeadsAndQueryGroups) {
  // Llama 2 70B has 8 KV heads (query groups): tp = 16 cannot split them.
  std::string recipe =
      "[model]\npreset = \"llama2-70b\"\n[training]\nglobal_batch = 16\n[cluster]\nhardware = \"h100-sxm\"\n"
      "num_gpus = 16\n[[strategy]]\nname = \"tp\"\ndegree = 16\n";
  expect_error<PlanError>([&] { test::evaluate_recipe(recipe); },
                          {"strategy[0] 'tp'", "tp = 16 must divide the KV heads (query groups) = 8"});
}

TEST(SequenceParallel, MegatronModeNeedsTensorParallelismAndNoDegree) {
  expect_error<PlanError>([] { test::evaluate_recipe(gpt_recipe(1, kSp)); }, {"needs tensor parallelism"});
  const std::string tp4 = "[[strategy]]\nname = \"tp\"\ndegree = 4\n";
  expect_error<PlanError>([&] { test::evaluate_recipe(gpt_recipe(8, tp4 + "[[strategy]]\nname = \"sp\"\ndegree = 2\n")); },
                          {"takes no degree (got 2)"});
}

TEST(ContextParallel, RingDividesTokensAndPassesKvAround) {
  const double c = 4;
  auto single = test::evaluate_recipe(gpt_recipe(1, ""));
  auto ring = test::evaluate_recipe(gpt_recipe(4, "[[strategy]]\nname = \"sp\"\nmode = \"ring\"\ndegree = 4\n"));
  EXPECT_NEAR(layer_activations(ring), layer_activations(single) / c, 1.0);
  // K and V chunks (s/c tokens × 2h × 2 bytes) go round the ring c-1 times forward; backward
  // passes K, V and their gradients: 3 × the forward volume per layer, over 8 layers.
  const double kv_chunk = s / c * b * 2 * h * 2;
  EXPECT_NEAR(ring.number("comm.sp.bytes_per_gpu_per_step"), 8 * 3 * (c - 1) * kv_chunk, 1.0);
}

TEST(ContextParallel, UlyssesAllToAllVolumes) {
  const double c = 4;
  auto ulysses = test::evaluate_recipe(gpt_recipe(4, "[[strategy]]\nname = \"sp\"\nmode = \"ulysses\"\ndegree = 4\n"));
  // Per pass: Q, K, V in (s/c × 3h × 2 bytes) and the output back (s/c × h × 2); an all-to-all
  // sends (c-1)/c of its buffer. Forward and backward, 8 layers.
  const double per_pass = (s / c * 3 * h * 2 + s / c * h * 2) * (c - 1) / c;
  EXPECT_NEAR(ulysses.number("comm.sp.bytes_per_gpu_per_step"), 8 * 2 * per_pass, 1.0);
}

TEST(ContextParallel, RingWithMegatronSpAlsoShardsTheReplicatedRegions) {
  // tp = 2 and ring cp = 2: every activation divides by c; with megatron_sp the regions TP
  // leaves replicated (act.seq.*) divide by t too, so the whole layer divides by t·c = 4, and the
  // tp all-reduces become reduce-scatter + all-gather (the same bytes).
  const std::string tp2 = "[[strategy]]\nname = \"tp\"\ndegree = 2\n";
  const std::string ring = "[[strategy]]\nname = \"sp\"\nmode = \"ring\"\ndegree = 2\n";
  auto single = test::evaluate_recipe(gpt_recipe(1, ""));
  auto both = test::evaluate_recipe(gpt_recipe(4, tp2 + ring + "megatron_sp = true\n"));
  EXPECT_NEAR(layer_activations(both), layer_activations(single) / 4, 1.0);
  auto ring_only = test::evaluate_recipe(gpt_recipe(4, tp2 + ring));
  EXPECT_GT(layer_activations(ring_only), layer_activations(both));
  EXPECT_NEAR(both.number("comm.tp.bytes_per_gpu_per_step"), ring_only.number("comm.tp.bytes_per_gpu_per_step"), 1.0);
  expect_error<PlanError>([&] { test::evaluate_recipe(gpt_recipe(8, kTp8 + kSp + "megatron_sp = true\n")); },
                          {"mode \"megatron\" is Megatron SP already"});
}

TEST(ContextParallel, RingNeedsTwoChunksPerRank) {
  std::string recipe = gpt_recipe(8, "[[strategy]]\nname = \"sp\"\nmode = \"ring\"\ndegree = 8\n");
  recipe.replace(recipe.find("seq_len = 2048"), 14, "seq_len = 1000");
  expect_error<PlanError>([&] { test::evaluate_recipe(recipe); }, {"2 x cp = 16 must divide seq_len = 1000"});
}

}  // namespace
}  // namespace paraplan::host
