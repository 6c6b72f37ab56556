#include "host/model/layer_stack.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace paraplan::host {
namespace {

std::string text(int64_t value) { return std::to_string(value); }

pp_layer_kind blank_kind() {
  pp_layer_kind kind{};
  kind.struct_size = sizeof(pp_layer_kind);
  kind.count = 0;
  kind.mixer = PP_MIXER_NONE;
  kind.mlp = PP_MLP_NONE;
  return kind;
}

void set_attention(pp_layer_kind& kind, const pp_model& shape, const LayerStackKeys& keys) {
  kind.heads = shape.heads;
  kind.kv_heads = shape.kv_heads;
  kind.head_dim = shape.head_dim;
  if (keys.attention == "mla") {
    kind.mixer = PP_MIXER_MLA;
    kind.q_lora_rank = keys.q_lora_rank;
    kind.kv_lora_rank = keys.kv_lora_rank;
    kind.qk_nope_head_dim = keys.qk_nope_head_dim;
    kind.qk_rope_head_dim = keys.qk_rope_head_dim;
    kind.v_head_dim = keys.v_head_dim;
  } else {
    kind.mixer = PP_MIXER_ATTENTION;
  }
}

void set_mamba(pp_layer_kind& kind, const LayerStackKeys& keys) {
  kind.mixer = PP_MIXER_MAMBA2;
  kind.mamba_heads = keys.mamba_heads;
  kind.mamba_head_dim = keys.mamba_head_dim;
  kind.mamba_state = keys.mamba_state;
  kind.mamba_groups = keys.mamba_groups;
  kind.mamba_conv_kernel = keys.mamba_conv_kernel;
}

void set_dense_mlp(pp_layer_kind& kind, const pp_model& shape) {
  kind.mlp = PP_MLP_DENSE;
  kind.ffn_type = shape.ffn_type;
  kind.ffn_hidden = shape.ffn_hidden;
}

void set_moe_mlp(pp_layer_kind& kind, const pp_model& shape, const LayerStackKeys& keys) {
  kind.mlp = PP_MLP_MOE;
  kind.ffn_type = shape.ffn_type;
  kind.experts = shape.moe_experts;
  kind.top_k = shape.moe_top_k;
  kind.expert_ffn_hidden = shape.moe_ffn_hidden;
  kind.shared_experts = shape.moe_shared_experts;
  kind.shared_ffn_hidden =
      keys.moe_shared_ffn_hidden > 0 ? keys.moe_shared_ffn_hidden : shape.moe_shared_experts * shape.moe_ffn_hidden;
  kind.router_groups = keys.moe_router_groups;
  kind.router_group_topk = keys.moe_router_group_topk;
}

// Layer i's window under the sliding-window keys (GPT-OSS: window 128, every 2nd layer full,
// the first sliding; Megatron-Bridge and Hugging Face count the same way).
int64_t window_of(int64_t attention_index, const LayerStackKeys& keys) {
  if (keys.sliding_window <= 0) return 0;
  const bool full = keys.full_attention_every > 0 && (attention_index + 1) % keys.full_attention_every == 0;
  return full ? 0 : keys.sliding_window;
}

// Megatron-Core's rules for group-limited routing (TransformerConfig), and the pool of the kept
// groups holding at least top_k experts, each kept group supplying one or more of them.
void check_router_groups(const pp_model& shape, const LayerStackKeys& keys) {
  const int64_t groups = keys.moe_router_groups, kept = keys.moe_router_group_topk;
  if (groups == 0 && kept == 0) return;
  if (shape.moe_experts == 0)
    throw LayerStackError(groups ? "moe_router_groups" : "moe_router_group_topk", "needs moe_experts > 0");
  if (groups == 0) throw LayerStackError("moe_router_group_topk", "needs moe_router_groups (the groups it picks from)");
  if (kept == 0) throw LayerStackError("moe_router_groups", "needs moe_router_group_topk (how many groups a token may use)");
  if (shape.moe_experts % groups != 0)
    throw LayerStackError("moe_router_groups", text(groups) + " must divide moe_experts = " + text(shape.moe_experts));
  if (kept > groups)
    throw LayerStackError("moe_router_group_topk", text(kept) + " exceeds moe_router_groups = " + text(groups));
  if (kept > shape.moe_top_k)
    throw LayerStackError("moe_router_group_topk", text(kept) + " exceeds moe_top_k = " + text(shape.moe_top_k) +
                                                       " (each kept group supplies one of a token's experts at least)");
  if (kept * (shape.moe_experts / groups) < shape.moe_top_k)
    throw LayerStackError("moe_router_group_topk", text(kept) + " groups of " + text(shape.moe_experts / groups) +
                                                       " experts hold fewer than moe_top_k = " + text(shape.moe_top_k));
}

void check_keys(const pp_model& shape, const LayerStackKeys& keys) {
  auto positive = [](int64_t value) { return value > 0; };
  if (!keys.attention.empty() && keys.attention != "mha" && keys.attention != "gqa" && keys.attention != "mla")
    throw LayerStackError("attention", "\"" + keys.attention + "\" is not one of \"mha\", \"gqa\", \"mla\"");
  const bool mla = keys.attention == "mla";
  const bool mla_keys = keys.q_lora_rank || keys.kv_lora_rank || keys.qk_nope_head_dim || keys.qk_rope_head_dim || keys.v_head_dim;
  if (mla_keys && !mla) throw LayerStackError("kv_lora_rank", "the MLA shapes need attention = \"mla\"");
  if (mla) {
    for (auto [key, value] : {std::pair{"kv_lora_rank", keys.kv_lora_rank}, {"qk_nope_head_dim", keys.qk_nope_head_dim},
                              {"qk_rope_head_dim", keys.qk_rope_head_dim}, {"v_head_dim", keys.v_head_dim}})
      if (!positive(value)) throw LayerStackError(key, "is required with attention = \"mla\"");
    if (shape.kv_heads != shape.heads)
      throw LayerStackError("kv_heads", "MLA gives every query head its own key and value: kv_heads must equal heads = " +
                                            text(shape.heads) + " (or be left out)");
  }
  if (keys.attention == "mha" && shape.kv_heads != shape.heads)
    throw LayerStackError("attention", "\"mha\" has kv_heads = heads, but kv_heads = " + text(shape.kv_heads));
  if (keys.attention == "gqa" && shape.kv_heads == shape.heads && shape.heads > 1)
    throw LayerStackError("attention", "\"gqa\" needs fewer kv_heads than heads = " + text(shape.heads));
  const bool moe = shape.moe_experts > 0;
  if (!moe && keys.dense_layers > 0) throw LayerStackError("dense_layers", "leading dense layers need moe_experts > 0");
  if (!moe && keys.moe_layer_freq > 1) throw LayerStackError("moe_layer_freq", "needs moe_experts > 0");
  if (!moe && keys.moe_shared_ffn_hidden > 0) throw LayerStackError("moe_shared_ffn_hidden", "needs moe_experts > 0");
  if (keys.moe_shared_ffn_hidden > 0 && shape.moe_shared_experts == 0)
    throw LayerStackError("moe_shared_ffn_hidden", "needs moe_shared_experts > 0");
  if (keys.moe_layer_freq < 1) throw LayerStackError("moe_layer_freq", "must be at least 1");
  check_router_groups(shape, keys);
  if (keys.activation_clamp > 0 && shape.ffn_type != PP_FFN_SWIGLU)
    throw LayerStackError("activation_clamp", "clamps a gated linear unit's two halves: it needs ffn_type = \"swiglu\"");
  if (keys.full_attention_every > 0 && keys.sliding_window == 0)
    throw LayerStackError("full_attention_every", "needs sliding_window > 0");
  if (keys.sliding_window > shape.seq_len)
    throw LayerStackError("sliding_window", text(keys.sliding_window) + " is longer than seq_len = " + text(shape.seq_len));
  const bool pattern = !keys.layer_pattern.empty();
  const bool mamba_keys = keys.mamba_heads || keys.mamba_head_dim || keys.mamba_state || keys.mamba_groups;
  if (pattern) {
    if (keys.dense_layers > 0 || keys.moe_layer_freq > 1)
      throw LayerStackError(keys.dense_layers > 0 ? "dense_layers" : "moe_layer_freq",
                            "cannot be combined with layer_pattern, which places every MLP itself");
    if (static_cast<int64_t>(keys.layer_pattern.size()) != shape.layers)
      throw LayerStackError("layer_pattern", "has " + text(static_cast<int64_t>(keys.layer_pattern.size())) +
                                                 " letters, but layers = " + text(shape.layers));
    bool has_mamba = false;
    for (size_t i = 0; i < keys.layer_pattern.size(); ++i) {
      const char letter = keys.layer_pattern[i];
      if (letter != 'M' && letter != '*' && letter != '-' && letter != 'E')
        throw LayerStackError("layer_pattern", "letter " + text(static_cast<int64_t>(i) + 1) + " is '" +
                                                   std::string(1, letter) +
                                                   "', not M (Mamba-2), * (attention), - (dense MLP) or E (MoE)");
      if (letter == 'E' && !moe) throw LayerStackError("layer_pattern", "has MoE layers ('E') but moe_experts = 0");
      has_mamba = has_mamba || letter == 'M';
    }
    if (has_mamba)
      for (auto [key, value] : {std::pair{"mamba_heads", keys.mamba_heads}, {"mamba_head_dim", keys.mamba_head_dim},
                                {"mamba_state", keys.mamba_state}, {"mamba_groups", keys.mamba_groups}})
        if (!positive(value)) throw LayerStackError(key, "is required for the Mamba-2 layers ('M') of layer_pattern");
    if (has_mamba && keys.mamba_heads % keys.mamba_groups != 0)
      throw LayerStackError("mamba_groups", text(keys.mamba_groups) + " must divide mamba_heads = " + text(keys.mamba_heads));
    if (!has_mamba && mamba_keys) throw LayerStackError("mamba_heads", "the Mamba-2 shapes need 'M' layers in layer_pattern");
  } else {
    if (mamba_keys) throw LayerStackError("mamba_heads", "the Mamba-2 shapes need a layer_pattern with 'M' layers");
    if (keys.dense_layers > shape.layers)
      throw LayerStackError("dense_layers", text(keys.dense_layers) + " exceeds layers = " + text(shape.layers));
  }
  if (keys.mtp_layers < 0) throw LayerStackError("mtp_layers", "must be 0 or more");
}

bool same_kind(const pp_layer_kind& a, const pp_layer_kind& b) {
  // Every field but the count; the struct is zero-initialised, so padding compares equal too.
  pp_layer_kind x = a, y = b;
  x.count = y.count = 0;
  return std::memcmp(&x, &y, sizeof(pp_layer_kind)) == 0;
}

}  // namespace

