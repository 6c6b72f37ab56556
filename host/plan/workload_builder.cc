#include "host/plan/workload_builder.h"

#include <algorithm>
#include <string>

#include "host/model/parameter_count.h"
#include "paraplan/cost_model.hpp"
#include "paraplan/moe_kernels.hpp"
#include "paraplan/sdk.hpp"

namespace paraplan::host {
namespace {

constexpr const char* kOwner = PP_OWNER_MODEL;
constexpr double kActivationBytes = 2.0;  // bf16/fp16 activations, also under fp8/fp4 GEMMs
// Megatron-LM's Mamba-2 chunk size (the SSD splits the sequence into chunks this long).
constexpr double kMambaChunk = 128.0;

// The micro-batch's token counts and the model-wide widths every kind shares.
struct Tokens {
  double batch, seq, tokens, hidden, vocab;
  bool dropout;  // masks kept for backward (dropout > 0)
  bool eager;    // PyTorch eager elementwise kernels (pp_elementwise_kernels)
  bool fp8_attention;  // the fused attention kernel in FP8 (pp_training.fp8_attention)
  bool fused_experts;  // the routed experts as one fused grouped MLP (pp_training.moe_fused_mlp)
  pp_position_embedding positions;
  // Biases added outside the bias-dropout-add kernel: an MoE model with biases runs it unfused
  // (Megatron-Core's TEGroupedMLP refuses bias_dropout_fusion with add_bias_linear).
  bool unfused_bias_add;
};

Tokens tokens_of(const pp_model& model, const pp_training& training) {
  Tokens t{};
  t.batch = static_cast<double>(training.micro_batch);
  t.seq = static_cast<double>(model.seq_len);
  t.tokens = t.batch * t.seq;
  t.hidden = static_cast<double>(model.hidden);
  t.vocab = static_cast<double>(model.vocab);
  t.dropout = model.dropout > 0;
  t.eager = elementwise_kernels(training) == PP_ELEMENTWISE_EAGER;
  t.fp8_attention = fp8_attention(training);
  t.fused_experts = moe_fused_mlp(training);
  t.positions = position_embedding(model);
  bool biases = false, experts = false;
  const LayerKinds kinds(model);
  for (uint32_t i = 0; i < kinds.size(); ++i)
    biases = biases || linear_bias(kinds[i]), experts = experts || kinds[i].mlp == PP_MLP_MOE;
  t.unfused_bias_add = biases && experts;
  return t;
}

// A norm's forward bytes over the micro-batch. Fused, each element read and written once. Eager
// (torchtitan's RMSNorm without torch.compile: x * rsqrt(mean(x²) + eps) in fp32, cast back, times
// the weight): the upcast (2 read, 4 written), the square (4, 4), the mean (4 read), the product
// (4, 4), the cast back (4, 2) and the weight's product (2, 2): 36 bytes per element.
double norm_bytes(const Tokens& t) { return (t.eager ? 36.0 : 2.0 * kActivationBytes) * t.tokens * t.hidden; }

// kAnyOp marks ops no recompute module names (only full recomputation, which sets every bit of
// paraplan::recomputed_modules, re-runs them).
constexpr uint32_t kAnyOp = 0x80000000u;

// How a low-precision recipe quantises a GEMM's inputs (Transformer Engine): the bytes per
// element of the quantised copy a GEMM reads and backward keeps, and the bytes one cast moves
// per element: read the 2-byte tensor, write a row-wise and a column-wise quantised copy (the
// weight gradient reduces over the other dimension), scales included. FP8 with per-tensor
// scaling: 1 byte, 2 + 1 + 1. MXFP8 (OCP MX, one E8M0 scale per 32 elements): 1 + 1/32 per
// copy. NVFP4 (an E4M3 scale per 16 E2M1 elements, NVIDIA's NVFP4 training recipe): 0.5 + 1/16
// per copy, and a second read of the tensor for the amax its per-tensor fp32 scale needs.
struct GemmInputFormat {
  double stored_bytes = kActivationBytes;
  double cast_bytes = 0;  // 0: the GEMMs read the activations as they are
};
GemmInputFormat gemm_input_format(pp_precision precision) {
  constexpr double kMxfp8 = 1.0 + 1.0 / 32.0, kNvfp4 = 0.5 + 1.0 / 16.0;
  switch (precision) {
    case PP_PRECISION_FP8: return {1.0, kActivationBytes + 2.0 * 1.0};
    case PP_PRECISION_MXFP8: return {kMxfp8, kActivationBytes + 2.0 * kMxfp8};
    case PP_PRECISION_NVFP4: return {kNvfp4, 2.0 * kActivationBytes + 2.0 * kNvfp4};
    default: return {};
  }
}

// The 16-bit type the activations are in, and the GEMMs outside Transformer Engine run in under
// a low-precision recipe: Megatron-Core's output layer is a tensor_parallel.ColumnParallelLinear
// (gpt_model.py; an FP8 head is the opt-in fp8_output_proj, MXFP8 only) and its router multiplies
// in the router's dtype (router.py), so neither is quantised.
pp_dtype activation_dtype(const pp_training& training) {
  return training.precision == PP_PRECISION_FP16 ? PP_DTYPE_FP16 : PP_DTYPE_BF16;
}

// Emits the forward op and its backward (twice the work: input and weight gradients) and, when
// the recipe recomputes it, the re-run forward; every op of a layer is of the layer's kind.
class OpEmitter {
 public:
  OpEmitter(Plan& plan, pp_scope scope, pp_dtype dtype, uint32_t recomputed, uint32_t kind = PP_EVERY_LAYER_KIND)
      : plan_(plan), scope_(scope), dtype_(dtype), recomputed_(recomputed), kind_(kind) {}

