#include "host/plan/workload_builder.h"

#include <string>

#include "paraplan/sdk.hpp"

namespace paraplan::host {
namespace {

constexpr const char* kOwner = PP_OWNER_MODEL;
constexpr double kActivationBytes = 2.0;  // bf16/fp16 activations, also under fp8 GEMMs
constexpr double kResidualAddBytes = 3.0 * kActivationBytes + 1.0;  // two reads, a write, a dropout mask

struct Shape {
  double tokens, seq, batch, hidden, heads, kv_heads, head_dim, ffn, vocab;
  double experts, top_k, expert_ffn, shared_experts;
  bool swiglu, moe;
};

Shape shape_of(const pp_model& model, const pp_training& training) {
  Shape shape{};
  shape.batch = static_cast<double>(training.micro_batch);
  shape.seq = static_cast<double>(model.seq_len);
  shape.tokens = shape.batch * shape.seq;
  shape.hidden = static_cast<double>(model.hidden);
  shape.heads = static_cast<double>(model.heads);
  shape.kv_heads = static_cast<double>(model.kv_heads);
  shape.head_dim = static_cast<double>(model.head_dim);
  shape.ffn = static_cast<double>(model.ffn_hidden);
  shape.vocab = static_cast<double>(model.vocab);
  shape.experts = static_cast<double>(model.moe_experts);
  shape.top_k = static_cast<double>(model.moe_top_k);
  shape.expert_ffn = static_cast<double>(model.moe_ffn_hidden);
  shape.shared_experts = static_cast<double>(model.moe_shared_experts);
  shape.swiglu = model.ffn_type == PP_FFN_SWIGLU;
  shape.moe = model.moe_experts > 0;
  return shape;
}

pp_dtype gemm_dtype(const pp_training& training) {
  switch (training.precision) {
    case PP_PRECISION_FP8: return PP_DTYPE_FP8;
    case PP_PRECISION_FP16: return PP_DTYPE_FP16;
    default: return PP_DTYPE_BF16;
  }
}

// Emits the forward op and its backward (twice the work: input and weight gradients) and, when
// the recipe recomputes it, the re-run forward.
class OpEmitter {
 public:
  OpEmitter(Plan& plan, pp_scope scope, pp_dtype dtype, pp_recompute recompute)
      : plan_(plan), scope_(scope), dtype_(dtype), recompute_(recompute) {}

  void gemm(const char* name, double m, double n, double k) {
    pp_op op = make_op(PP_OP_GEMM, PP_PHASE_FORWARD, scope_, name, kOwner);
    op.m = m, op.n = n, op.k = k, op.count = 1;
    op.flops = 2.0 * m * n * k;
    op.dtype = dtype_;
    emit(op, /*attention=*/false);
  }
  // QK^T and (softmax)V: two s x s x d products per head, the full square counted as Megatron-LM
  // counts it, causal or not. A fused (flash) kernel is one op priced by the hardware's attention
  // efficiency, which absorbs the masked half it skips; unfused, they are two batched GEMMs over
  // the whole square (heads stacked into m, so one launch each, as cuBLAS runs them).
  void attention(double seq, double head_dim, double batch_heads, bool fused) {
    const pp_dtype dtype = dtype_ == PP_DTYPE_FP8 ? PP_DTYPE_BF16 : dtype_;
    if (fused) {
      pp_op op = make_op(PP_OP_ATTENTION, PP_PHASE_FORWARD, scope_, PP_OP_ATTENTION_CORE, kOwner);
      op.m = seq, op.n = seq, op.k = head_dim, op.count = batch_heads;
      op.flops = 4.0 * seq * seq * head_dim * batch_heads;
      op.dtype = dtype;
      emit(op, /*attention=*/true);
      return;
    }
    auto batched = [&](const char* name, double n, double k) {
      pp_op op = make_op(PP_OP_GEMM, PP_PHASE_FORWARD, scope_, name, kOwner);
      op.m = batch_heads * seq, op.n = n, op.k = k, op.count = 1;
      op.flops = 2.0 * op.m * n * k;
      op.dtype = dtype;
      emit(op, /*attention=*/true);
    };
    batched(PP_OP_ATTENTION_SCORES, seq, head_dim);   // Q K^T: s x d times d x s per head
    batched(PP_OP_ATTENTION_CONTEXT, head_dim, seq);  // P V: s x s times s x d per head
  }
  // A memory-bound kernel moving `bytes` forward and `backward_bytes` backward (default: twice
  // the forward, a gradient for each input read).
  void memory_bound(const char* name, double bytes, double backward_bytes = -1.0, bool attention = false) {
    pp_op op = make_op(PP_OP_MEMORY, PP_PHASE_FORWARD, scope_, name, kOwner);
    op.bytes = bytes;
    emit(op, attention, backward_bytes >= 0 ? backward_bytes : 2.0 * bytes);
  }

