// The unsharded workload against independent values: published parameter counts, Korthikanti
// et al.'s activation formula and Megatron-LM's model-FLOPs formula, each computed here by hand.
#include "host/plan/workload_builder.h"

#include "host/recipe/recipe_reader.h"
#include "paraplan/moe_kernels.hpp"

#include <cmath>
#include <string>
#include <tuple>

#include "test_support.h"

namespace paraplan::host {
namespace {

pp_model gpt(int64_t layers, int64_t hidden, int64_t heads, int64_t vocab, int64_t seq) {
  pp_model model{};
  model.struct_size = sizeof(model);
  model.name = "gpt";
  model.layers = layers, model.hidden = hidden, model.heads = heads, model.kv_heads = heads;
  model.head_dim = hidden / heads, model.ffn_hidden = 4 * hidden, model.ffn_type = PP_FFN_GELU;
  model.vocab = vocab, model.seq_len = seq;
  return model;
}

pp_training training(int64_t micro_batch, pp_recompute recompute) {
  return pp_training{sizeof(pp_training), micro_batch, micro_batch, PP_PRECISION_BF16, recompute, PP_OPTIMIZER_ADAM, 0, 0, PP_MASTER_WEIGHTS_SEPARATE, PP_ATTENTION_KERNEL_TUNED, 0, 0, PP_ELEMENTWISE_FUSED, 0, 0};
}

double layer_activation_bytes(const Plan& plan) {
  double bytes = 0;
  for (const pp_memory_item& item : plan.memory_items())
    if (item.kind == PP_MEMORY_ACTIVATIONS && item.scope == PP_SCOPE_LAYER) bytes += item.bytes;
  return bytes;
}

struct Built {
  std::unique_ptr<Plan> plan;
};

std::unique_ptr<Plan> build(const pp_model& model, const pp_training& settings, bool flash) {
  pp_cluster cluster{sizeof(pp_cluster), 1, 8};
  auto plan = std::make_unique<Plan>(model, settings, cluster, 1);
  build_workload(*plan, WorkloadOptions{flash});
  return plan;
}

TEST(ParameterCounts, MatchPublishedModelSizes) {
  // Hugging Face parameter counts of the released checkpoints.
  pp_model llama2_7b = gpt(32, 4096, 32, 32000, 4096);
  llama2_7b.ffn_hidden = 11008, llama2_7b.ffn_type = PP_FFN_SWIGLU;
  EXPECT_DOUBLE_EQ(count_parameters(llama2_7b).total(32), 6738415616.0);
  pp_model llama3_8b = gpt(32, 4096, 32, 128256, 8192);
  llama3_8b.kv_heads = 8, llama3_8b.ffn_hidden = 14336, llama3_8b.ffn_type = PP_FFN_SWIGLU;
  EXPECT_DOUBLE_EQ(count_parameters(llama3_8b).total(32), 8030261248.0);
  // GPT-3 175B: 12·l·h² + 2·V·h (+ norms) = 174.6e9 with untied 51200-row embeddings.
  pp_model gpt3 = gpt(96, 12288, 96, 51200, 2048);
  EXPECT_NEAR(count_parameters(gpt3).total(96) / 1e9, 12.0 * 96 * 12288.0 * 12288 / 1e9 + 2 * 51200 * 12288.0 / 1e9, 0.01);
}

// The forward and backward bytes of a layer's memory-bound op, and whether it is recomputed.
struct MemoryOp {
  double forward = 0, backward = 0, recompute = 0;
};
MemoryOp memory_op(const Plan& plan, const std::string& name) {
  MemoryOp found;
  for (const pp_op& op : plan.op_list()) {
    if (op.scope != PP_SCOPE_LAYER || op.kind != PP_OP_MEMORY || name != op.name) continue;
    (op.phase == PP_PHASE_FORWARD ? found.forward : op.phase == PP_PHASE_BACKWARD ? found.backward : found.recompute) =
        op.bytes;
  }
  return found;
}

// The FLOPs of a layer's GEMMs named `name`, every phase.
double gemm_flops(const Plan& plan, const std::string& name) {
  double flops = 0;
  for (const pp_op& op : plan.op_list())
    if (op.kind == PP_OP_GEMM && name == op.name) flops += op.flops;
  return flops;
}

TEST(MemoryBoundKernels, ResidualAddsMoveSevenBytesPerElementEachWay) {
  // Megatron-LM's fused bias-dropout-add after attention and after the MLP: read the block
  // output and the residual, write the sum (2 + 2 + 2 bytes) and a 1-byte dropout mask; the
  // backward reads the gradient and the mask and writes both branches' gradients.
  const double s = 2048, b = 2, h = 4096;
  auto plan = build(gpt(2, 4096, 32, 32000, 2048), training(2, PP_RECOMPUTE_SELECTIVE), true);
  for (const char* name : {"attn_residual", "mlp_residual"}) {
    SCOPED_TRACE(name);
    MemoryOp op = memory_op(*plan, name);
    EXPECT_DOUBLE_EQ(op.forward, 7 * s * b * h);
    EXPECT_DOUBLE_EQ(op.backward, 7 * s * b * h);
    EXPECT_EQ(op.recompute, 0);  // selective recompute re-runs only the attention core
  }
}

TEST(MemoryBoundKernels, WithoutFlashAttentionTheScoresGoThroughMemory) {
  // b·a·s² scores: softmax reads and writes them (4 bytes per score), dropout reads, writes and
  // masks them (5); backward, 5 for dropout and 6 for softmax. Selective recompute repeats the
  // forward; a fused (flash) kernel keeps them on chip.
  const double s = 2048, b = 2, a = 32, scores = b * a * s * s;
  auto unfused = build(gpt(2, 4096, 32, 32000, 2048), training(2, PP_RECOMPUTE_SELECTIVE), false);
  MemoryOp op = memory_op(*unfused, "attention_softmax");
  EXPECT_DOUBLE_EQ(op.forward, 9 * scores);
  EXPECT_DOUBLE_EQ(op.backward, 11 * scores);
  EXPECT_DOUBLE_EQ(op.recompute, 9 * scores);
  auto fused = build(gpt(2, 4096, 32, 32000, 2048), training(2, PP_RECOMPUTE_SELECTIVE), true);
  EXPECT_EQ(memory_op(*fused, "attention_softmax").forward, 0);
}

TEST(AttentionCore, FusedIsOneKernelUnfusedIsTwoBatchedGemms) {
  // Per layer and micro-batch, QK^T and PV over the full s x s square, 2·s·s·d FLOPs each per
  // head (Megatron's count). Fused: one attention op. Unfused: cuBLAS batched GEMMs with the
  // b·a heads stacked into m, s x d x s and s x s x d.
  const double s = 2048, b = 2, a = 32, d = 128;
  auto find = [](const Plan& plan, const char* name) {  // kind 0: no such op
    for (const pp_op& op : plan.op_list())
      if (op.scope == PP_SCOPE_LAYER && op.phase == PP_PHASE_FORWARD && std::string(op.name) == name) return op;
    return pp_op{};
  };
  auto fused = build(gpt(2, 4096, 32, 32000, 2048), training(2, PP_RECOMPUTE_NONE), true);
  const pp_op core = find(*fused, "attention_core");
  EXPECT_EQ(core.kind, PP_OP_ATTENTION);
  EXPECT_DOUBLE_EQ(core.flops, 2 * 2 * s * s * d * b * a);
  EXPECT_EQ(static_cast<int>(find(*fused, "attention_scores").kind), 0);

  auto unfused = build(gpt(2, 4096, 32, 32000, 2048), training(2, PP_RECOMPUTE_NONE), false);
  EXPECT_EQ(static_cast<int>(find(*unfused, "attention_core").kind), 0);
  const pp_op scores = find(*unfused, "attention_scores"), context = find(*unfused, "attention_context");
  EXPECT_EQ(scores.kind, PP_OP_GEMM);
  EXPECT_EQ(context.kind, PP_OP_GEMM);
  EXPECT_DOUBLE_EQ(scores.m, b * a * s);
  EXPECT_DOUBLE_EQ(scores.n, s);
  EXPECT_DOUBLE_EQ(scores.k, d);
  EXPECT_DOUBLE_EQ(context.n, d);
  EXPECT_DOUBLE_EQ(context.k, s);
  EXPECT_DOUBLE_EQ(scores.flops + context.flops, core.flops);
}

TEST(MemoryBoundKernels, Fp8CastsEveryGemmInputAndOutputGradient) {
  // Cast + transpose: read 2 bytes, write 1 + 1, per element. Forward, the inputs of QKV and the
  // MLP (h each, sequence region) and of attention-out and MLP-down (a·d = h and f = 4h, tensor
  // widths); backward, the output gradients of attention-out and MLP-down (h each) and of QKV
  // and MLP-up (3h and 4h). BF16 runs have none.
  const double T = 2048.0 * 2, h = 4096;
  pp_training fp8 = training(2, PP_RECOMPUTE_NONE);
  fp8.precision = PP_PRECISION_FP8;
  auto plan = build(gpt(2, 4096, 32, 32000, 2048), fp8, true);
  const MemoryOp seq = memory_op(*plan, "fp8_cast_seq"), tensor = memory_op(*plan, "fp8_cast_tensor");
  EXPECT_DOUBLE_EQ(seq.forward, 4 * T * 2 * h);
  EXPECT_DOUBLE_EQ(seq.backward, 4 * T * 2 * h);
  EXPECT_DOUBLE_EQ(tensor.forward, 4 * T * (h + 4 * h));
  EXPECT_DOUBLE_EQ(tensor.backward, 4 * T * (3 * h + 4 * h));
  auto bf16 = build(gpt(2, 4096, 32, 32000, 2048), training(2, PP_RECOMPUTE_NONE), true);
  EXPECT_EQ(memory_op(*bf16, "fp8_cast_seq").forward, 0);
}

TEST(MemoryBoundKernels, BlockScaledCastsCarryTheirScales) {
  // The same tensors as FP8's casts; each element read as 2 bytes and written as a row-wise and
  // a column-wise copy with its scales. MXFP8: 1 byte + an E8M0 scale per 32, 2 + 2 x 33/32.
  // NVFP4: half a byte + an E4M3 scale per 16, 2 + 2 x 9/16, plus a 2-byte read for the
  // per-tensor amax. GEMMs run in their own dtype; attention stays bf16.
  const double T = 2048.0 * 2, h = 4096;
  for (const auto& [precision, cast_bytes, dtype] :
       {std::tuple{PP_PRECISION_MXFP8, 2.0 + 2.0 * 33.0 / 32.0, PP_DTYPE_MXFP8},
        std::tuple{PP_PRECISION_NVFP4, 4.0 + 2.0 * 9.0 / 16.0, PP_DTYPE_NVFP4}}) {
    SCOPED_TRACE(static_cast<int>(precision));
    pp_training low = training(2, PP_RECOMPUTE_NONE);
    low.precision = precision;
    auto plan = build(gpt(2, 4096, 32, 32000, 2048), low, true);
    const MemoryOp seq = memory_op(*plan, "fp8_cast_seq"), tensor = memory_op(*plan, "fp8_cast_tensor");
    EXPECT_DOUBLE_EQ(seq.forward, cast_bytes * T * 2 * h);
    EXPECT_DOUBLE_EQ(tensor.backward, cast_bytes * T * (3 * h + 4 * h));
    for (const pp_op& op : plan->op_list()) {
      if (op.kind == PP_OP_GEMM && op.scope == PP_SCOPE_LAYER) {
        EXPECT_EQ(op.dtype, dtype) << op.name;
      }
      if (op.kind == PP_OP_ATTENTION) {
        EXPECT_EQ(op.dtype, PP_DTYPE_BF16);
      }
    }
  }
}

TEST(LowPrecision, TheOutputLayerAndTheRouterStayInBf16) {
  // Transformer Engine quantises only its own modules: Megatron-Core's output layer is a
  // tensor_parallel.ColumnParallelLinear (gpt_model.py, unless the opt-in MXFP8 fp8_output_proj)
  // and the router multiplies in its own dtype (router.py). DeepSeek-V3's report (sec. 3.3.1)
  // keeps the output head and the gating in BF16 too.
  pp_model moe = gpt(2, 4096, 32, 32000, 2048);
  moe.moe_experts = 8, moe.moe_top_k = 2, moe.moe_ffn_hidden = 4096;
  for (pp_precision precision : {PP_PRECISION_FP8, PP_PRECISION_MXFP8, PP_PRECISION_NVFP4}) {
    SCOPED_TRACE(static_cast<int>(precision));
    pp_training low = training(2, PP_RECOMPUTE_NONE);
    low.precision = precision;
    auto plan = build(moe, low, true);
    size_t unquantised = 0;
    for (const pp_op& op : plan->op_list()) {
      if (op.kind != PP_OP_GEMM) continue;
      const std::string name = op.name;
      const bool outside_te = name == PP_OP_LOGITS || name == PP_OP_ROUTER;
      EXPECT_EQ(op.dtype, outside_te ? PP_DTYPE_BF16 : gemm_dtype(low)) << name;
      unquantised += outside_te;
    }
    EXPECT_EQ(unquantised, 2u * 2u);  // forward and backward of each
  }
  pp_training fp16 = training(2, PP_RECOMPUTE_NONE);
  fp16.precision = PP_PRECISION_FP16;
  const std::unique_ptr<Plan> sixteen_bit = build(moe, fp16, true);
  for (const pp_op& op : sixteen_bit->op_list()) {
    if (op.kind == PP_OP_GEMM) {
      EXPECT_EQ(op.dtype, PP_DTYPE_FP16) << op.name;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The model's own features (linear_bias, activation_clamp, position_embedding), as Megatron-Core
// runs them. A 2-layer MoE model of width h = 2048, 16 heads of 128, 4 KV heads, 8 experts of
// f = 1024, top 2, SwiGLU, micro-batch 2 of 1024 tokens: T = 2048 tokens, 2T expert copies.

// The unsharded workload of a recipe's [model] and [training] keys on one H100.
std::unique_ptr<Plan> workload_of(const std::string& model_keys, const std::string& training_keys) {
  const std::unique_ptr<Recipe> recipe = parse_recipe("[model]\n" + model_keys + "[training]\n" + training_keys +
                                                          "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 1\n",
                                                      "workload.toml");
  pp_cluster cluster{sizeof(pp_cluster), 1, 8};
  auto plan = std::make_unique<Plan>(recipe->model.shape, recipe->training, cluster, 1);
  build_workload(*plan, WorkloadOptions{true});
  return plan;
}

// Mamba-2's SSD scan is mamba_ssm's Triton kernels (mamba_chunk_scan_combined), not a Transformer
// Engine module: under FP8 the projections around it are quantised, the scan stays 16-bit.
TEST(LowPrecision, MambaScanStaysInBf16BetweenQuantisedProjections) {
  const std::unique_ptr<Plan> plan =
      workload_of("preset = \"nemotron-3-nano\"\n", "global_batch = 1\nmicro_batch = 1\nprecision = \"fp8\"\n");
  size_t scans = 0, projections = 0;
  for (const pp_op& op : plan->op_list()) {
    const std::string name = op.name;
    if (name == PP_OP_MAMBA_SCAN) {
      EXPECT_EQ(op.dtype, PP_DTYPE_BF16);
      ++scans;
    } else if (name == PP_OP_MAMBA_IN_PROJ || name == PP_OP_MAMBA_OUT_PROJ) {
      EXPECT_EQ(op.dtype, PP_DTYPE_FP8);
      ++projections;
    }
  }
  EXPECT_GT(scans, 0u);
  EXPECT_EQ(projections, 2 * scans);
}

std::unique_ptr<Plan> built(const std::string& features, const std::string& training_keys = "") {
  return workload_of(
      "layers = 2\nhidden = 2048\nheads = 16\nkv_heads = 4\nffn_type = \"swiglu\"\nffn_hidden = 4096\n"
      "vocab = 32000\nseq_len = 1024\nmoe_experts = 8\nmoe_top_k = 2\nmoe_ffn_hidden = 1024\ndropout = 0.0\n" + features,
      "global_batch = 2\nmicro_batch = 2\n" + training_keys);
}

TEST(ModelFeatures, RotaryPassesAreFusedForRopeAndEagerForYarn) {
  // Q and K: T x (16 + 4) x 128 elements. Fused rope reads and writes each once (4 bytes), both
  // ways; YaRN's eager _apply_rotary_pos_emb_bshd moves 12 elements' worth per element (t*cos,
  // the negated half, its concatenation, *sin, the sum, the final concatenation: 24 bytes).
  const double elements = 2048.0 * (16 + 4) * 128;
  const MemoryOp rope = memory_op(*built("position_embedding = \"rope\"\n"), PP_OP_ROTARY);
  EXPECT_DOUBLE_EQ(rope.forward, 4 * elements);
  EXPECT_DOUBLE_EQ(rope.backward, 4 * elements);
  const MemoryOp yarn = memory_op(*built("position_embedding = \"yarn\"\n"), PP_OP_ROTARY);
  EXPECT_DOUBLE_EQ(yarn.forward, 24 * elements);
  EXPECT_DOUBLE_EQ(yarn.backward, 24 * elements);
  for (const char* none : {"", "position_embedding = \"none\"\n", "position_embedding = \"learned_absolute\"\n"})
    EXPECT_EQ(memory_op(*built(none), PP_OP_ROTARY).forward, 0) << none;
}

// PyTorch eager mode (torchtitan without torch.compile), op by op from torchtitan's model code:
// RMSNorm upcasts x (read 2, write 4 bytes), squares it (4, 4), takes the mean (4), multiplies
// by the reciprocal root (4, 4), casts back (4, 2) and multiplies by the weight (2, 2): 36 bytes
// per element where the fused norm moves 4. Rope upcasts (2, 4), multiplies as complex numbers
// by fp32 frequencies (4 + 4, 4) and casts back (4, 2): 24 bytes against 4. SwiGLU's silu (2, 2)
// and product (4, 2): 10 bytes against the fused kernel's 6. Backward: twice a norm's and the
// GLU's forward (a gradient per input read), rope's as its forward (the builder's rules).
TEST(ModelFeatures, EagerKernelsMoveEachCompositeOpsBytes) {
  const double tokens = 2048, h = 2048, qk = (16 + 4) * 128.0;
  const auto fused = built("position_embedding = \"rope\"\n");
  const auto eager = built("position_embedding = \"rope\"\n", "elementwise_kernels = \"eager\"\n");
  EXPECT_DOUBLE_EQ(memory_op(*fused, PP_OP_ATTN_NORM).forward, 4 * tokens * h);
  EXPECT_DOUBLE_EQ(memory_op(*eager, PP_OP_ATTN_NORM).forward, 36 * tokens * h);
  EXPECT_DOUBLE_EQ(memory_op(*eager, PP_OP_ATTN_NORM).backward, 72 * tokens * h);
  EXPECT_DOUBLE_EQ(memory_op(*fused, PP_OP_ROTARY).forward, 4 * tokens * qk);
  EXPECT_DOUBLE_EQ(memory_op(*eager, PP_OP_ROTARY).forward, 24 * tokens * qk);
  EXPECT_DOUBLE_EQ(memory_op(*eager, PP_OP_ROTARY).backward, 24 * tokens * qk);
  // The dense GLU of a layer without experts: the same model's dense width, 4096.
  auto glu = [&](const std::string& kernels) {
    return memory_op(*workload_of("layers = 1\nhidden = 2048\nheads = 16\nffn_type = \"swiglu\"\nffn_hidden = 4096\n"
                                  "vocab = 32000\nseq_len = 1024\n",
                                  "global_batch = 2\nmicro_batch = 2\n" + kernels),
                     PP_OP_MLP_ACT);
  };
  EXPECT_DOUBLE_EQ(glu("").forward, 6 * tokens * 4096);
  EXPECT_DOUBLE_EQ(glu("elementwise_kernels = \"eager\"\n").forward, 10 * tokens * 4096);
  EXPECT_DOUBLE_EQ(glu("elementwise_kernels = \"eager\"\n").backward, 20 * tokens * 4096);
}

TEST(ModelFeatures, AClampedGluAddsEagerClampsBeforeTheActivation) {
  // The fc1 output's two halves of 2T x f elements clamped (2 + 2 bytes each) and concatenated
  // (4 + 4): 16 bytes per copy and f; backward each half's clamp gradient (2 + 2 + 2) and the
  // chunk's concatenation of the two (4 + 4): 20. Recomputed with moe_act, as the activation.
  const double copies_f = 2.0 * 2048 * 1024;
  const std::unique_ptr<Plan> plan =
      built("activation_clamp = 7.0\n", "recompute = \"selective\"\nrecompute_modules = [\"moe_act\"]\n");
  const MemoryOp clamp = memory_op(*plan, PP_OP_EXPERT_CLAMP);
  EXPECT_DOUBLE_EQ(clamp.forward, 16 * copies_f);
  EXPECT_DOUBLE_EQ(clamp.backward, 20 * copies_f);
  EXPECT_DOUBLE_EQ(clamp.recompute, 16 * copies_f);
  EXPECT_EQ(memory_op(*built(""), PP_OP_EXPERT_CLAMP).forward, 0);
  // Kept unrecomputed, the activation's clamped input is kept beside the GEMM's output: SwiGLU's
  // two halves (2 x 2 bytes) once more per copy and f.
  auto hidden = [](const Plan& built_plan) {
    double bytes = 0;
    for (const pp_memory_item& item : built_plan.memory_items())
      if (std::string(item.name) == PP_MEMORY_ACT_EXPERT_HIDDEN) bytes += item.bytes;
    return bytes;
  };
  EXPECT_DOUBLE_EQ(hidden(*built("activation_clamp = 7.0\n")) - hidden(*built("")), 4 * copies_f);
  test::expect_error<InputError>([] { parse_recipe("[model]\nlayers = 2\nhidden = 2048\nheads = 16\nvocab = 32000\n"
                                             "seq_len = 1024\nactivation_clamp = 7.0\n[training]\nglobal_batch = 2\n"
                                             "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 1\n", "gelu.toml"); },
                           {"gelu.toml", "activation_clamp", "ffn_type = \"swiglu\""});
}

// moe_fused_mlp (Transformer Engine's fused grouped MLP): fc1's GEMM applies the GLU and writes
// the hidden quantised, fc2's gradient GEMM applies the GLU's backward: no expert_act or
// expert_clamp pass, and the expert casts keep only fc1's input (2T x h, forward) and fc2's
// output gradient (2T x h, backward), each at MXFP8's 2 + 2 x 33/32 bytes times the routed path's
// passes P; unfused they also cast the hidden (2T x f forward, 2 x 2T x f backward).
TEST(ModelFeatures, AFusedExpertMlpHasNoActivationPassAndCastsOnlyItsOuterTensors) {
  const double copies = 2.0 * 2048, h = 2048, f = 1024;
  const double cast = 2.0 + 2.0 * 33.0 / 32.0, passes = moe::kUnfusedMoePasses;
  const std::string model = "activation_clamp = 7.0\n";
  const auto unfused = built(model, "precision = \"mxfp8\"\n");
  const auto fused = built(model, "precision = \"mxfp8\"\nmoe_fused_mlp = true\n");
  EXPECT_GT(memory_op(*unfused, PP_OP_EXPERT_ACT).forward, 0);
  EXPECT_GT(memory_op(*unfused, PP_OP_EXPERT_CLAMP).forward, 0);
  EXPECT_EQ(memory_op(*fused, PP_OP_EXPERT_ACT).forward + memory_op(*fused, PP_OP_EXPERT_ACT).backward, 0);
  EXPECT_EQ(memory_op(*fused, PP_OP_EXPERT_CLAMP).forward + memory_op(*fused, PP_OP_EXPERT_CLAMP).backward, 0);
  EXPECT_DOUBLE_EQ(memory_op(*unfused, PP_OP_FP8_CAST_EXPERT).forward, passes * cast * copies * (h + f));
  EXPECT_DOUBLE_EQ(memory_op(*unfused, PP_OP_FP8_CAST_EXPERT).backward, passes * cast * copies * (2 * f + h));
  EXPECT_DOUBLE_EQ(memory_op(*fused, PP_OP_FP8_CAST_EXPERT).forward, passes * cast * copies * h);
  EXPECT_DOUBLE_EQ(memory_op(*fused, PP_OP_FP8_CAST_EXPERT).backward, passes * cast * copies * h);
  // The GEMMs are the same work either way.
  for (const char* gemm : {PP_OP_EXPERT_UP, PP_OP_EXPERT_DOWN})
    EXPECT_DOUBLE_EQ(gemm_flops(*fused, gemm), gemm_flops(*unfused, gemm)) << gemm;
}

// fp8_attention: the fused attention op carries FP8 (the GEMMs keep the recipe's format); the
// kernels' conditions are refused at the recipe's line: a 16-bit recipe, an unfused or
// FlashAttention-2 kernel; moe_fused_mlp on a dense model, on FP8's per-tensor recipe.
TEST(ModelFeatures, Fp8AttentionMarksTheAttentionOpAndFusedKernelsNameTheirConditions) {
  const auto plan = built("", "precision = \"mxfp8\"\nfp8_attention = true\n");
  size_t attention = 0;
  for (const pp_op& op : plan->op_list())
    if (op.kind == PP_OP_ATTENTION) {
      EXPECT_EQ(op.dtype, PP_DTYPE_FP8);
      ++attention;
    }
  EXPECT_GT(attention, 0u);
  const std::string moe_model = "[model]\nlayers = 2\nhidden = 2048\nheads = 16\nffn_type = \"swiglu\"\nffn_hidden = 4096\n"
                                "vocab = 32000\nseq_len = 1024\nmoe_experts = 8\nmoe_top_k = 2\nmoe_ffn_hidden = 1024\n";
  const std::string dense_model = "[model]\nlayers = 2\nhidden = 2048\nheads = 16\nffn_type = \"swiglu\"\n"
                                  "ffn_hidden = 4096\nvocab = 32000\nseq_len = 1024\n";
  const std::string cluster = "[cluster]\nhardware = \"b200\"\nnum_gpus = 1\n";
  auto refused = [&](const std::string& model, const std::string& keys, std::vector<std::string> says) {
    test::expect_error<InputError>(
        [&] { parse_recipe(model + "[training]\nglobal_batch = 2\n" + keys + cluster, "fused.toml"); },
        std::move(says));
  };
  refused(dense_model, "fp8_attention = true\n", {"fused.toml", "fp8_attention", "precision fp8, mxfp8 or nvfp4"});
  refused(dense_model, "precision = \"fp8\"\nflash_attention = false\nfp8_attention = true\n",
          {"fused.toml", "fp8_attention", "flash_attention = true"});
  refused(dense_model, "precision = \"fp8\"\nattention_kernel = \"flash2\"\nfp8_attention = true\n",
          {"fused.toml", "fp8_attention", "tuned attention_kernel"});
  refused(dense_model, "precision = \"mxfp8\"\nmoe_fused_mlp = true\n", {"fused.toml", "moe_fused_mlp", "MoE model"});
  refused(moe_model, "precision = \"fp8\"\nmoe_fused_mlp = true\n", {"fused.toml", "moe_fused_mlp", "mxfp8 or nvfp4"});
}

TEST(ModelFeatures, ExpertBiasesAreAddedPerExpertAndTheBiasAddRunsUnfused) {
  // experts.py's _apply_bias: t + b * p per expert, then torch.cat: 12 bytes per element of the
  // 2T x h copies forward, 16 backward. The attention output's bias is added before the residual
  // add, eagerly (an MoE model with biases runs the bias-dropout-add unfused): + 4 bytes per T x h
  // element forward (read and write), + 2 backward (the bias gradient's reduction reads the
  // gradient), on top of the fused kernel's 6 each way.
  const double copies_h = 2.0 * 2048 * 2048, tokens_h = 2048.0 * 2048;
  const std::unique_ptr<Plan> plan = built("linear_bias = true\n");
  const MemoryOp bias = memory_op(*plan, PP_OP_EXPERT_BIAS);
  EXPECT_DOUBLE_EQ(bias.forward, 12 * copies_h);
  EXPECT_DOUBLE_EQ(bias.backward, 16 * copies_h);
  const MemoryOp residual = memory_op(*plan, PP_OP_ATTN_RESIDUAL);
  EXPECT_DOUBLE_EQ(residual.forward, (6 + 4) * tokens_h);
  EXPECT_DOUBLE_EQ(residual.backward, (6 + 2) * tokens_h);
  EXPECT_DOUBLE_EQ(memory_op(*plan, PP_OP_MLP_RESIDUAL).forward, 6 * tokens_h);  // the MoE block returns no bias
  EXPECT_EQ(memory_op(*built(""), PP_OP_EXPERT_BIAS).forward, 0);
  EXPECT_DOUBLE_EQ(memory_op(*built(""), PP_OP_ATTN_RESIDUAL).forward, 6 * tokens_h);
}

TEST(Activations, KorthikantiWithoutParallelism) {
  // s·b·h·(34 + 5·a·s/h) bytes per layer (Korthikanti et al. 2022, eq. 1), no flash attention.
  const double s = 2048, b = 4, h = 4096, a = 32;
  auto plan = build(gpt(8, 4096, 32, 51200, 2048), training(4, PP_RECOMPUTE_NONE), /*flash=*/false);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(*plan), s * b * h * (34.0 + 5.0 * a * s / h));
}

TEST(Activations, FlashAttentionRemovesTheScoreTerm) {
  auto plan = build(gpt(8, 4096, 32, 51200, 2048), training(4, PP_RECOMPUTE_NONE), /*flash=*/true);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(*plan), 2048.0 * 4 * 4096 * 34.0);
}

TEST(Activations, Fp8KeepsTheGemmInputsAsOneByteCasts) {
  // Of the 34·s·b·h, the inputs of the QKV, attention-output, MLP-up and MLP-down GEMMs (2, 2, 2
  // and 8 of them: the GELU output, f = 4h) are saved as their FP8 casts, half the bytes:
  // 34 - 1 - 1 - 1 - 4 = 27·s·b·h. The norm inputs, Q, K, V and the GELU input stay 2 bytes.
  pp_training fp8 = training(4, PP_RECOMPUTE_NONE);
  fp8.precision = PP_PRECISION_FP8;
  auto plan = build(gpt(8, 4096, 32, 51200, 2048), fp8, /*flash=*/true);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(*plan), 2048.0 * 4 * 4096 * 27.0);
}

TEST(Activations, BlockScaledFormatsKeepTheGemmInputsWithTheirScales) {
  // FP8's 27·s·b·h with the 7 of it that are GEMM-input casts (1 + 1 + 1 + 4 bytes per h, see
  // above) at 1 + 1/32 bytes (MXFP8) and 0.5 + 1/16 (NVFP4) instead of 1: 20 + 7 x bytes.
  const double sbh = 2048.0 * 4 * 4096;
  pp_training low = training(4, PP_RECOMPUTE_NONE);
  low.precision = PP_PRECISION_MXFP8;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(*build(gpt(8, 4096, 32, 51200, 2048), low, true)), sbh * (20.0 + 7.0 * 33.0 / 32.0));
  low.precision = PP_PRECISION_NVFP4;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(*build(gpt(8, 4096, 32, 51200, 2048), low, true)), sbh * (20.0 + 7.0 * 9.0 / 16.0));
}