std::string layer_kind_name(const pp_layer_kind& kind) {
  std::string mixer;
  switch (kind.mixer) {
    case PP_MIXER_ATTENTION:
      mixer = kind.kv_heads == kind.heads ? "mha" : kind.kv_heads == 1 ? "mqa" : "gqa";
      if (kind.sliding_window > 0) mixer += "-swa";
      break;
    case PP_MIXER_MLA: mixer = kind.sliding_window > 0 ? "mla-swa" : "mla"; break;
    case PP_MIXER_MAMBA2: mixer = "mamba"; break;
    case PP_MIXER_NONE: break;
  }
  const char* mlp = kind.mlp == PP_MLP_DENSE ? "dense" : kind.mlp == PP_MLP_MOE ? "moe" : "";
  std::string name = mixer.empty() ? mlp : *mlp ? mixer + "+" + mlp : mixer;
  return kind.mtp ? "mtp:" + name : name;
}

uint32_t LayerStack::kind_index(const pp_layer_kind& kind) {
  for (size_t i = 0; i < kinds_.size(); ++i)
    if (same_kind(kinds_[i], kind)) return static_cast<uint32_t>(i);
  kinds_.push_back(kind);
  return static_cast<uint32_t>(kinds_.size() - 1);
}

LayerStack LayerStack::build(const pp_model& shape, const LayerStackKeys& keys) {
  check_keys(shape, keys);
  LayerStack stack;
  const bool moe = shape.moe_experts > 0;
  int64_t attention_index = 0;
  auto add = [&](pp_layer_kind kind) {
    const std::string name = layer_kind_name(kind);
    std::memset(kind.name, 0, sizeof(kind.name));
    std::strncpy(kind.name, name.c_str(), sizeof(kind.name) - 1);
    const uint32_t index = stack.kind_index(kind);
    stack.kinds_[index].count += 1;
    stack.sequence_.push_back(index);
  };
  for (int64_t i = 0; i < shape.layers; ++i) {
    pp_layer_kind kind = blank_kind();
    const char letter = keys.layer_pattern.empty() ? '\0' : keys.layer_pattern[static_cast<size_t>(i)];
    if (letter == '\0' || letter == '*') {
      set_attention(kind, shape, keys);
      kind.sliding_window = window_of(attention_index++, keys);
    }
    if (letter == 'M') set_mamba(kind, keys);
    if (letter == '-') set_dense_mlp(kind, shape);
    if (letter == 'E') set_moe_mlp(kind, shape, keys);
    if (letter == '\0') {
      const bool moe_layer = moe && i >= keys.dense_layers && (i - keys.dense_layers + 1) % keys.moe_layer_freq == 0;
      if (moe_layer)
        set_moe_mlp(kind, shape, keys);
      else
        set_dense_mlp(kind, shape);
    }
    kind.linear_bias = keys.linear_bias ? 1 : 0;
    if (kind.mlp != PP_MLP_NONE) kind.activation_clamp = keys.activation_clamp;
    add(kind);
  }
  // A multi-token-prediction module repeats the last layer's kind (DeepSeek-V3, Megatron-LM).
  if (keys.mtp_layers > 0 && stack.sequence_.empty()) throw LayerStackError("mtp_layers", "needs layers > 0");
  for (int64_t i = 0; i < keys.mtp_layers; ++i) {
    const pp_layer_kind last = stack.kinds_[stack.sequence_[static_cast<size_t>(shape.layers) - 1]];
    pp_layer_kind kind = last;
    kind.count = 0;
    kind.mtp = 1;
    add(kind);
  }
  stack.mtp_layers_ = keys.mtp_layers;
  return stack;
}