  // `module`: the pp_recompute_module the op belongs to (0: none), which decides whether a
  // selective recompute re-runs it.
  // `count` GEMMs of one shape (a grouped GEMM: one per expert).
  void gemm(const char* name, double m, double n, double k, uint32_t module = 0, double count = 1) {
    pp_op op = make_op(PP_OP_GEMM, PP_PHASE_FORWARD, scope_, name, kOwner);
    op.m = m, op.n = n, op.k = k, op.count = count;
    op.flops = 2.0 * m * n * k * count;
    op.dtype = dtype_;
    emit(op, module);
  }
  // QK^T and (softmax)V: two products per head over `keys` keys per query, the full square
  // counted as Megatron-LM counts it, causal or not (keys = seq). A fused (flash) kernel is one
  // op priced by the hardware's attention efficiency, which absorbs the masked half it skips;
  // unfused, they are two batched GEMMs over the whole square (heads stacked into m, so one launch
  // each, as cuBLAS runs them). qk_dim and v_dim differ only for MLA. Under a low-precision recipe
  // attention stays in the 16-bit type unless `fp8` (the recipe's fp8_attention: the fused kernel
  // in FP8, cost_model.hpp prices its rate).
  void attention(double seq, double keys, double qk_dim, double v_dim, double batch_heads, bool fused, bool fp8) {
    const pp_dtype dtype = fp8 ? PP_DTYPE_FP8 : cost::low_precision(dtype_) ? PP_DTYPE_BF16 : dtype_;
    if (fused) {
      pp_op op = make_op(PP_OP_ATTENTION, PP_PHASE_FORWARD, scope_, PP_OP_ATTENTION_CORE, kOwner);
      op.m = seq, op.n = keys, op.k = (qk_dim + v_dim) / 2.0, op.count = batch_heads;
      op.flops = 2.0 * seq * keys * (qk_dim + v_dim) * batch_heads;
      op.dtype = dtype;
      emit(op, PP_RECOMPUTE_CORE_ATTN);
      return;
    }
    auto batched = [&](const char* name, double n, double k) {
      pp_op op = make_op(PP_OP_GEMM, PP_PHASE_FORWARD, scope_, name, kOwner);
      op.m = batch_heads * seq, op.n = n, op.k = k, op.count = 1;
      op.flops = 2.0 * op.m * n * k;
      op.dtype = dtype;
      emit(op, PP_RECOMPUTE_CORE_ATTN);
    };
    batched(PP_OP_ATTENTION_SCORES, keys, qk_dim);   // Q K^T: s x d times d x keys per head
    batched(PP_OP_ATTENTION_CONTEXT, v_dim, keys);   // P V: s x keys times keys x d per head
  }
  // A memory-bound kernel moving `bytes` forward and `backward_bytes` backward (default: twice
  // the forward, a gradient for each input read).
  void memory_bound(const char* name, double bytes, double backward_bytes = -1.0, uint32_t module = 0) {
    pp_op op = make_op(PP_OP_MEMORY, PP_PHASE_FORWARD, scope_, name, kOwner);
    op.bytes = bytes;
    emit(op, module, backward_bytes >= 0 ? backward_bytes : 2.0 * bytes);
  }

  // A GEMM re-run in backward only, when `module` is recomputed: part of a forward op that a
  // policy recomputes apart (torchtitan's op policy re-runs K of the fused QKV projection).
  void recompute_gemm(const char* name, double m, double n, double k, uint32_t module) {
    if ((module & recomputed_) == 0 || scope_ != PP_SCOPE_LAYER) return;
    pp_op op = make_op(PP_OP_GEMM, PP_PHASE_RECOMPUTE, scope_, name, kOwner);
    op.m = m, op.n = n, op.k = k, op.count = 1;
    op.flops = 2.0 * m * n * k;
    op.dtype = dtype_;
    plan_.add_workload_op(op, kind_);
  }

  // The host waits for the GPU (PP_OP_HOST_SYNC): a forward point with no work and no backward,
  // re-run when `module` is recomputed.
  void host_sync(uint32_t module) {
    pp_op op = make_op(PP_OP_MEMORY, PP_PHASE_FORWARD, scope_, PP_OP_HOST_SYNC, kOwner);
    plan_.add_workload_op(op, kind_);
    if (((module | kAnyOp) & recomputed_) != 0 && scope_ == PP_SCOPE_LAYER) {
      op.phase = PP_PHASE_RECOMPUTE;
      plan_.add_workload_op(op, kind_);
    }
  }

 private:
  void emit(pp_op op, uint32_t module, double backward_bytes = -1.0) {
    plan_.add_workload_op(op, kind_);
    pp_op backward = op;
    backward.phase = PP_PHASE_BACKWARD;
    backward.flops *= 2.0;
    backward.bytes = backward_bytes >= 0 ? backward_bytes : 2.0 * op.bytes;
    plan_.add_workload_op(backward, kind_);
    if (((module | kAnyOp) & recomputed_) != 0 && scope_ == PP_SCOPE_LAYER) {
      op.phase = PP_PHASE_RECOMPUTE;
      plan_.add_workload_op(op, kind_);
    }
  }

  Plan& plan_;
  pp_scope scope_;
  pp_dtype dtype_;
  uint32_t recomputed_;
  uint32_t kind_;
};

void add_memory(Plan& plan, pp_memory_kind kind, pp_scope scope, const char* name, double bytes,
                uint32_t layer_kind = PP_EVERY_LAYER_KIND) {
  plan.add_workload_memory(make_memory_item(kind, scope, name, kOwner, bytes), layer_kind);
}

// Mixed-precision training state per parameter (Rajbhandari et al. 2020): 2-byte weights,
// gradients of 2 bytes (ZeRO) or 4 (Megatron-LM's fp32 main grads), and fp32 master weights plus
// the optimizer's fp32 moments (Adam: m and v): 16 or 18 bytes per parameter. With the master
// weights in place (PyTorch FSDP's mixed precision) the weights are the 4-byte master and the
// optimizer keeps only its moments: 2 bytes per parameter less, there being no 2-byte copy
// between steps.
void add_model_state(Plan& plan, pp_scope scope, const char* suffix, double parameters, const pp_training& training,
                     double gradient_bytes, uint32_t layer_kind = PP_EVERY_LAYER_KIND) {
  const double weight_bytes = paraplan::stored_weight_bytes(training);
  const double master_bytes = paraplan::master_weights_in_place(training) ? 0.0 : 4.0;
  const double optimizer_bytes = (training.optimizer == PP_OPTIMIZER_ADAM ? 8.0 : 4.0) + master_bytes;
  add_memory(plan, PP_MEMORY_PARAMETERS, scope, (std::string(PP_MEMORY_PREFIX_WEIGHTS) + suffix).c_str(),
             weight_bytes * parameters, layer_kind);
  add_memory(plan, PP_MEMORY_GRADIENTS, scope, (std::string(PP_MEMORY_PREFIX_GRADS) + suffix).c_str(),
             gradient_bytes * parameters, layer_kind);
  add_memory(plan, PP_MEMORY_OPTIMIZER, scope, (std::string(PP_MEMORY_PREFIX_OPTIMIZER) + suffix).c_str(),
             optimizer_bytes * parameters, layer_kind);
}

// The optimizer update is memory-bound: Adam reads fp32 master, m, v and the gradient and
// writes master, m, v and the 2-byte weights: 16 + 14 = 30 bytes per parameter (SGD: 18).
void add_optimizer_step(Plan& plan, pp_scope scope, const char* name, double parameters, pp_optimizer optimizer,
                        uint32_t layer_kind = PP_EVERY_LAYER_KIND) {
  if (parameters <= 0) return;
  pp_op op = make_op(PP_OP_MEMORY, PP_PHASE_STEP, scope, name, kOwner);
  op.frequency = PP_PER_STEP;
  op.bytes = (optimizer == PP_OPTIMIZER_ADAM ? 30.0 : 18.0) * parameters;
  plan.add_workload_op(op, layer_kind);
}

// One layer of one kind: its ops, then the activations it keeps for backward.
class LayerBuilder {
 public:
  LayerBuilder(Plan& plan, uint32_t index, const pp_layer_kind& kind, const Tokens& t, const pp_training& training,
               const WorkloadOptions& options)
      : plan_(plan), index_(index), kind_(kind), t_(t), options_(options),
        emit_(plan, PP_SCOPE_LAYER, gemm_dtype(training), recomputed_modules(training), index),
        unquantised_(plan, PP_SCOPE_LAYER, activation_dtype(training), recomputed_modules(training), index),
        format_(gemm_input_format(training.precision)),
        gemm_input_bytes_(format_.stored_bytes),
        full_recompute_(training.recompute == PP_RECOMPUTE_FULL),
        keeps_only_input_(full_recompute_ && recompute_num_layers(training) == 0),
        recomputed_(full_recompute_ ? 0u : recomputed_modules(training)),
        op_policy_(recomputed_ == PP_RECOMPUTE_TORCHTITAN_OP) {}

