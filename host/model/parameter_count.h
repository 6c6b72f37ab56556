// paraplan/host/model/parameter_count.h: parameters of each kind of layer and of the model.
//
// Counted from the shapes as Megatron-LM builds the modules (docs/cost-model.md, "Parameters"):
// attention Q, K, V and output projections; MLA's down and up projections with their latent
// norms; a Mamba-2 mixer's in/out projections, depthwise convolution, A, D, dt bias and gated
// norm; dense MLPs of 2 (GELU, squared ReLU) or 3 (SwiGLU) matrices; routed and shared experts
// and the router; a norm weight vector before each mixer and MLP. A multi-token-prediction
// module adds two norms, a 2h -> h projection and a final norm; it shares the embedding and the
// output head. Biases (only GPT-OSS has them) are not counted.
#pragma once

#include "paraplan/model.h"

namespace paraplan::host {

// One layer of a kind: `dense` is the mixer, router, norms and a dense MLP; an MoE layer adds
// its routed experts (`experts`, of which a token passes through `active_experts`) and its shared
// experts (every token passes through them). The plan keeps both kinds of expert in its
// "*.experts" items, which expert parallelism splits.
struct LayerParameters {
  double dense = 0;
  double experts = 0;
  double active_experts = 0;
  double shared_experts = 0;
  double total() const { return dense + experts + shared_experts; }
  double active() const { return dense + active_experts + shared_experts; }
  double all_experts() const { return experts + shared_experts; }
};
LayerParameters layer_parameters(const pp_layer_kind& kind, int64_t hidden);

struct ModelParameters {
  double layers = 0;     // decoder layers, experts included
  double mtp = 0;        // multi-token-prediction modules
  double embedding = 0;
  double head = 0;       // output matrix (0 when tied) and final norm
  double active = 0;     // what one token passes through (decoder, embedding row aside: counted)
  double total() const { return layers + mtp + embedding + head; }
  double total_without_mtp() const { return layers + embedding + head; }
};
ModelParameters count_model_parameters(const pp_model& model);

}  // namespace paraplan::host