LayerStack LayerStack::uniform(const pp_model& shape) { return build(shape, LayerStackKeys{}); }

LayerStack LayerStack::of(const pp_model& model) {
  if (model.struct_size < offsetof(pp_model, norm_epsilon) + sizeof(double) || model.layer_kind_count == 0 ||
      !model.layer_kinds || !model.layer_sequence)
    return uniform(model);
  LayerStack stack;
  const auto* base = reinterpret_cast<const unsigned char*>(model.layer_kinds);
  for (uint32_t i = 0; i < model.layer_kind_count; ++i) {
    pp_layer_kind kind = blank_kind();
    std::memcpy(&kind, base + static_cast<size_t>(i) * model.layer_kind_stride,
                std::min<size_t>(model.layer_kind_stride, sizeof(pp_layer_kind)));
    kind.struct_size = sizeof(pp_layer_kind);
    stack.kinds_.push_back(kind);
  }
  stack.sequence_.assign(model.layer_sequence, model.layer_sequence + model.layer_sequence_length);
  stack.mtp_layers_ = model.mtp_layers;
  return stack;
}

void LayerStack::attach(pp_model& model) const {
  model.layer_kinds = kinds_.data();
  model.layer_kind_count = static_cast<uint32_t>(kinds_.size());
  model.layer_kind_stride = sizeof(pp_layer_kind);
  model.layer_sequence = sequence_.data();
  model.layer_sequence_length = static_cast<int64_t>(sequence_.size());
  model.mtp_layers = mtp_layers_;
}

}  // namespace paraplan::host