TEST(Activations, SelectiveRecomputeDropsTheScoresFullRecomputeKeepsTheInput) {
  auto selective = build(gpt(8, 4096, 32, 51200, 2048), training(4, PP_RECOMPUTE_SELECTIVE), /*flash=*/false);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(*selective), 2048.0 * 4 * 4096 * 34.0);
  auto full = build(gpt(8, 4096, 32, 51200, 2048), training(4, PP_RECOMPUTE_FULL), /*flash=*/false);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(*full), 2.0 * 2048 * 4 * 4096);  // 2·s·b·h
}

// torchtitan's selective op policy (2024-2025, parallelize_llama.py _custom_policy) on a Llama 3
// 8B layer: of the matmuls q, k, v, o, w1, w3, w2 it keeps the 1st, 3rd, 5th and 7th outputs, and
// SDPA's output with its fp32 log-sum-exp; with the layer's input that is, per token,
// 2·h + 2·(4096 + 1024 + 14336 + 4096) + 4·32 + 2·h bytes. Backward re-runs k, o and w3, the norms,
// rotary, the GLU's product and the attention's residual sum; not the attention core (its output
// is kept) nor the MLP's residual (nothing backward needs).
std::unique_ptr<Plan> llama3_8b_layer(const std::string& recompute_modules) {
  return workload_of("layers = 1\nhidden = 4096\nheads = 32\nkv_heads = 8\nffn_type = \"swiglu\"\nffn_hidden = 14336\n"
                     "vocab = 128256\nseq_len = 8192\nposition_embedding = \"rope\"\ndropout = 0.0\n",
                     "global_batch = 2\nmicro_batch = 2\nrecompute = \"selective\"\n" + recompute_modules);
}

