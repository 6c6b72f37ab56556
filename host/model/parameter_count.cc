#include "host/model/parameter_count.h"

#include "host/model/layer_stack.h"

namespace paraplan::host {
namespace {

double mlp_matrices(pp_ffn_type type) { return type == PP_FFN_SWIGLU ? 3.0 : 2.0; }

double mixer_parameters(const pp_layer_kind& kind, double h) {
  switch (kind.mixer) {
    case PP_MIXER_ATTENTION: {
      const double d = static_cast<double>(kind.head_dim), q = static_cast<double>(kind.heads) * d;
      const double kv = static_cast<double>(kind.kv_heads) * d;
      return h * (q + 2.0 * kv) + q * h;
    }
    case PP_MIXER_MLA: {
      const double heads = static_cast<double>(kind.heads), q_lora = static_cast<double>(kind.q_lora_rank);
      const double kv_lora = static_cast<double>(kind.kv_lora_rank), rope = static_cast<double>(kind.qk_rope_head_dim);
      const double qk = static_cast<double>(kind.qk_nope_head_dim) + rope, v = static_cast<double>(kind.v_head_dim);
      const double q = q_lora > 0 ? h * q_lora + q_lora + q_lora * heads * qk : h * heads * qk;
      const double kv = h * (kv_lora + rope) + kv_lora + kv_lora * heads * (static_cast<double>(kind.qk_nope_head_dim) + v);
      return q + kv + heads * v * h;
    }
    case PP_MIXER_MAMBA2: {
      const double heads = static_cast<double>(kind.mamba_heads);
      const double inner = heads * static_cast<double>(kind.mamba_head_dim);
      const double bc = 2.0 * static_cast<double>(kind.mamba_groups * kind.mamba_state);
      const double in_proj = h * (2.0 * inner + bc + heads);  // z, x, B, C, dt
      const double conv = (inner + bc) * (static_cast<double>(kind.mamba_conv_kernel) + 1.0);  // weights + bias
      return in_proj + conv + 3.0 * heads + inner + inner * h;  // A, D, dt bias; gated norm; out_proj
    }
    case PP_MIXER_NONE: return 0.0;
  }
  return 0.0;
}

}  // namespace

LayerParameters layer_parameters(const pp_layer_kind& kind, int64_t hidden) {
  const double h = static_cast<double>(hidden);
  LayerParameters counts;
  counts.dense = mixer_parameters(kind, h);
  if (kind.mixer != PP_MIXER_NONE) counts.dense += h;  // the mixer's norm
  const double matrices = mlp_matrices(kind.ffn_type);
  if (kind.mlp == PP_MLP_DENSE) counts.dense += matrices * h * static_cast<double>(kind.ffn_hidden) + h;
  if (kind.mlp == PP_MLP_MOE) {
    const double expert = matrices * h * static_cast<double>(kind.expert_ffn_hidden);
    counts.shared_experts = matrices * h * static_cast<double>(kind.shared_ffn_hidden);
    counts.dense += h * static_cast<double>(kind.experts) + h;  // router, norm
    counts.experts = static_cast<double>(kind.experts) * expert;
    counts.active_experts = static_cast<double>(kind.top_k) * expert;
  }
  // A multi-token-prediction module: norms of the hidden state and of the next token's
  // embedding, their 2h -> h projection, and the norm before the shared output head.
  if (kind.mtp) counts.dense += 3.0 * h + 2.0 * h * h;
  return counts;
}

ModelParameters count_model_parameters(const pp_model& model) {
  const LayerStack stack = LayerStack::of(model);
  const double h = static_cast<double>(model.hidden), vocab = static_cast<double>(model.vocab);
  const bool tied = model.struct_size >= sizeof(pp_model) && model.tied_embeddings;
  ModelParameters counts;
  counts.embedding = vocab * h;
  counts.head = (tied ? 0.0 : vocab * h) + h;
  counts.active = counts.embedding + counts.head;
  for (const pp_layer_kind& kind : stack.kinds()) {
    const LayerParameters layer = layer_parameters(kind, model.hidden);
    const double count = static_cast<double>(kind.count);
    (kind.mtp ? counts.mtp : counts.layers) += count * layer.total();
    if (!kind.mtp) counts.active += count * layer.active();
  }
  return counts;
}

}  // namespace paraplan::host