  void build() {
    if (kind_.mtp) mtp_inputs();
    switch (kind_.mixer) {
      case PP_MIXER_ATTENTION: attention(); break;
      case PP_MIXER_MLA: latent_attention(); break;
      case PP_MIXER_MAMBA2: mamba(); break;
      case PP_MIXER_NONE: break;
    }
    if (kind_.mlp != PP_MLP_NONE) mlp();
    if (kind_.mtp) mtp_outputs();
    if (format_.cast_bytes > 0) quantising_casts();
    if (full_recompute_) act(PP_MEMORY_ACT_LAYER_INPUT, kActivationBytes * t_.tokens * t_.hidden);
    if (op_policy_) op_policy_activations();
  }

 private:
  // Full recomputation of every layer keeps the layer input alone. Of only some layers
  // (recompute_num_layers), the plan holds both sets, the input for the recomputed layers and
  // everything else for the kept ones (PlanView::memory_share). An item a selectively
  // recomputed `module` rebuilds in backward is not kept.
  void act(const char* name, double bytes, uint32_t module = 0) {
    if (op_policy_) return;  // op_policy_activations() lists what it keeps
    if (keeps_only_input_ && std::string(name) != PP_MEMORY_ACT_LAYER_INPUT) return;
    if ((module & recomputed_) != 0 || bytes <= 0) return;
    add_memory(plan_, PP_MEMORY_ACTIVATIONS, PP_SCOPE_LAYER, name, bytes, index_);
  }
  bool recomputes(uint32_t module) const { return (module & recomputed_) != 0; }
  // A clamped GLU's activation keeps the clamped copy it multiplied, beside the unclamped GEMM
  // output the clamps keep for their own gradient: the pre-activation bytes once more.
  double clamped_copy_bytes(double pre_activation) const { return activation_clamp(kind_) > 0 ? pre_activation : 0.0; }
  // Bias, dropout and residual add after each block, fused (Megatron-LM's bias_dropout_add):
  // read the block's output and the residual stream, write the sum, and the 1-byte mask where
  // dropout is on, forward (7 bytes per element); backward reads the gradient (and mask) and
  // writes both branches' (7).
  // A block whose output carries a bias the fused kernel cannot take (t_.unfused_bias_add) adds
  // it first, eagerly: read and write the output forward (4 bytes), the bias gradient's
  // reduction reads the output gradient backward (2).
  void residual(const char* name, bool biased = false, uint32_t module = 0) {
    const double elements = t_.tokens * t_.hidden;
    const double bytes = (3.0 * kActivationBytes + (t_.dropout ? 1.0 : 0.0)) * elements;
    const bool eager_bias = biased && t_.unfused_bias_add && linear_bias(kind_);
    emit_.memory_bound(name, bytes + (eager_bias ? 2.0 * kActivationBytes * elements : 0.0),
                       bytes + (eager_bias ? kActivationBytes * elements : 0.0), module);
  }
  // Rotary position embedding of Q and K (their widths per token). Fused (Megatron-Core's
  // apply_rope_fusion, Transformer Engine's kernel): each element read and written once, forward
  // and backward. YaRN: Megatron-Bridge turns the fusion off for any position embedding but plain
  // rope (utils/fusions.py), and rope_utils.py's _apply_rotary_pos_emb_bshd runs t * cos, the
  // negated half, their concatenation, its product with sin, the sum and a final concatenation:
  // 12 element reads and writes, 24 bytes, and as many in backward.
  // Eager rope (torchtitan's apply_rotary_emb without torch.compile) upcasts to fp32 (2 read, 4
  // written), multiplies as complex numbers by the fp32 frequencies (4 + 4 read, 4 written) and
  // casts back (4 read, 2 written): 24 bytes, 12 element passes, as YaRN's.
  void rotary(double q_width, double kv_width, uint32_t module = 0) {
    const bool rope = t_.positions == PP_POSITION_EMBEDDING_ROPE;
    const double passes = rope ? (t_.eager ? 12.0 : 2.0) : t_.positions == PP_POSITION_EMBEDDING_YARN ? 12.0 : 0.0;
    const double bytes = passes * kActivationBytes * t_.tokens * (q_width + kv_width);
    if (bytes > 0) emit_.memory_bound(PP_OP_ROTARY, bytes, bytes, module);
  }
  // A clamped GLU (activation_clamp; Megatron-Core's fused_bias_geglu.py and mlp.py): before the
  // fused activation, eager clamps of the gate and the linear half (each read and written) and
  // their concatenation (read and written): 8 element passes per width element, 16 bytes; backward,
  // each half's clamp gradient (the gradient and the input read, one written) and the chunk's
  // concatenation of the two: 6 + 4 passes, 20 bytes.
  void clamp(const char* name, double rows, double width, uint32_t module) {
    if (activation_clamp(kind_) <= 0) return;
    emit_.memory_bound(name, 8.0 * kActivationBytes * rows * width, 10.0 * kActivationBytes * rows * width, module);
  }
  void dropout_mask(const char* name) {
    if (t_.dropout) act(name, t_.tokens * t_.hidden);  // 1 byte per element
  }
  void norm(const char* name) {
    emit_.memory_bound(name, norm_bytes(t_), -1.0, PP_RECOMPUTE_LAYERNORM | PP_RECOMPUTE_TORCHTITAN_OP);
  }
  double keys() const {
    // A window of w keys per query is a band of w x s, counted like the square: 2w (<= s).
    return kind_.sliding_window > 0 ? std::min(t_.seq, 2.0 * static_cast<double>(kind_.sliding_window)) : t_.seq;
  }

