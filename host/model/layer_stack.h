// paraplan/host/model/layer_stack.h: a model as a stack of layers of a few kinds (ABI 1.6).
//
// The recipe's [model] keys describe a model the way its published config does: a uniform
// transformer (every layer alike), or one with leading dense layers and MoE every k-th layer
// (DeepSeek-V3, Llama 4 Maverick), sliding-window attention with every n-th layer full (GPT-OSS),
// multi-head latent attention, multi-token prediction modules, or Megatron-LM's hybrid layer
// pattern (Nemotron-H: 'M' Mamba-2, '*' attention, '-' dense MLP, 'E' MoE, one sublayer each).
// LayerStack turns them into the distinct kinds (pp_layer_kind) and the kind of every layer, and
// fills pp_model's 1.6 fields to point at them.
//
//   LayerStackKeys keys;  keys.attention = "mla"; keys.dense_layers = 3; ...
//   LayerStack stack = LayerStack::build(shape, keys);   // throws LayerStackError(key, why)
//   stack.attach(shape);                                  // shape.layer_kinds -> stack
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "paraplan/model.h"

namespace paraplan::host {

// Dropout when a recipe does not say (Megatron-LM's hidden and attention dropout default); a
// model without the 1.6 fields (a 1.5 recipe or caller) means it too.
inline constexpr double kDefaultDropout = 0.1;

// What [model] says about the layers beyond the uniform shape; docs/recipes.md has each key.
struct LayerStackKeys {
  std::string attention;  // "mha", "gqa", "mla"; empty: mha or gqa as kv_heads says
  int64_t q_lora_rank = 0, kv_lora_rank = 0, qk_nope_head_dim = 0, qk_rope_head_dim = 0, v_head_dim = 0;
  int64_t dense_layers = 0;           // leading layers whose MLP is dense (before the MoE layers)
  int64_t moe_layer_freq = 1;         // after them, every k-th layer is an MoE layer
  int64_t moe_shared_ffn_hidden = 0;  // total width of the shared experts; 0 = count x expert width
  int64_t moe_router_groups = 0;      // group-limited routing: groups of experts (0 = none)
  int64_t moe_router_group_topk = 0;  // and how many of them a token's experts may come from
  int64_t sliding_window = 0;         // local attention span; 0 = full attention
  int64_t full_attention_every = 0;   // with a window: every n-th attention layer attends fully
  std::string layer_pattern;          // Megatron-LM's hybrid pattern; empty = a transformer stack
  int64_t mamba_heads = 0, mamba_head_dim = 0, mamba_state = 0, mamba_groups = 0, mamba_conv_kernel = 4;
  int64_t mtp_layers = 0;             // multi-token-prediction modules after the last layer
  bool linear_bias = false;           // biases on every linear layer (Megatron's add_bias_linear)
  double activation_clamp = 0;        // a GLU's inputs clamped to +-this (0 = none)
};

// A key whose value the stack cannot be built from, and why (the recipe reader adds the place).
class LayerStackError : public std::runtime_error {
 public:
  LayerStackError(std::string key, const std::string& message) : std::runtime_error(message), key_(std::move(key)) {}
  const std::string& key() const { return key_; }

 private:
  std::string key_;
};

class LayerStack {
 public:
  // The stack `keys` describe for the uniform fields of `shape` (layers, heads, ffn_*, moe_*).
  static LayerStack build(const pp_model& shape, const LayerStackKeys& keys);
  // One kind, every layer alike: what a model without 1.6 fields (or a 1.5 recipe) means.
  static LayerStack uniform(const pp_model& shape);
  // The stack a pp_model's 1.6 fields point at (copied), or uniform() when it has none.
  static LayerStack of(const pp_model& model);

  // Points model's 1.6 fields at this stack; it must outlive every use of them.
  void attach(pp_model& model) const;

  const std::vector<pp_layer_kind>& kinds() const { return kinds_; }
  std::vector<pp_layer_kind>& mutable_kinds() { return kinds_; }  // widths only (execute --scale)
  const std::vector<uint32_t>& sequence() const { return sequence_; }
  int64_t mtp_layers() const { return mtp_layers_; }
  bool uniform_stack() const { return kinds_.size() == 1; }

 private:
  uint32_t kind_index(const pp_layer_kind& kind);  // adds it when new
  std::vector<pp_layer_kind> kinds_;
  std::vector<uint32_t> sequence_;
  int64_t mtp_layers_ = 0;
};

// "mla+moe", "gqa-swa+moe", "mamba", "moe", "mtp:mla+moe": what a kind is, in a few letters.
std::string layer_kind_name(const pp_layer_kind& kind);

}  // namespace paraplan::host
