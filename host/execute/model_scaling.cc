#include "host/execute/model_scaling.h"

#include <algorithm>
#include <cmath>

#include "host/core/errors.h"

namespace paraplan::host {
namespace {

int64_t scaled_multiple(int64_t value, double factor, int64_t multiple) {
  const double scaled = std::round(static_cast<double>(value) * factor / static_cast<double>(multiple));
  return std::max<int64_t>(1, static_cast<int64_t>(scaled)) * multiple;
}

}  // namespace

void scale_model(pp_model& model, double factor) {
  if (!(factor > 0 && factor <= 1))
    throw UsageError("--scale " + std::to_string(factor) + ": expected a factor in (0, 1], e.g. 0.0625 for 1/16");
  if (factor == 1) return;
  const bool hidden_is_heads_times_dim = model.hidden == model.heads * model.head_dim;
  model.head_dim = std::max<int64_t>(1, std::llround(static_cast<double>(model.head_dim) * factor));
  model.hidden = hidden_is_heads_times_dim ? model.heads * model.head_dim
                                           : scaled_multiple(model.hidden, factor, std::max<int64_t>(model.heads, 1));
  model.ffn_hidden = scaled_multiple(model.ffn_hidden, factor, 64);
  if (model.moe_ffn_hidden > 0) model.moe_ffn_hidden = scaled_multiple(model.moe_ffn_hidden, factor, 64);
  model.vocab = scaled_multiple(model.vocab, factor, 128);
  model.seq_len = scaled_multiple(model.seq_len, factor, 64);
}

void scale_model(ModelSpec& model, double factor) {
  scale_model(model.shape, factor);
  if (factor == 1) return;
  const pp_model& shape = model.shape;
  auto at_least_one = [&](int64_t value) {
    return value > 0 ? std::max<int64_t>(1, std::llround(static_cast<double>(value) * factor)) : 0;
  };
  auto multiple = [&](int64_t value, int64_t step) { return value > 0 ? scaled_multiple(value, factor, step) : 0; };
  for (pp_layer_kind& kind : model.layers.mutable_kinds()) {
    kind.head_dim = shape.head_dim;
    if (kind.mlp == PP_MLP_DENSE) kind.ffn_hidden = shape.ffn_hidden;
    if (kind.mlp == PP_MLP_MOE) {
      const bool counted = kind.shared_ffn_hidden == kind.shared_experts * kind.expert_ffn_hidden;
      kind.expert_ffn_hidden = shape.moe_ffn_hidden;
      kind.shared_ffn_hidden = counted ? kind.shared_experts * kind.expert_ffn_hidden : multiple(kind.shared_ffn_hidden, 64);
    }
    kind.q_lora_rank = multiple(kind.q_lora_rank, 16);
    kind.kv_lora_rank = multiple(kind.kv_lora_rank, 16);
    kind.qk_nope_head_dim = at_least_one(kind.qk_nope_head_dim);
    kind.qk_rope_head_dim = at_least_one(kind.qk_rope_head_dim);
    kind.v_head_dim = at_least_one(kind.v_head_dim);
    kind.mamba_head_dim = at_least_one(kind.mamba_head_dim);
    kind.mamba_state = at_least_one(kind.mamba_state);
    if (kind.sliding_window > 0) kind.sliding_window = std::min(shape.seq_len, multiple(kind.sliding_window, 64));
  }
  model.layers.attach(model.shape);
}

std::string describe_model_shape(const pp_model& model) {
  std::string text = "layers " + std::to_string(model.layers) + ", hidden " + std::to_string(model.hidden) + " (" +
                     std::to_string(model.heads) + " heads x " + std::to_string(model.head_dim) + "), ffn " +
                     std::to_string(model.moe_experts > 0 ? model.moe_ffn_hidden : model.ffn_hidden) + ", vocab " +
                     std::to_string(model.vocab) + ", seq " + std::to_string(model.seq_len);
  return text;
}

}  // namespace paraplan::host