  void attention() {
    const double tok = t_.tokens, h = t_.hidden, d = static_cast<double>(kind_.head_dim);
    const double heads = static_cast<double>(kind_.heads), q_width = heads * d;
    const double kv_width = static_cast<double>(kind_.kv_heads) * d;
    constexpr uint32_t kOpPolicy = PP_RECOMPUTE_TORCHTITAN_OP;  // what it re-runs (op_policy_activations)
    norm(PP_OP_ATTN_NORM);
    emit_.gemm(PP_OP_QKV, tok, q_width + 2.0 * kv_width, h);
    if (op_policy_) emit_.recompute_gemm(PP_OP_QKV, tok, kv_width, h, kOpPolicy);  // K, the second matmul
    rotary(q_width, kv_width, kOpPolicy);
    core(heads, d, d);
    emit_.gemm(PP_OP_ATTN_OUT, tok, h, q_width, kOpPolicy);  // the fourth
    residual(PP_OP_ATTN_RESIDUAL, /*biased=*/true, kOpPolicy);  // the MLP norm's input
    // Activations kept for backward (Korthikanti et al. 2022, sec. 4.1, generalised to GQA).
    // FP8 training (Transformer Engine) keeps a GEMM's input for the weight gradient as the
    // 1-byte cast it multiplied; tensors other kernels read back (norm inputs, Q/K/V) stay 2.
    act(PP_MEMORY_ACT_ATTN_NORM_INPUT, kActivationBytes * tok * h);
    act(PP_MEMORY_ACT_QKV_INPUT, gemm_input_bytes_ * tok * h, PP_RECOMPUTE_LAYERNORM);
    act(PP_MEMORY_ACT_Q, kActivationBytes * tok * q_width);
    act(PP_MEMORY_ACT_K, kActivationBytes * tok * kv_width);
    act(PP_MEMORY_ACT_V, kActivationBytes * tok * kv_width);
    scores_kept(heads);
    act(PP_MEMORY_ACT_ATTN_OUT_INPUT, gemm_input_bytes_ * tok * q_width);
    dropout_mask(PP_MEMORY_ACT_ATTN_DROPOUT_MASK);
  }

  // Multi-head latent attention (DeepSeek-V2 sec. 2.1; Megatron-LM's MLASelfAttention): Q and
  // KV each pass through a low-rank latent with its own norm; the keys' rotary part is shared by
  // every head; each head scores with nope + rope dims and returns v_head_dim values.
  void latent_attention() {
    const double tok = t_.tokens, h = t_.hidden, heads = static_cast<double>(kind_.heads);
    const double q_lora = static_cast<double>(kind_.q_lora_rank), kv_lora = static_cast<double>(kind_.kv_lora_rank);
    const double rope = static_cast<double>(kind_.qk_rope_head_dim), nope = static_cast<double>(kind_.qk_nope_head_dim);
    const double qk = nope + rope, v = static_cast<double>(kind_.v_head_dim);
    norm(PP_OP_ATTN_NORM);
    if (q_lora > 0) {
      emit_.gemm(PP_OP_MLA_Q_DOWN, tok, q_lora, h);
      emit_.memory_bound(PP_OP_MLA_Q_NORM, 2.0 * kActivationBytes * tok * q_lora, -1.0, PP_RECOMPUTE_LAYERNORM);
      emit_.gemm(PP_OP_MLA_Q_UP, tok, heads * qk, q_lora, PP_RECOMPUTE_MLA_UP_PROJ);
    } else {
      emit_.gemm(PP_OP_MLA_Q_UP, tok, heads * qk, h, PP_RECOMPUTE_MLA_UP_PROJ);
    }
    emit_.gemm(PP_OP_MLA_KV_DOWN, tok, kv_lora + rope, h);
    emit_.memory_bound(PP_OP_MLA_KV_NORM, 2.0 * kActivationBytes * tok * kv_lora, -1.0, PP_RECOMPUTE_LAYERNORM);
    emit_.gemm(PP_OP_MLA_KV_UP, tok, heads * (nope + v), kv_lora, PP_RECOMPUTE_MLA_UP_PROJ);
    core(heads, qk, v);
    emit_.gemm(PP_OP_ATTN_OUT, tok, h, heads * v);
    residual(PP_OP_ATTN_RESIDUAL, /*biased=*/true);
    act(PP_MEMORY_ACT_ATTN_NORM_INPUT, kActivationBytes * tok * h);
    act(PP_MEMORY_ACT_QKV_INPUT, gemm_input_bytes_ * tok * h, PP_RECOMPUTE_LAYERNORM);  // both down projections' input
    // The latents: the norms' inputs (2 bytes) and the shared rotary key, kept; the norms'
    // outputs, the up projections' inputs, unless the norms are recomputed.
    const double normed = recomputes(PP_RECOMPUTE_LAYERNORM) ? 0.0 : gemm_input_bytes_;
    act(PP_MEMORY_ACT_MLA_LATENT, (kActivationBytes + normed) * tok * (q_lora + kv_lora) + kActivationBytes * tok * rope);
    act(PP_MEMORY_ACT_Q, kActivationBytes * tok * heads * qk, PP_RECOMPUTE_MLA_UP_PROJ);
    act(PP_MEMORY_ACT_K, kActivationBytes * tok * heads * qk, PP_RECOMPUTE_MLA_UP_PROJ);
    act(PP_MEMORY_ACT_V, kActivationBytes * tok * heads * v, PP_RECOMPUTE_MLA_UP_PROJ);
    scores_kept(heads);
    act(PP_MEMORY_ACT_ATTN_OUT_INPUT, gemm_input_bytes_ * tok * heads * v);
    dropout_mask(PP_MEMORY_ACT_ATTN_DROPOUT_MASK);
  }