TEST(Activations, TorchtitansOpPolicyKeepsOddMatmulsAndRerunsTheEvenOnes) {
  auto plan = llama3_8b_layer("recompute_modules = [\"torchtitan_op\"]\n");
  const double tokens = 2.0 * 8192, h = 4096;
  const double kept_per_token = 2 * h + 2 * (4096 + 1024 + 14336 + 4096) + 4 * 32 + 2 * h;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(*plan), tokens * kept_per_token);

  double recomputed_gemm_flops = 0;
  bool core_recomputed = false;
  for (const pp_op& op : plan->op_list()) {
    if (op.scope != PP_SCOPE_LAYER || op.phase != PP_PHASE_RECOMPUTE) continue;
    if (op.kind == PP_OP_GEMM) recomputed_gemm_flops += op.flops;
    core_recomputed = core_recomputed || op.kind == PP_OP_ATTENTION;
  }
  EXPECT_DOUBLE_EQ(recomputed_gemm_flops, 2 * tokens * (1024 * h + h * 4096 + 14336 * h));  // k, o, w3
  EXPECT_FALSE(core_recomputed);
  for (const char* rerun : {PP_OP_ATTN_NORM, PP_OP_MLP_NORM, PP_OP_ROTARY, PP_OP_MLP_ACT, PP_OP_ATTN_RESIDUAL})
    EXPECT_GT(memory_op(*plan, rerun).recompute, 0) << rerun;
  EXPECT_EQ(memory_op(*plan, PP_OP_MLP_RESIDUAL).recompute, 0);

  // Megatron-LM's selective recompute of the same layer keeps about twice as much, re-running the
  // attention core alone.
  auto megatron = llama3_8b_layer("");
  EXPECT_GT(layer_activation_bytes(*megatron), 2.0 * layer_activation_bytes(*plan));
}

