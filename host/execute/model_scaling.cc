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

std::string describe_model_shape(const pp_model& model) {
  std::string text = "layers " + std::to_string(model.layers) + ", hidden " + std::to_string(model.hidden) + " (" +
                     std::to_string(model.heads) + " heads x " + std::to_string(model.head_dim) + "), ffn " +
                     std::to_string(model.moe_experts > 0 ? model.moe_ffn_hidden : model.ffn_hidden) + ", vocab " +
                     std::to_string(model.vocab) + ", seq " + std::to_string(model.seq_len);
  return text;
}

}  // namespace paraplan::host