  void core(double heads, double qk_dim, double v_dim) {
    emit_.attention(t_.seq, keys(), qk_dim, v_dim, t_.batch * heads, options_.flash_attention, t_.fp8_attention);
    if (!options_.flash_attention) {
      // Without a fused attention kernel the b·a·s·keys scores go through HBM: scale-mask-softmax
      // reads and writes them (2 + 2 bytes each), dropout reads them, writes them and a 1-byte
      // mask (5); backward, dropout's gradient (read 2 + mask 1, write 2) and softmax's (read
      // probabilities and gradient, write 2 + 2 + 2). Recomputed with the core (selective).
      const double scores = t_.batch * heads * t_.seq * keys();
      emit_.memory_bound(PP_OP_ATTENTION_SOFTMAX, 9.0 * scores, 11.0 * scores, PP_RECOMPUTE_CORE_ATTN);
    }
  }
  // torchtitan's selective op checkpointing, as its releases of 2024-2025 ran it
  // (parallelize_llama.py, _custom_policy: "saves output of all compute ops, except every second
  // mm", counting a layer's matmuls q, k, v, o, w1, w3, w2; SDPA's outputs and reduce-scatters are
  // saved too). Kept: the checkpointed layer's input, the first, third, fifth and seventh matmuls'
  // outputs (Q, V, the gate, the down projection's) and the attention's output with its
  // log-sum-exp; the ops between them run again in backward (tagged PP_RECOMPUTE_TORCHTITAN_OP
  // where they are emitted), up to the down projection's input (the seventh matmul's output
  // feeds nothing backward needs). Its counter runs on across micro-batches, so with an odd count
  // of matmuls the kept set alternates with K, the output projection and w3; that set is
  // smaller, and re-runs Q, V and w1, as many FLOPs when the heads span the hidden width (every
  // Llama): priced as the first. Under TP the row-parallel outputs are counted as sequence
  // parallelism shards them, though torchtitan keeps the unreduced partial sums too, and the
  // reduce-scatters' outputs it also saves (2·T·h/t each, two a layer) are not counted.
  void op_policy_activations() {
    const double tok = t_.tokens, h = t_.hidden, d = static_cast<double>(kind_.head_dim);
    const double heads = static_cast<double>(kind_.heads), q_width = heads * d;
    const double kv_width = static_cast<double>(kind_.kv_heads) * d, ffn = static_cast<double>(kind_.ffn_hidden);
    const bool swiglu = kind_.ffn_type == PP_FFN_SWIGLU;
    const double lse = 4.0 * heads;  // fp32 per token and head
    add_memory(plan_, PP_MEMORY_ACTIVATIONS, PP_SCOPE_LAYER, PP_MEMORY_ACT_LAYER_INPUT, kActivationBytes * tok * h, index_);
    add_memory(plan_, PP_MEMORY_ACTIVATIONS, PP_SCOPE_LAYER, PP_MEMORY_ACT_KEPT_OUTPUTS,
               (kActivationBytes * (q_width + kv_width + ffn + q_width) + lse) * tok, index_);
    if (swiglu)  // the seventh matmul, the down projection (a plain MLP's is the sixth, not kept)
      add_memory(plan_, PP_MEMORY_ACTIVATIONS, PP_SCOPE_LAYER, PP_MEMORY_ACT_KEPT_HIDDEN_OUTPUTS,
                 kActivationBytes * tok * h, index_);
  }
  void scores_kept(double heads) {
    if (!options_.flash_attention)  // softmax 2 + mask 1 + dropout 2
      act(PP_MEMORY_ACT_ATTENTION_SCORES, 5.0 * heads * t_.seq * keys() * t_.batch, PP_RECOMPUTE_CORE_ATTN);
  }

  // A Mamba-2 mixer (Dao and Gu 2024; Megatron-LM's MambaMixer): in_proj to z, x, B, C and dt, a
  // depthwise causal convolution over x, B and C, the SSD scan, a norm gated by z, out_proj.
  // The SSD in chunks of Q tokens does, per token and head of dim P with state N and G groups
  // over H heads: 2QP (intra-chunk outputs) + 2NP (chunk states) + 2NP (state to output) and
  // 2QN·G/H (C·B per group) multiply-adds x2: priced as one GEMM of inner width and that depth,
  // in the 16-bit type: the scan is mamba_ssm's Triton kernels (mamba_chunk_scan_combined), not a
  // Transformer Engine module, so a low-precision recipe quantises only in_proj and out_proj.
  void mamba() {
    const double tok = t_.tokens, h = t_.hidden, heads = static_cast<double>(kind_.mamba_heads);
    const double p = static_cast<double>(kind_.mamba_head_dim), n = static_cast<double>(kind_.mamba_state);
    const double groups = static_cast<double>(kind_.mamba_groups), inner = heads * p, bc = 2.0 * groups * n;
    const double conv_width = inner + bc, projected = 2.0 * inner + bc + heads;
    const double chunk = std::min(kMambaChunk, t_.seq);
    norm(PP_OP_ATTN_NORM);
    emit_.gemm(PP_OP_MAMBA_IN_PROJ, tok, projected, h);
    emit_.memory_bound(PP_OP_MAMBA_CONV, 2.0 * kActivationBytes * tok * conv_width);
    unquantised_.gemm(PP_OP_MAMBA_SCAN, tok, inner, chunk + 2.0 * n + chunk * n * groups / (heads * p));
    emit_.memory_bound(PP_OP_MAMBA_NORM, 3.0 * kActivationBytes * tok * inner);
    emit_.gemm(PP_OP_MAMBA_OUT_PROJ, tok, h, inner);
    residual(PP_OP_ATTN_RESIDUAL, /*biased=*/true);
    act(PP_MEMORY_ACT_ATTN_NORM_INPUT, kActivationBytes * tok * h);
    act(PP_MEMORY_ACT_MAMBA_IN_PROJ_INPUT, gemm_input_bytes_ * tok * h, PP_RECOMPUTE_LAYERNORM);
    act(PP_MEMORY_ACT_MAMBA_PROJECTED, kActivationBytes * tok * projected);
    act(PP_MEMORY_ACT_MAMBA_CONV_OUT, kActivationBytes * tok * conv_width);
    act(PP_MEMORY_ACT_MAMBA_STATES, 4.0 * (tok / chunk) * heads * p * n);  // one fp32 state per chunk and head
    act(PP_MEMORY_ACT_MAMBA_Y, kActivationBytes * tok * inner);
    act(PP_MEMORY_ACT_MAMBA_OUT_PROJ_INPUT, gemm_input_bytes_ * tok * inner);
    dropout_mask(PP_MEMORY_ACT_ATTN_DROPOUT_MASK);
  }