double model_flops(const Plan& plan, int64_t layers) {
  double flops = 0;
  for (const pp_op& op : plan.op_list()) {
    bool model_work = (op.kind == PP_OP_GEMM || op.kind == PP_OP_ATTENTION) &&
                      (op.phase == PP_PHASE_FORWARD || op.phase == PP_PHASE_BACKWARD);
    if (!model_work) continue;
    flops += op.flops * (op.scope == PP_SCOPE_LAYER ? static_cast<double>(layers) : 1.0);
  }
  return flops;
}

TEST(ModelFlops, MatchMegatronF72) {
  // 72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h)) per step (Narayanan et al. 2021, eq. 3 without recompute).
  const double B = 1, s = 2048, l = 96, h = 12288, V = 51200;
  auto plan = build(gpt(96, 12288, 96, 51200, 2048), training(1, PP_RECOMPUTE_NONE), true);
  double expected = 72.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (12.0 * l * h));
  EXPECT_NEAR(model_flops(*plan, 96) / expected, 1.0, 1e-12);
}

TEST(ModelFlops, FullRecomputeAddsOneForwardPass) {
  // Hardware FLOPs with full recompute: F96 = 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)): the logits
  // layer is not recomputed, so its term keeps the F72 weight (Narayanan et al. 2021).
  const double s = 2048, l = 24, h = 2304, V = 51200;
  auto plan = build(gpt(24, 2304, 24, 51200, 2048), training(1, PP_RECOMPUTE_FULL), true);
  double recomputed = 0;
  for (const pp_op& op : plan->op_list())
    if (op.phase == PP_PHASE_RECOMPUTE && (op.kind == PP_OP_GEMM || op.kind == PP_OP_ATTENTION)) recomputed += op.flops * l;
  double f96 = 96.0 * s * l * h * h * (1.0 + s / (6.0 * h) + V / (16.0 * l * h));
  EXPECT_NEAR((model_flops(*plan, 24) + recomputed) / f96, 1.0, 1e-12);
}

