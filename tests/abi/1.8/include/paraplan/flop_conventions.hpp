// paraplan/flop_conventions.hpp: model FLOPs per token as Megatron-Bridge counts them.
//
// paraplan's own count (cost_model.hpp, layer_flops_per_token) prices every GEMM at 2mnk and the
// attention core as the full s x s square (Narayanan et al. 2021, eq. 3). Megatron-Bridge's
// published "model TFLOP/s per GPU" (training/utils/flop_utils.py, num_floating_point_operations)
// counts by conventions of its own, which changed between releases:
//
//   - the attention core is the causal half: 2·q·s per token forward (the square is 4·q·s), MLA
//     likewise s·a·(d_n + d_r)/2 + s·a·d_v/2;
//   - the router GEMM is not counted; the vocabulary is padded to a multiple of 128·tp;
//   - a multi-token-prediction module counts as one more layer (the kind of the last), plus its
//     2h -> h projection and norms (2h² + 3h) and a second logits GEMM;
//   - a Mamba-2 layer's inner width is taken as 2h whatever the model's heads x head dim, and
//     its scan as 7·d_in·N per token;
//   - until release 26.06 (Bridge 0.5.0): a gated MLP counts 3 matrices only when its gate is
//     SiLU (GPT-OSS's 1.702-scaled sigmoid gets 2), and sliding windows are ignored; from 0.5.0
//     every gated MLP counts 3, and a window of w keys counts the mean causal context
//     w - w(w-1)/(2s) per query.
//
// Both counts are training FLOPs (forward + backward = 3 x forward), per token.
//
//   double bridge = paraplan::flops::megatron_bridge_flops_per_token(model, tp, {.release = kBridge_0_4});
//   double tflops_per_gpu = tokens_per_s_per_gpu * bridge / 1e12;   // what Bridge's log prints
#ifndef PARAPLAN_FLOP_CONVENTIONS_HPP
#define PARAPLAN_FLOP_CONVENTIONS_HPP

#include <cmath>
#include <cstdint>

#include "paraplan/sdk.hpp"

namespace paraplan::flops {

// Megatron-Bridge releases whose counting differs: 0.1.0rc3 to 0.4.2 (NeMo containers 25.09 to
// 26.04.01) and 0.5.0 on (26.06 on).
enum class BridgeRelease { kBridge_0_4, kBridge_0_5 };
inline constexpr BridgeRelease kBridge_0_4 = BridgeRelease::kBridge_0_4;
inline constexpr BridgeRelease kBridge_0_5 = BridgeRelease::kBridge_0_5;

struct BridgeCounting {
  BridgeRelease release = kBridge_0_5;
  // The gated MLP's gate is SiLU (SwiGLU). GPT-OSS's is x·sigmoid(1.702x), which 0.4 counts as
  // an ungated MLP.
  bool gate_is_silu = true;
};

// One layer of `kind`, training FLOPs per token, by Bridge's count.
inline double megatron_bridge_layer_flops(const pp_layer_kind& kind, const pp_model& model, const BridgeCounting& counting) {
  const double h = static_cast<double>(model.hidden), s = static_cast<double>(model.seq_len);
  double forward = 0;  // 2mnk per token
  switch (kind.mixer) {
    case PP_MIXER_ATTENTION: {
      const double q = static_cast<double>(kind.heads * kind.head_dim);
      const double kv = static_cast<double>(kind.kv_heads * kind.head_dim);
      // Keys per query, on average: the causal half of the sequence, or of a window (0.5 on).
      double context = s / 2.0;
      const double w = static_cast<double>(kind.sliding_window);
      if (counting.release == kBridge_0_5 && w > 0 && w < s) context = w - w * (w - 1.0) / (2.0 * s);
      forward += 2.0 * (h * (q + 2.0 * kv) + q * h) + 4.0 * q * context;
      break;
    }
    case PP_MIXER_MLA: {
      const double a = static_cast<double>(kind.heads), nope = static_cast<double>(kind.qk_nope_head_dim);
      const double rope = static_cast<double>(kind.qk_rope_head_dim), v = static_cast<double>(kind.v_head_dim);
      const double q_lora = static_cast<double>(kind.q_lora_rank), kv_lora = static_cast<double>(kind.kv_lora_rank);
      const double q_path = q_lora > 0 ? q_lora * (h + a * (nope + rope) + 1.0) : h * a * (nope + rope);
      forward += 2.0 * (q_path + kv_lora * (h + a * (nope + v) + 1.0) + h * rope + a * v * h +
                        s * a * (nope + rope) / 2.0 + s * a * v / 2.0);
      break;
    }
    case PP_MIXER_MAMBA2: {
      const double inner = 2.0 * h;  // Bridge's d_in, not heads x head dim
      const double n = static_cast<double>(kind.mamba_state), groups = static_cast<double>(kind.mamba_groups);
      forward += 2.0 * h * (2.0 * inner + 2.0 * groups * n + static_cast<double>(kind.mamba_heads)) + 7.0 * inner * n +
                 2.0 * inner * h;
      break;
    }
    case PP_MIXER_NONE: break;
  }
  const bool gated = kind.ffn_type == PP_FFN_SWIGLU;
  const double matrices = gated && (counting.release == kBridge_0_5 || counting.gate_is_silu) ? 3.0 : 2.0;
  if (kind.mlp == PP_MLP_DENSE) forward += 2.0 * matrices * h * static_cast<double>(kind.ffn_hidden);
  if (kind.mlp == PP_MLP_MOE)
    forward += 2.0 * matrices * h *
               (static_cast<double>(kind.expert_ffn_hidden * kind.top_k) + static_cast<double>(kind.shared_ffn_hidden));
  if (kind.mtp) forward += 2.0 * (2.0 * h * h + 3.0 * h);  // its logits: below, with the head's
  return 3.0 * forward;
}

// The whole model, training FLOPs per token, by Bridge's count; `tp` pads the vocabulary.
inline double megatron_bridge_flops_per_token(const pp_model& model, int64_t tp, const BridgeCounting& counting = {}) {
  const LayerKinds kinds(model);
  double flops = 0, logits_gemms = 1;  // the output head, and one more per MTP module
  for (int64_t layer = 0; layer < model.layer_sequence_length; ++layer) {
    const pp_layer_kind& kind = kinds[kinds.kind_of_layer(layer)];
    flops += megatron_bridge_layer_flops(kind, model, counting);
    if (kind.mtp) logits_gemms += 1;
  }
  const double multiple = 128.0 * static_cast<double>(tp > 0 ? tp : 1);
  const double padded_vocab = std::ceil(static_cast<double>(model.vocab) / multiple) * multiple;
  return flops + 3.0 * 2.0 * static_cast<double>(model.hidden) * padded_vocab * logits_gemms;
}

}  // namespace paraplan::flops

#endif  // PARAPLAN_FLOP_CONVENTIONS_HPP