  void mlp() {
    const double tok = t_.tokens, h = t_.hidden;
    const bool swiglu = kind_.ffn_type == PP_FFN_SWIGLU;
    norm(PP_OP_MLP_NORM);
    // GELU and squared ReLU keep their input and output (2 tensors of width f), SwiGLU gate, up
    // and their product; the last of them is the down projection's input.
    const double pre_activation = (swiglu ? 2.0 : 1.0) * kActivationBytes;
    const double hidden_bytes = pre_activation + gemm_input_bytes_;
    if (kind_.mlp == PP_MLP_MOE) {
      moe(swiglu, pre_activation, hidden_bytes);
      return;
    }
    constexpr uint32_t kMlp = PP_RECOMPUTE_MLP;
    const double ffn = static_cast<double>(kind_.ffn_hidden);
    // torchtitan's op policy re-runs the GLU's up projection (w3, the sixth matmul after the
    // gate's w1) and the activation; a plain MLP's up projection is the fifth, kept.
    const uint32_t up_module = kMlp | (swiglu ? uint32_t{PP_RECOMPUTE_TORCHTITAN_OP} : 0u);
    emit_.gemm(PP_OP_MLP_UP, tok, ffn, h, up_module);
    if (swiglu) emit_.gemm(PP_OP_MLP_GATE, tok, ffn, h, kMlp);
    clamp(PP_OP_MLP_CLAMP, tok, ffn, kMlp);
    // Fused SwiGLU reads the gate and up outputs and writes their product; eager, silu (2 read, 2
    // written) and then the product (4 read, 2 written): 5 passes, not 3.
    const double glu_passes = t_.eager ? 5.0 : 3.0;
    emit_.memory_bound(PP_OP_MLP_ACT, (swiglu ? glu_passes : 2.0) * kActivationBytes * tok * ffn, -1.0,
                       kMlp | PP_RECOMPUTE_TORCHTITAN_OP);
    emit_.gemm(PP_OP_MLP_DOWN, tok, h, ffn, kMlp);
    residual(PP_OP_MLP_RESIDUAL, /*biased=*/true);
    act(PP_MEMORY_ACT_MLP_NORM_INPUT, kActivationBytes * tok * h);
    act(PP_MEMORY_ACT_MLP_INPUT, gemm_input_bytes_ * tok * h, PP_RECOMPUTE_LAYERNORM);
    act(PP_MEMORY_ACT_MLP_HIDDEN, (hidden_bytes + clamped_copy_bytes(pre_activation)) * tok * ffn, kMlp);
    dropout_mask(PP_MEMORY_ACT_MLP_DROPOUT_MASK);
  }

  // An MoE layer as Megatron-Core's MoELayer runs it with grouped GEMMs (megatron/core/
  // transformer/moe: router.py, token_dispatcher.py, experts.py TEGroupedMLP, shared_experts.py):
  //   router GEMM (h -> E logits); scores (softmax or sigmoid), top-k and their normalisation,
  //   fp32: the logits read and the probabilities written (4 + 4 bytes per token and expert),
  //   the k chosen scores and their int64 indices written (4 + 8 per copy);
  //   permute: each token's k copies gathered into expert order (2-byte rows read and written);
  //   the host waits for the token counts (host_issue.hpp);
  //   the routed experts: one GEMM per expert over the copies it receives, m = tokens x k / E
  //   when the router spreads them evenly (ep divides the experts and sets each rank's load);
  //   fc1 holds SwiGLU's gate and up halves in one GEMM (n = 2f), as linear_fc1 does;
  //   unpermute: each token's k outputs read, weighted by their scores and summed into its row;
  //   the shared experts: a dense MLP of width shared_ffn_hidden on every token, beside them.
  // Backward moves twice each memory-bound pass's bytes, as every such op here; the routed path's
  // passes carry kUnfusedMoePasses times their minimal bytes (paraplan/moe_kernels.hpp).
  // With the experts' MLP fused (moe_fused_mlp: Transformer Engine's fused grouped MLP, cuDNN
  // frontend's grouped_gemm_glu / grouped_gemm_dglu kernels), fc1's GEMM applies the GLU (clamped
  // or not) and the probabilities in its epilogue and fc2's gradient GEMM their backward: no
  // activation or clamp pass of their own (quantising_casts drops the hidden's casts).
  void moe(bool swiglu, double pre_activation, double hidden_bytes) {
    constexpr uint32_t kMoe = PP_RECOMPUTE_MOE;
    const double tok = t_.tokens, h = t_.hidden, up_outputs = swiglu ? 2.0 : 1.0;
    const double experts = static_cast<double>(kind_.experts), ffn = static_cast<double>(kind_.expert_ffn_hidden);
    const double top_k = static_cast<double>(kind_.top_k), copies = tok * top_k;
    const double activation_passes = swiglu ? 3.0 : 2.0;  // read gate and up (or the input), write the product
    unquantised_.gemm(PP_OP_ROUTER, tok, experts, h, kMoe);
    constexpr double kPasses = moe::kUnfusedMoePasses;  // the routed path's kernels (moe_kernels.hpp)
    emit_.memory_bound(PP_OP_ROUTER_TOPK, kPasses * ((4.0 + 4.0) * tok * experts + (4.0 + 8.0) * copies), -1.0, kMoe);
    emit_.memory_bound(PP_OP_MOE_PERMUTE, kPasses * 2.0 * kActivationBytes * copies * h, -1.0, kMoe);
    // Dropless routing sizes the dispatch from token counts the host must read first
    // (token_dispatcher.py, cuda_sync_point "before_ep_alltoall"); ep removes the wait for
    // drop-and-pad routing, whose sizes are fixed.
    emit_.host_sync(kMoe);
    emit_.gemm(PP_OP_EXPERT_UP, copies / experts, up_outputs * ffn, h, kMoe, experts);
    if (!t_.fused_experts) {
      clamp(PP_OP_EXPERT_CLAMP, copies, ffn, kMoe | PP_RECOMPUTE_MOE_ACT);
      emit_.memory_bound(PP_OP_EXPERT_ACT, kPasses * activation_passes * kActivationBytes * copies * ffn, -1.0,
                         kMoe | PP_RECOMPUTE_MOE_ACT);
    }
    emit_.gemm(PP_OP_EXPERT_DOWN, copies / experts, h, ffn, kMoe, experts);
    // fc2's bias (linear_bias): experts.py's _apply_bias adds it per expert, weighted by the
    // copy's probability, and concatenates the pieces: the product written, read with the output
    // and the sum written, then read and written by the concatenation, 12 bytes per element;
    // backward, the split's concatenation of the gradients (4) and the bias' and probabilities'
    // gradients, each a product written and reduced (6 + 6).
    if (linear_bias(kind_)) {
      const double elements = copies * h;
      emit_.memory_bound(PP_OP_EXPERT_BIAS, 6.0 * kActivationBytes * elements, 8.0 * kActivationBytes * elements, kMoe);
    }
    emit_.memory_bound(PP_OP_MOE_UNPERMUTE, kPasses * (kActivationBytes * (copies + tok) * h + 4.0 * copies), -1.0, kMoe);
    const double shared = static_cast<double>(kind_.shared_ffn_hidden);
    if (shared > 0) {
      emit_.gemm(PP_OP_SHARED_EXPERT_UP, tok, up_outputs * shared, h, kMoe);
      emit_.memory_bound(PP_OP_SHARED_EXPERT_ACT, activation_passes * kActivationBytes * tok * shared, -1.0, kMoe);
      emit_.gemm(PP_OP_SHARED_EXPERT_DOWN, tok, h, shared, kMoe);
    }
    residual(PP_OP_MLP_RESIDUAL);
    act(PP_MEMORY_ACT_MLP_NORM_INPUT, kActivationBytes * tok * h);
    // The normed input: the router's, the shared experts' and (before permuting) the experts'.
    act(PP_MEMORY_ACT_MLP_INPUT, gemm_input_bytes_ * tok * h, PP_RECOMPUTE_LAYERNORM);
    act(PP_MEMORY_ACT_ROUTER_PROBS, 4.0 * tok * experts, kMoe);  // the router is not split by TP
    act(PP_MEMORY_ACT_EXPERT_INPUT, gemm_input_bytes_ * copies * h, kMoe);
    // With the activation recomputed, only its inputs (gate and up outputs) are kept.
    act(PP_MEMORY_ACT_EXPERT_HIDDEN,
        (recomputes(PP_RECOMPUTE_MOE_ACT) ? pre_activation : hidden_bytes + clamped_copy_bytes(pre_activation)) * copies * ffn,
        kMoe);
    if (shared > 0) act(PP_MEMORY_ACT_SHARED_EXPERT_HIDDEN, hidden_bytes * tok * shared, kMoe);
    dropout_mask(PP_MEMORY_ACT_MLP_DROPOUT_MASK);
  }