TEST(ModelState, EighteenOrSixteenBytesPerParameterWithAdam) {
  pp_model model = gpt(4, 1024, 16, 1000, 512);
  auto plan = build(model, training(1, PP_RECOMPUTE_NONE), true);
  double state = 0;
  for (const pp_memory_item& item : plan->memory_items()) {
    if (item.kind == PP_MEMORY_ACTIVATIONS || item.kind == PP_MEMORY_OTHER) continue;
    state += item.bytes * (item.scope == PP_SCOPE_LAYER ? 4.0 : 1.0);
  }
  EXPECT_DOUBLE_EQ(state, 18.0 * count_parameters(model).total(4));  // fp32 main grads by default
  auto zero = std::make_unique<Plan>(model, training(1, PP_RECOMPUTE_NONE), pp_cluster{sizeof(pp_cluster), 1, 8}, 1);
  build_workload(*zero, WorkloadOptions{true, /*fp32_main_grads=*/false});
  double zero_state = 0;
  for (const pp_memory_item& item : zero->memory_items()) {
    if (item.kind == PP_MEMORY_ACTIVATIONS || item.kind == PP_MEMORY_OTHER) continue;
    zero_state += item.bytes * (item.scope == PP_SCOPE_LAYER ? 4.0 : 1.0);
  }
  EXPECT_DOUBLE_EQ(zero_state, 16.0 * count_parameters(model).total(4));
}

}  // namespace
}  // namespace paraplan::host