 private:
  void emit(pp_op op, bool attention, double backward_bytes = -1.0) {
    plan_.ops().push_back(op);
    pp_op backward = op;
    backward.phase = PP_PHASE_BACKWARD;
    backward.flops *= 2.0;
    backward.bytes = backward_bytes >= 0 ? backward_bytes : 2.0 * op.bytes;
    plan_.ops().push_back(backward);
    bool recomputed = recompute_ == PP_RECOMPUTE_FULL || (recompute_ == PP_RECOMPUTE_SELECTIVE && attention);
    if (recomputed && scope_ == PP_SCOPE_LAYER) {
      op.phase = PP_PHASE_RECOMPUTE;
      plan_.ops().push_back(op);
    }
  }

  Plan& plan_;
  pp_scope scope_;
  pp_dtype dtype_;
  pp_recompute recompute_;
};

void add_memory(Plan& plan, pp_memory_kind kind, pp_scope scope, const char* name, double bytes) {
  plan.memory().push_back(make_memory_item(kind, scope, name, kOwner, bytes));
}

// Mixed-precision training state per parameter (Rajbhandari et al. 2020): 2-byte weights,
// gradients of 2 bytes (ZeRO) or 4 (Megatron-LM's fp32 main grads), and fp32 master weights plus
// the optimizer's fp32 moments (Adam: m and v): 16 or 18 bytes per parameter.
void add_model_state(Plan& plan, pp_scope scope, const char* suffix, double parameters, pp_optimizer optimizer,
                     double gradient_bytes) {
  double optimizer_bytes = optimizer == PP_OPTIMIZER_ADAM ? 12.0 : 8.0;
  add_memory(plan, PP_MEMORY_PARAMETERS, scope, (std::string(PP_MEMORY_PREFIX_WEIGHTS) + suffix).c_str(),
             2.0 * parameters);
  add_memory(plan, PP_MEMORY_GRADIENTS, scope, (std::string(PP_MEMORY_PREFIX_GRADS) + suffix).c_str(),
             gradient_bytes * parameters);
  add_memory(plan, PP_MEMORY_OPTIMIZER, scope, (std::string(PP_MEMORY_PREFIX_OPTIMIZER) + suffix).c_str(),
             optimizer_bytes * parameters);
}

// The optimizer update is memory-bound: Adam reads fp32 master, m, v and the gradient and
// writes master, m, v and the 2-byte weights: 16 + 14 = 30 bytes per parameter (SGD: 18).
void add_optimizer_step(Plan& plan, pp_scope scope, const char* name, double parameters, pp_optimizer optimizer) {
  if (parameters <= 0) return;
  pp_op op = make_op(PP_OP_MEMORY, PP_PHASE_STEP, scope, name, kOwner);
  op.frequency = PP_PER_STEP;
  op.bytes = (optimizer == PP_OPTIMIZER_ADAM ? 30.0 : 18.0) * parameters;
  plan.ops().push_back(op);
}

// FP8 training (Transformer Engine) casts every GEMM input to FP8 before the forward GEMM and every
// output gradient before the backward GEMMs, each with a transposed copy for the weight gradient:
// read 2 bytes, write 1 + 1, per element (the weights' casts are cached across a step's
// micro-batches). Split by where the tensors live: the layer's and the MLP's inputs and the
// gradients arriving from the residual stream are sequence-region tensors (SP divides them);
// the rest are tensor-parallel widths (TP divides them); the experts' follow the routed tokens.
void add_fp8_casts(OpEmitter& emit, const Shape& s, double routed_tokens, double ffn) {
  constexpr double kCastBytes = 4.0;
  const double t = s.tokens, h = s.hidden, q_width = s.heads * s.head_dim;
  const double qkv_width = q_width + 2.0 * s.kv_heads * s.head_dim, up_outputs = s.swiglu ? 2.0 : 1.0;
  const double blocks = s.moe ? 1.0 : 2.0;  // an MoE layer's MLP inputs and gradients are the experts'
  emit.memory_bound(PP_OP_FP8_CAST_SEQ, kCastBytes * t * h * blocks, kCastBytes * t * h * blocks);
  emit.memory_bound(PP_OP_FP8_CAST_TENSOR, kCastBytes * t * (q_width + (s.moe ? 0.0 : ffn)),
                    kCastBytes * t * (qkv_width + (s.moe ? 0.0 : up_outputs * ffn)));
  if (s.moe)
    emit.memory_bound(PP_OP_FP8_CAST_EXPERT, kCastBytes * routed_tokens * (h + ffn),
                      kCastBytes * routed_tokens * (up_outputs * ffn + h));
}

void add_layer(Plan& plan, const Shape& s, const pp_training& training, const WorkloadOptions& options) {
  OpEmitter emit(plan, PP_SCOPE_LAYER, gemm_dtype(training), training.recompute);
  const double t = s.tokens, h = s.hidden, d = s.head_dim;
  const double q_width = s.heads * d, kv_width = s.kv_heads * d;
  emit.memory_bound(PP_OP_ATTN_NORM, 2.0 * kActivationBytes * t * h);
  emit.gemm(PP_OP_QKV, t, q_width + 2.0 * kv_width, h);
  emit.attention(s.seq, d, s.batch * s.heads, options.flash_attention);
  if (!options.flash_attention) {
    // Without a fused attention kernel the b·a·s² scores go through HBM: scale-mask-softmax
    // reads and writes them (2 + 2 bytes each), dropout reads them, writes them and a 1-byte
    // mask (5); backward, dropout's gradient (read 2 + mask 1, write 2) and softmax's (read
    // probabilities and gradient, write 2 + 2 + 2). Recomputed with the core (selective).
    const double scores = s.batch * s.heads * s.seq * s.seq;
    emit.memory_bound(PP_OP_ATTENTION_SOFTMAX, 9.0 * scores, 11.0 * scores, /*attention=*/true);
  }
  emit.gemm(PP_OP_ATTN_OUT, t, h, q_width);
  // Bias, dropout and residual add after each block, fused (Megatron-LM's bias_dropout_add):
  // read the block's output and the residual stream, write the sum and the 1-byte mask forward
  // (7 bytes per element); backward reads the gradient and mask and writes both branches' (7).
  emit.memory_bound(PP_OP_ATTN_RESIDUAL, kResidualAddBytes * t * h, kResidualAddBytes * t * h);
  emit.memory_bound(PP_OP_MLP_NORM, 2.0 * kActivationBytes * t * h);
  double ffn = s.ffn;
  double routed_tokens = t;
  if (s.moe) {
    emit.gemm(PP_OP_ROUTER, t, s.experts, h);
    // Each token visits top_k routed experts plus every shared expert.
    routed_tokens = t * (s.top_k + s.shared_experts);
    ffn = s.expert_ffn;
    emit.gemm(PP_OP_EXPERT_UP, routed_tokens, ffn, h);
    if (s.swiglu) emit.gemm(PP_OP_EXPERT_GATE, routed_tokens, ffn, h);
    emit.memory_bound(PP_OP_EXPERT_ACT, (s.swiglu ? 3.0 : 2.0) * kActivationBytes * routed_tokens * ffn);
    emit.gemm(PP_OP_EXPERT_DOWN, routed_tokens, h, ffn);
  } else {
    emit.gemm(PP_OP_MLP_UP, t, ffn, h);
    if (s.swiglu) emit.gemm(PP_OP_MLP_GATE, t, ffn, h);
    emit.memory_bound(PP_OP_MLP_ACT, (s.swiglu ? 3.0 : 2.0) * kActivationBytes * t * ffn);
    emit.gemm(PP_OP_MLP_DOWN, t, h, ffn);
  }
  emit.memory_bound(PP_OP_MLP_RESIDUAL, kResidualAddBytes * t * h, kResidualAddBytes * t * h);
  if (training.precision == PP_PRECISION_FP8) add_fp8_casts(emit, s, routed_tokens, ffn);

  // Activations kept for backward, per layer and micro-batch (Korthikanti et al. 2022, sec. 4.1,
  // generalised to GQA and SwiGLU): 34·s·b·h + 5·a·s²·b for a GELU MLP with f = 4h.
  const double sbh = t * h;
  auto act = [&](const char* name, double bytes) { add_memory(plan, PP_MEMORY_ACTIVATIONS, PP_SCOPE_LAYER, name, bytes); };
  if (training.recompute == PP_RECOMPUTE_FULL) {
    act(PP_MEMORY_ACT_LAYER_INPUT, kActivationBytes * sbh);
    return;
  }
  // FP8 training (Transformer Engine) keeps a GEMM's input for the weight gradient as the 1-byte
  // cast it multiplied; tensors other kernels read back (norm inputs, Q/K/V) stay 2 bytes.
  const double gemm_input_bytes = training.precision == PP_PRECISION_FP8 ? 1.0 : kActivationBytes;
  act(PP_MEMORY_ACT_ATTN_NORM_INPUT, kActivationBytes * sbh);
  act(PP_MEMORY_ACT_QKV_INPUT, gemm_input_bytes * sbh);
  act(PP_MEMORY_ACT_Q, kActivationBytes * t * q_width);
  act(PP_MEMORY_ACT_K, kActivationBytes * t * kv_width);
  act(PP_MEMORY_ACT_V, kActivationBytes * t * kv_width);
  if (!options.flash_attention && training.recompute != PP_RECOMPUTE_SELECTIVE)
    act(PP_MEMORY_ACT_ATTENTION_SCORES, 5.0 * s.heads * s.seq * s.seq * s.batch);  // softmax 2 + mask 1 + dropout 2
  act(PP_MEMORY_ACT_ATTN_OUT_INPUT, gemm_input_bytes * t * q_width);
  act(PP_MEMORY_ACT_ATTN_DROPOUT_MASK, sbh);  // 1 byte per element
  act(PP_MEMORY_ACT_MLP_NORM_INPUT, kActivationBytes * sbh);
  act(PP_MEMORY_ACT_MLP_INPUT, gemm_input_bytes * sbh);
  // GELU keeps its input and output (2 tensors of width f), SwiGLU gate, up and their product;
  // the last of them is the down projection's input.
  const double hidden_bytes = (s.swiglu ? 2.0 : 1.0) * kActivationBytes + gemm_input_bytes;
  if (s.moe) {
    act(PP_MEMORY_ACT_ROUTER_PROBS, 4.0 * t * s.experts);  // the router is not split by TP
    act(PP_MEMORY_ACT_EXPERT_INPUT, gemm_input_bytes * routed_tokens * h);
    act(PP_MEMORY_ACT_EXPERT_HIDDEN, hidden_bytes * routed_tokens * ffn);
  } else {
    act(PP_MEMORY_ACT_MLP_HIDDEN, hidden_bytes * t * ffn);
  }
  act(PP_MEMORY_ACT_MLP_DROPOUT_MASK, sbh);
}

}  // namespace

ParameterCounts count_parameters(const pp_model& model) {
  const double h = static_cast<double>(model.hidden), d = static_cast<double>(model.head_dim);
  const double attention = h * (static_cast<double>(model.heads) + 2.0 * static_cast<double>(model.kv_heads)) * d +
                           static_cast<double>(model.heads) * d * h;
  const double matrices = model.ffn_type == PP_FFN_SWIGLU ? 3.0 : 2.0;
  ParameterCounts counts;
  double dense_mlp = matrices * h * static_cast<double>(model.ffn_hidden);
  if (model.moe_experts > 0) {
    const double experts = static_cast<double>(model.moe_experts + model.moe_shared_experts);
    counts.experts_per_layer = experts * matrices * h * static_cast<double>(model.moe_ffn_hidden);
    dense_mlp = h * static_cast<double>(model.moe_experts);  // the router
  }
  counts.per_layer = attention + dense_mlp + 2.0 * h;  // + two norm weight vectors
  counts.embedding = static_cast<double>(model.vocab) * h;
  counts.head = static_cast<double>(model.vocab) * h + h;  // untied output matrix + final norm
  return counts;
}

void build_workload(Plan& plan, const WorkloadOptions& options) {
  const pp_model& model = plan.model();
  const pp_training& training = plan.training();
  const Shape s = shape_of(model, training);
  const ParameterCounts parameters = count_parameters(model);

  OpEmitter embedding(plan, PP_SCOPE_EMBEDDING, gemm_dtype(training), training.recompute);
  embedding.memory_bound(PP_OP_EMBEDDING, 2.0 * kActivationBytes * s.tokens * s.hidden);  // gather rows, write
  add_memory(plan, PP_MEMORY_ACTIVATIONS, PP_SCOPE_EMBEDDING, PP_MEMORY_ACT_EMBEDDING_DROPOUT_MASK,
             s.tokens * s.hidden);

  add_layer(plan, s, training, options);

  OpEmitter head(plan, PP_SCOPE_HEAD, gemm_dtype(training), training.recompute);
  head.memory_bound(PP_OP_FINAL_NORM, 2.0 * kActivationBytes * s.tokens * s.hidden);
  head.gemm(PP_OP_LOGITS, s.tokens, s.vocab, s.hidden);
  head.memory_bound(PP_OP_LOSS, 3.0 * 4.0 * s.tokens * s.vocab);  // fp32 softmax: read logits, write probs, read for grad
  add_memory(plan, PP_MEMORY_ACTIVATIONS, PP_SCOPE_HEAD, PP_MEMORY_ACT_LOGITS, 4.0 * s.tokens * s.vocab);

  const double gradient_bytes = options.fp32_main_grads ? 4.0 : 2.0;
  add_model_state(plan, PP_SCOPE_EMBEDDING, PP_MEMORY_SUFFIX_EMBEDDING, parameters.embedding, training.optimizer,
                  gradient_bytes);
  add_model_state(plan, PP_SCOPE_LAYER, PP_MEMORY_SUFFIX_LAYER, parameters.per_layer, training.optimizer,
                  gradient_bytes);
  if (parameters.experts_per_layer > 0)
    add_model_state(plan, PP_SCOPE_LAYER, PP_MEMORY_SUFFIX_EXPERTS, parameters.experts_per_layer, training.optimizer,
                    gradient_bytes);
  add_model_state(plan, PP_SCOPE_HEAD, PP_MEMORY_SUFFIX_HEAD, parameters.head, training.optimizer, gradient_bytes);
  add_optimizer_step(plan, PP_SCOPE_EMBEDDING, PP_OP_OPTIMIZER_STEP, parameters.embedding, training.optimizer);
  add_optimizer_step(plan, PP_SCOPE_LAYER, PP_OP_OPTIMIZER_STEP, parameters.per_layer, training.optimizer);
  add_optimizer_step(plan, PP_SCOPE_LAYER, PP_OP_OPTIMIZER_STEP_EXPERTS, parameters.experts_per_layer,
                     training.optimizer);
  add_optimizer_step(plan, PP_SCOPE_HEAD, PP_OP_OPTIMIZER_STEP, parameters.head, training.optimizer);
}

}  // namespace paraplan::host