  // A multi-token-prediction module (DeepSeek-V3 sec. 2.2): the next tokens' embeddings and the
  // hidden state, each normed, concatenated and projected 2h -> h, then the layer, then the
  // shared output head and a second loss.
  void mtp_inputs() {
    const double tok = t_.tokens, h = t_.hidden;
    emit_.memory_bound(PP_OP_MTP_EMBEDDING, 2.0 * kActivationBytes * tok * h);
    emit_.memory_bound(PP_OP_MTP_NORMS, 2.0 * 2.0 * kActivationBytes * tok * h);
    emit_.gemm(PP_OP_MTP_PROJECTION, tok, h, 2.0 * h);
    act(PP_MEMORY_ACT_MTP_INPUTS, (2.0 * kActivationBytes + 2.0 * gemm_input_bytes_) * tok * h);
  }
  void mtp_outputs() {
    const double tok = t_.tokens, h = t_.hidden, vocab = t_.vocab;
    norm(PP_OP_FINAL_NORM);
    unquantised_.gemm(PP_OP_MTP_LOGITS, tok, vocab, h);
    emit_.memory_bound(PP_OP_MTP_LOSS, 3.0 * 4.0 * tok * vocab);
    act(PP_MEMORY_ACT_MTP_LOGITS, 4.0 * tok * vocab);
  }

  // Low-precision training (Transformer Engine) casts every GEMM input to the GEMM format before
  // the forward GEMM and every output gradient before the backward GEMMs, each with a transposed
  // copy for the weight gradient (gemm_input_format: FP8 reads 2 bytes and writes 1 + 1 per
  // element); the weights' casts are cached across a step's micro-batches. Split by where the tensors live: the blocks' normed inputs and the
  // gradients arriving from the residual stream are sequence-region tensors (SP divides them);
  // the rest are tensor-parallel widths (TP divides them); the experts' follow the routed tokens.
  void quantising_casts() {
    const double cast_bytes = format_.cast_bytes;
    const double tok = t_.tokens, h = t_.hidden;
    const bool swiglu = kind_.ffn_type == PP_FFN_SWIGLU;
    const double up_outputs = swiglu ? 2.0 : 1.0;
    double blocks = 0, forward_width = 0, backward_width = 0;  // per token
    switch (kind_.mixer) {
      case PP_MIXER_ATTENTION: {
        const double d = static_cast<double>(kind_.head_dim), q = static_cast<double>(kind_.heads) * d;
        blocks += 1, forward_width += q, backward_width += q + 2.0 * static_cast<double>(kind_.kv_heads) * d;
        break;
      }
      case PP_MIXER_MLA: {
        const double heads = static_cast<double>(kind_.heads), q_lora = static_cast<double>(kind_.q_lora_rank);
        const double kv_lora = static_cast<double>(kind_.kv_lora_rank), rope = static_cast<double>(kind_.qk_rope_head_dim);
        const double nope = static_cast<double>(kind_.qk_nope_head_dim), v = static_cast<double>(kind_.v_head_dim);
        blocks += 1, forward_width += heads * v + q_lora + kv_lora;
        backward_width += heads * (nope + rope) + heads * (nope + v) + q_lora + kv_lora + rope;
        break;
      }
      case PP_MIXER_MAMBA2: {
        const double inner = static_cast<double>(kind_.mamba_heads * kind_.mamba_head_dim);
        const double bc = 2.0 * static_cast<double>(kind_.mamba_groups * kind_.mamba_state);
        blocks += 1, forward_width += inner, backward_width += 2.0 * inner + bc + static_cast<double>(kind_.mamba_heads);
        break;
      }
      case PP_MIXER_NONE: break;
    }
    // A dense MLP, or an MoE layer's shared experts (their input is the block's normed input).
    const double dense_width =
        static_cast<double>(kind_.mlp == PP_MLP_DENSE ? kind_.ffn_hidden : kind_.mlp == PP_MLP_MOE ? kind_.shared_ffn_hidden : 0);
    if (dense_width > 0) blocks += 1, forward_width += dense_width, backward_width += up_outputs * dense_width;
    if (kind_.mtp) blocks += 2;  // the projection's input (2h); the head it passes through is not quantised
    if (blocks > 0) emit_.memory_bound(PP_OP_FP8_CAST_SEQ, cast_bytes * tok * h * blocks, cast_bytes * tok * h * blocks);
    if (forward_width > 0 || backward_width > 0)
      emit_.memory_bound(PP_OP_FP8_CAST_TENSOR, cast_bytes * tok * forward_width, cast_bytes * tok * backward_width);
    if (kind_.mlp == PP_MLP_MOE) {
      // fc1's input (the routed copies) and fc2's (the hidden); backward fc2's output gradient
      // and fc1's. A fused grouped MLP writes the hidden and fc1's gradient quantised from the
      // GEMMs' epilogues: only the routed copies and fc2's output gradient are cast.
      const double ffn = t_.fused_experts ? 0.0 : static_cast<double>(kind_.expert_ffn_hidden);
      const double copies = tok * static_cast<double>(kind_.top_k);
      constexpr double kPasses = moe::kUnfusedMoePasses;  // padded per expert, rowwise and columnwise
      emit_.memory_bound(PP_OP_FP8_CAST_EXPERT, kPasses * cast_bytes * copies * (h + ffn),
                         kPasses * cast_bytes * copies * (up_outputs * ffn + h));
    }
  }

  Plan& plan_;
  uint32_t index_;
  const pp_layer_kind& kind_;
  const Tokens& t_;
  const WorkloadOptions& options_;
  OpEmitter emit_;
  OpEmitter unquantised_;  // the router and the MTP module's pass through the output layer
  GemmInputFormat format_;
  double gemm_input_bytes_;
  bool full_recompute_;
  bool keeps_only_input_;  // full recomputation of every layer
  uint32_t recomputed_;  // selective recomputation's modules (full recomputation keeps only the input)
  bool op_policy_;       // torchtitan's op policy, which keeps its own list
};

}  // namespace

pp_dtype gemm_dtype(const pp_training& training) {
  switch (training.precision) {
    case PP_PRECISION_FP8: return PP_DTYPE_FP8;
    case PP_PRECISION_MXFP8: return PP_DTYPE_MXFP8;
    case PP_PRECISION_NVFP4: return PP_DTYPE_NVFP4;
    case PP_PRECISION_FP16: return PP_DTYPE_FP16;
    default: return PP_DTYPE_BF16;
  }
}

ParameterCounts count_parameters(const pp_model& model) {
  // The first kind of a uniform model (what this summary describes): a layer's dense part,
  // its experts, the embedding and the head.
  const LayerStack stack = LayerStack::of(model);
  const LayerParameters layer = layer_parameters(stack.kinds().front(), model.hidden);
  const ModelParameters whole = count_model_parameters(model);
  ParameterCounts counts;
  counts.per_layer = layer.dense;
  counts.experts_per_layer = layer.all_experts();
  counts.embedding = whole.embedding;
  counts.head = whole.head;
  return counts;
}

void build_workload(Plan& plan, const WorkloadOptions& options) {
  const pp_model& model = plan.model();
  const pp_training& training = plan.training();
  const Tokens t = tokens_of(model, training);

  OpEmitter embedding(plan, PP_SCOPE_EMBEDDING, gemm_dtype(training), recomputed_modules(training));
  embedding.memory_bound(PP_OP_EMBEDDING, 2.0 * kActivationBytes * t.tokens * t.hidden);  // gather rows, write
  if (t.dropout)
    add_memory(plan, PP_MEMORY_ACTIVATIONS, PP_SCOPE_EMBEDDING, PP_MEMORY_ACT_EMBEDDING_DROPOUT_MASK, t.tokens * t.hidden);

  const std::vector<pp_layer_kind>& kinds = plan.layer_stack().kinds();
  for (uint32_t index = 0; index < kinds.size(); ++index)
    LayerBuilder(plan, index, kinds[index], t, training, options).build();

  OpEmitter head(plan, PP_SCOPE_HEAD, activation_dtype(training), recomputed_modules(training));
  head.memory_bound(PP_OP_FINAL_NORM, norm_bytes(t));
  head.gemm(PP_OP_LOGITS, t.tokens, t.vocab, t.hidden);
  head.memory_bound(PP_OP_LOSS, 3.0 * 4.0 * t.tokens * t.vocab);  // fp32 softmax: read logits, write probs, read for grad
  add_memory(plan, PP_MEMORY_ACTIVATIONS, PP_SCOPE_HEAD, PP_MEMORY_ACT_LOGITS, 4.0 * t.tokens * t.vocab);

  const double gradient_bytes = options.fp32_main_grads ? 4.0 : 2.0;
  const ModelParameters parameters = count_model_parameters(model);
  add_model_state(plan, PP_SCOPE_EMBEDDING, PP_MEMORY_SUFFIX_EMBEDDING, parameters.embedding, training, gradient_bytes);
  for (uint32_t index = 0; index < kinds.size(); ++index) {
    const LayerParameters layer = layer_parameters(kinds[index], model.hidden);
    // The experts' item holds the shared experts too: ep splits them off ("*.shared_experts")
    // and keeps them whole on every rank while it divides the routed ones.
    add_model_state(plan, PP_SCOPE_LAYER, PP_MEMORY_SUFFIX_LAYER, layer.dense, training, gradient_bytes, index);
    if (layer.all_experts() > 0)
      add_model_state(plan, PP_SCOPE_LAYER, PP_MEMORY_SUFFIX_EXPERTS, layer.all_experts(), training, gradient_bytes, index);
  }
  add_model_state(plan, PP_SCOPE_HEAD, PP_MEMORY_SUFFIX_HEAD, parameters.head, training, gradient_bytes);
  add_optimizer_step(plan, PP_SCOPE_EMBEDDING, PP_OP_OPTIMIZER_STEP, parameters.embedding, training.optimizer);
  for (uint32_t index = 0; index < kinds.size(); ++index) {
    const LayerParameters layer = layer_parameters(kinds[index], model.hidden);
    add_optimizer_step(plan, PP_SCOPE_LAYER, PP_OP_OPTIMIZER_STEP, layer.dense, training.optimizer, index);
    add_optimizer_step(plan, PP_SCOPE_LAYER, PP_OP_OPTIMIZER_STEP_EXPERTS, layer.all_experts(), training.optimizer, index);
  }
  add_optimizer_step(plan, PP_SCOPE_HEAD, PP_OP_OPTIMIZER_STEP, parameters.head, training.optimizer);
}

}  // namespace paraplan::host
