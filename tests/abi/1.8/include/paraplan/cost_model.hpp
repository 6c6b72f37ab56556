// paraplan/cost_model.hpp: the default cost functions executors use, header-only.
//
// A hardware plugin may override gemm_time and collective_time; these are the defaults and the
// fallbacks, written from first principles so every executor prices an op the same way:
//
//   GEMM: flops / (peak[dtype] * efficiency), efficiency = max * f / (f + f_half), and never
//         faster than moving its operands through HBM (roofline).
//   Collectives as NCCL runs them (its tuner, src/graph/tuning.cc, prices every algorithm as
//   latency + bytes / bus bandwidth and runs the cheapest; Thakur, Rabenseifner and Gropp 2005
//   for the ring). One ring runs through all P members, a domain's members in a row:
//         all-gather / reduce-scatter: (P-1) steps, (D-1) of them across the outer tier,
//                                      each paying its tier's alpha, + (P-1)/P · n / B_bus
//         all-reduce: twice that;  B_bus = min(B_inner, L · B_outer)
//   (D domains of L members; the steps are pipelined, so the slower hop sets the rate, and each
//   member drives its own link of the outer tier, as rail-optimised NICs do). An all-reduce
//   across domains may run NCCL's tree instead: 2((L-1)·alpha_in + log2(D)·alpha_out)
//   + 2n / (0.92 B_bus); the cheaper one is charged, so large groups pay a logarithmic latency.
//   all-to-all: each rank sends (P-1)/P of its buffer, the other domains' share over the outer
//   tier. B is the tier's per-GPU bandwidth times its achievable efficiency.
//
//   A routed exchange (an ALL_TO_ALL with k > 0: DeepEP or HybridEP, `ep`'s flex dispatcher)
//   sends a token once to each member holding one of its experts and once across the outer tier
//   to each domain holding one, which forwards it inside: each tier carries its own copies,
//   at the same time (paraplan/token_routing.hpp counts them).
//
//   The slowest GPU: a synchronous step runs at the pace of its slowest GPU. GPUs of one part
//   vary in sustained speed (the profile's speed_variation s, a coefficient of variation), so on
//   N GPUs compute takes 1 + s E[max of N standard normals] times its mean time.
//
//   op_time(plan, binding, index) prices plan op `index` with these, as every bundled executor
//   does; op_time(plan, binding, op) prices an op without its layer kind (a routed exchange then
//   as a plain all-to-all of its buffer).
//
//   double seconds = paraplan::cost::gemm_time(binding, 8192, 8192, 8192, PP_DTYPE_BF16);
#ifndef PARAPLAN_COST_MODEL_HPP
#define PARAPLAN_COST_MODEL_HPP

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstddef>
#include <numbers>
#include <string>

#include "paraplan/hardware.h"
#include "paraplan/sdk.hpp"
#include "paraplan/token_routing.hpp"

namespace paraplan::cost {

// Bytes per element as a GEMM reads it; the block-scaled formats carry their scales (one byte
// per 32 elements for MXFP8's E8M0, per 16 for NVFP4's E4M3).
inline double dtype_bytes(pp_dtype dtype) {
  switch (dtype) {
    case PP_DTYPE_FP32:
    case PP_DTYPE_TF32: return 4.0;
    case PP_DTYPE_FP8: return 1.0;
    case PP_DTYPE_MXFP8: return 1.0 + 1.0 / 32.0;
    case PP_DTYPE_NVFP4: return 0.5 + 1.0 / 16.0;
    default: return 2.0;
  }
}

inline const char* dtype_name(pp_dtype dtype) {
  switch (dtype) {
    case PP_DTYPE_FP32: return "fp32";
    case PP_DTYPE_TF32: return "tf32";
    case PP_DTYPE_BF16: return "bf16";
    case PP_DTYPE_FP16: return "fp16";
    case PP_DTYPE_FP8: return "fp8";
    case PP_DTYPE_MXFP8: return "mxfp8";
    case PP_DTYPE_NVFP4: return "nvfp4";
    default: return "an unknown dtype";
  }
}

// FP8 and the block-scaled formats: GEMMs that reach the FP8 plateau (gemm_efficiency_max_fp8;
// NVFP4's may be its own, gemm_efficiency_max_fp4).
inline bool low_precision(pp_dtype dtype) {
  return dtype == PP_DTYPE_FP8 || dtype == PP_DTYPE_MXFP8 || dtype == PP_DTYPE_NVFP4;
}

// The dense peak of `dtype`, 0 where the GPU has none. The block-scaled peaks (ABI 1.6) are read
// only from a profile long enough to hold them.
inline double declared_peak_flops(const pp_hardware_profile& profile, pp_dtype dtype) {
  const auto covers = [&](size_t offset) { return profile.struct_size >= offset + sizeof(double); };
  if (dtype == PP_DTYPE_MXFP8)
    return covers(offsetof(pp_hardware_profile, peak_flops_mxfp8)) ? profile.peak_flops_mxfp8 : 0.0;
  if (dtype == PP_DTYPE_NVFP4)
    return covers(offsetof(pp_hardware_profile, peak_flops_nvfp4)) ? profile.peak_flops_nvfp4 : 0.0;
  const int index = static_cast<int>(dtype);
  return index >= 0 && index < PP_DTYPE_COUNT ? profile.peak_flops[index] : 0.0;
}

inline double peak_flops(const pp_hardware_profile& profile, pp_dtype dtype) {
  double peak = declared_peak_flops(profile, dtype);
  // A dtype the GPU lacks (fp8 on A100) runs at the next wider one, as frameworks fall back.
  // The block-scaled formats have no such fallback: the host refuses a recipe asking for one the
  // GPU lacks (Transformer Engine does too).
  if (peak <= 0 && dtype == PP_DTYPE_FP8) peak = profile.peak_flops[PP_DTYPE_BF16];
  if (peak <= 0)
    throw ConstraintError(std::string(profile.name) + " has no peak FLOP/s for " + dtype_name(dtype));
  return peak;
}

inline double memory_time(const pp_hardware_profile& profile, double bytes) {
  double efficiency = profile.memory_efficiency > 0 ? profile.memory_efficiency : 1.0;
  return bytes / (profile.memory_bandwidth_bytes_per_s * efficiency);
}

// The plateau FP8 GEMMs reach (ABI 1.2), or the bf16 one where the profile has none.
inline double fp8_gemm_efficiency_max(const pp_hardware_profile& profile) {
  const bool declared = profile.struct_size >= offsetof(pp_hardware_profile, gemm_efficiency_max_fp8) + sizeof(double);
  return declared && profile.gemm_efficiency_max_fp8 > 0 ? profile.gemm_efficiency_max_fp8 : profile.gemm_efficiency_max;
}

// The plateau GEMMs of a low-precision `dtype` reach: NVFP4's own (ABI 1.8) where the profile
// declares one, else the FP8 plateau every 8-bit and block-scaled format shares.
inline double low_precision_gemm_efficiency_max(const pp_hardware_profile& profile, pp_dtype dtype) {
  const bool declared = profile.struct_size >= offsetof(pp_hardware_profile, gemm_efficiency_max_fp4) + sizeof(double);
  if (dtype == PP_DTYPE_NVFP4 && declared && profile.gemm_efficiency_max_fp4 > 0) return profile.gemm_efficiency_max_fp4;
  return fp8_gemm_efficiency_max(profile);
}

inline double default_gemm_time(const pp_hardware_profile& profile, double m, double n, double k, pp_dtype dtype) {
  double flops = 2.0 * m * n * k;
  if (flops <= 0) return 0.0;
  const double bf16_maximum = profile.gemm_efficiency_max > 0 ? profile.gemm_efficiency_max : 1.0;
  double maximum = bf16_maximum, half_flops = std::max(0.0, profile.gemm_half_efficiency_flops);
  const double narrow_maximum = low_precision(dtype) ? low_precision_gemm_efficiency_max(profile, dtype) : 0.0;
  if (narrow_maximum > 0 && profile.peak_flops[PP_DTYPE_BF16] > 0) {
    // The same fixed cost t0 per GEMM: F_half = t0 x peak x maximum scales with FP8's peak and plateau.
    maximum = narrow_maximum;
    half_flops *= peak_flops(profile, dtype) / profile.peak_flops[PP_DTYPE_BF16] * maximum / bf16_maximum;
  }
  double efficiency = maximum * flops / (flops + half_flops);
  double compute = flops / (peak_flops(profile, dtype) * efficiency);
  double operands = (m * k + k * n + m * n) * dtype_bytes(dtype);
  return std::max(compute, memory_time(profile, operands));
}

// Model FLOPs of one token through one layer of `kind`, forward, by Megatron-LM's convention
// (Narayanan et al. 2021, eq. 3): every GEMM's 2mnk and the full attention square (4·s·a·d per
// token, causal or not; a window of w keys counts 2w, at most s). MLA (DeepSeek-V2): the down and
// up projections, heads scoring over nope + rope dims and returning v dims. Mamba-2: in_proj,
// out_proj and the SSD's chunked matmuls (chunk 128, see host/plan/workload_builder.cc). MoE:
// the router and top_k experts plus the shared experts. An MTP module adds its 2h -> h
// projection and a second pass through the output head.
inline double layer_flops_per_token(const pp_layer_kind& kind, const pp_model& model) {
  const double h = static_cast<double>(model.hidden), s = static_cast<double>(model.seq_len);
  const double keys = kind.sliding_window > 0 ? std::min(s, 2.0 * static_cast<double>(kind.sliding_window)) : s;
  const double matrices = kind.ffn_type == PP_FFN_SWIGLU ? 3.0 : 2.0;
  double flops = 0;
  switch (kind.mixer) {
    case PP_MIXER_ATTENTION: {
      const double d = static_cast<double>(kind.head_dim), a = static_cast<double>(kind.heads);
      flops += 2.0 * h * (a + 2.0 * static_cast<double>(kind.kv_heads)) * d + 2.0 * a * d * h + 4.0 * keys * a * d;
      break;
    }
    case PP_MIXER_MLA: {
      const double a = static_cast<double>(kind.heads), q_lora = static_cast<double>(kind.q_lora_rank);
      const double kv_lora = static_cast<double>(kind.kv_lora_rank), rope = static_cast<double>(kind.qk_rope_head_dim);
      const double nope = static_cast<double>(kind.qk_nope_head_dim), v = static_cast<double>(kind.v_head_dim);
      flops += q_lora > 0 ? 2.0 * h * q_lora + 2.0 * q_lora * a * (nope + rope) : 2.0 * h * a * (nope + rope);
      flops += 2.0 * h * (kv_lora + rope) + 2.0 * kv_lora * a * (nope + v) + 2.0 * a * v * h;
      flops += 2.0 * keys * a * (nope + rope + v);
      break;
    }
    case PP_MIXER_MAMBA2: {
      const double heads = static_cast<double>(kind.mamba_heads), p = static_cast<double>(kind.mamba_head_dim);
      const double n = static_cast<double>(kind.mamba_state), groups = static_cast<double>(kind.mamba_groups);
      const double inner = heads * p, chunk = std::min(128.0, s);
      flops += 2.0 * h * (2.0 * inner + 2.0 * groups * n + heads) + 2.0 * inner * h;
      flops += 2.0 * inner * (chunk + 2.0 * n + chunk * n * groups / (heads * p));
      break;
    }
    case PP_MIXER_NONE: break;
  }
  if (kind.mlp == PP_MLP_DENSE) flops += 2.0 * matrices * h * static_cast<double>(kind.ffn_hidden);
  if (kind.mlp == PP_MLP_MOE) {
    const double width = static_cast<double>(kind.expert_ffn_hidden);
    flops += 2.0 * h * static_cast<double>(kind.experts) +
             2.0 * matrices * h * (static_cast<double>(kind.top_k) * width + static_cast<double>(kind.shared_ffn_hidden));
  }
  if (kind.mtp) flops += 2.0 * h * 2.0 * h + 2.0 * h * static_cast<double>(model.vocab);
  return flops;
}

// Model FLOPs of one optimizer step: every layer's, the output head's, times 3 for the backward
// pass; no recomputation, no padding, no load imbalance. MFU divides this, not the work a plan
// happens to do, by time and peak. A model without the 1.6 layer stack is one uniform kind (its
// shared experts as wide as the routed ones).
inline double model_flops_per_step(const pp_model& model, const pp_training& training) {
  const double h = static_cast<double>(model.hidden), s = static_cast<double>(model.seq_len);
  double per_token = 2.0 * h * static_cast<double>(model.vocab);
  const bool layered = model.struct_size >= offsetof(pp_model, layer_kind_stride) + sizeof(uint32_t) &&
                       model.layer_kind_count > 0 && model.layer_kinds;
  if (layered) {
    const LayerKinds kinds(model);
    for (uint32_t i = 0; i < kinds.size(); ++i)
      per_token += static_cast<double>(kinds[i].count) * layer_flops_per_token(kinds[i], model);
  } else {
    pp_layer_kind uniform{};
    uniform.struct_size = sizeof(uniform);
    uniform.mixer = PP_MIXER_ATTENTION;
    uniform.heads = model.heads, uniform.kv_heads = model.kv_heads, uniform.head_dim = model.head_dim;
    uniform.ffn_type = model.ffn_type;
    uniform.mlp = model.moe_experts > 0 ? PP_MLP_MOE : PP_MLP_DENSE;
    uniform.ffn_hidden = model.ffn_hidden;
    uniform.experts = model.moe_experts, uniform.top_k = model.moe_top_k;
    uniform.expert_ffn_hidden = model.moe_ffn_hidden;
    uniform.shared_experts = model.moe_shared_experts;
    uniform.shared_ffn_hidden = model.moe_shared_experts * model.moe_ffn_hidden;
    per_token += static_cast<double>(model.layers) * layer_flops_per_token(uniform, model);
  }
  return 3.0 * per_token * static_cast<double>(training.global_batch) * s;
}

// The profile as this cluster sees it: an intra-node tier (domain no larger than the profile's
// node) shrinks to the cluster's node when the recipe puts fewer GPUs in a node; rack-scale
// domains (GB200 NVL72) span nodes and stay as they are.
inline pp_hardware_profile fit_to_cluster(const pp_hardware_profile& profile, const pp_cluster& cluster) {
  pp_hardware_profile fitted = profile;
  for (uint32_t i = 0; i < fitted.tier_count; ++i) {
    pp_tier& tier = fitted.tiers[i];
    bool intra_node = tier.domain_size > 0 && tier.domain_size <= profile.gpus_per_node;
    if (intra_node && cluster.gpus_per_node > 0 && cluster.gpus_per_node < tier.domain_size)
      tier.domain_size = cluster.gpus_per_node;
  }
  fitted.gpus_per_node = cluster.gpus_per_node > 0 ? cluster.gpus_per_node : profile.gpus_per_node;
  return fitted;
}

// Index of the innermost tier whose domain holds `span` consecutive ranks.
inline uint32_t tier_for_span(const pp_hardware_profile& profile, int64_t span) {
  for (uint32_t i = 0; i < profile.tier_count; ++i)
    if (profile.tiers[i].domain_size == 0 || span <= profile.tiers[i].domain_size) return i;
  return profile.tier_count - 1;
}

// Members of a group, consecutive members `stride` ranks apart, that share the innermost domain:
// the whole group when it fits one.
inline int64_t members_per_domain(const pp_hardware_profile& profile, int64_t group, int64_t stride) {
  stride = std::max<int64_t>(stride, 1);
  if (profile.tier_count == 0 || tier_for_span(profile, stride * group) == 0) return group;
  const int64_t domain = profile.tiers[0].domain_size;
  return domain > stride ? std::min<int64_t>(group, domain / stride) : 1;
}

inline double tier_bandwidth(const pp_tier& tier) {
  return tier.bandwidth_bytes_per_s * (tier.efficiency > 0 ? tier.efficiency : 1.0);
}

inline double ring_time(const pp_tier& tier, pp_collective kind, double bytes, double ranks) {
  if (ranks <= 1 || bytes <= 0) return 0.0;
  double steps = ranks - 1.0;
  double one_pass = steps * tier.latency_s + steps / ranks * bytes / tier_bandwidth(tier);
  return kind == PP_COLLECTIVE_ALL_REDUCE ? 2.0 * one_pass : one_pass;
}

// NCCL's tree all-reduce busBw: 0.92 of the ring's (tuning.cc, "a == NCCL_ALGO_TREE && coll ==
// ncclFuncAllReduce"), moving the whole buffer up and down the tree.
inline constexpr double kTreeAllReduceBandwidthFraction = 0.92;

// What every NCCL collective kernel costs before its first hop: NCCL's base latency of the ring
// and tree algorithms with its Simple protocol, 8.4 us (tuning.cc, baseLatencies).
inline constexpr double kCollectiveBaseLatencyS = 8.4e-6;

// One collective of `bytes` over `group` ranks that span `domains` domains of the inner tier,
// `local` members in each, the domains joined by `outer` (NCCL's ring through every member, or
// its tree for an all-reduce across domains, whichever is cheaper).
inline double spanning_collective_time(const pp_tier& inner, const pp_tier& outer, pp_collective kind, double bytes,
                                       double group, double local, double domains) {
  const bool all_reduce = kind == PP_COLLECTIVE_ALL_REDUCE;
  const double passes = all_reduce ? 2.0 : 1.0;
  const double bus = local > 1 ? std::min(tier_bandwidth(inner), local * tier_bandwidth(outer)) : tier_bandwidth(outer);
  const double outer_steps = domains - 1.0, inner_steps = group - 1.0 - outer_steps;
  const double ring = passes * (inner_steps * inner.latency_s + outer_steps * outer.latency_s +
                                (group - 1.0) / group * bytes / bus);
  if (!all_reduce) return ring;
  const double tree = 2.0 * ((local - 1.0) * inner.latency_s + std::ceil(std::log2(domains)) * outer.latency_s) +
                      2.0 * bytes / (kTreeAllReduceBandwidthFraction * bus);
  return std::min(ring, tree);
}

// A collective's hops and bytes, without the kernel's base latency.
inline double collective_hops_time(const pp_hardware_profile& profile, pp_collective kind, double bytes,
                                   int64_t group, int64_t stride) {
  stride = std::max<int64_t>(stride, 1);
  const pp_tier& inner = profile.tiers[0];
  uint32_t outer_index = tier_for_span(profile, stride * group);
  if (outer_index == 0) return ring_time(inner, kind, bytes, static_cast<double>(group));
  const pp_tier& outer = profile.tiers[outer_index];
  const double ranks = static_cast<double>(group);
  const double local = static_cast<double>(members_per_domain(profile, group, stride));
  const double domains = std::ceil(ranks / local);
  if (kind == PP_COLLECTIVE_ALL_TO_ALL) {
    // Each rank sends (P-1)/P of its buffer; the part bound for other domains crosses the outer tier.
    double inner_part = (local - 1.0) / ranks * bytes;
    double outer_part = (ranks - local) / ranks * bytes;
    return (local - 1.0) * inner.latency_s + (ranks - local) * outer.latency_s +
           std::max(inner_part / tier_bandwidth(inner), outer_part / tier_bandwidth(outer));
  }
  return spanning_collective_time(inner, outer, kind, bytes, ranks, local, domains);
}

inline double default_collective_time(const pp_hardware_profile& profile, pp_collective kind, double bytes,
                                      int64_t group, int64_t stride) {
  if (group <= 1 || bytes <= 0 || profile.tier_count == 0) return 0.0;
  return kCollectiveBaseLatencyS + collective_hops_time(profile, kind, bytes, group, stride);
}

// Point-to-point: one message over the tier that separates ranks `stride` apart.
inline double default_send_time(const pp_hardware_profile& profile, double bytes, int64_t stride) {
  if (bytes <= 0 || profile.tier_count == 0) return 0.0;
  const pp_tier& tier = profile.tiers[tier_for_span(profile, std::max<int64_t>(stride, 1) + 1)];
  return tier.latency_s + bytes / tier_bandwidth(tier);
}

// Copies between GPU and host memory (offload) over PCIe or a chip-to-chip link.
inline double host_transfer_time(const pp_hardware_profile& profile, double bytes) {
  if (bytes <= 0) return 0.0;
  if (profile.host_link_bandwidth_bytes_per_s <= 0)
    throw ConstraintError(std::string(profile.name) + " declares no host link bandwidth; offload cannot be priced");
  return bytes / profile.host_link_bandwidth_bytes_per_s;
}

// The binding's own callbacks when the hardware plugin provides them, else the defaults.
inline double gemm_time(const pp_hardware_binding_v1& hardware, double m, double n, double k, pp_dtype dtype) {
  if (hardware.functions && hardware.functions->gemm_time) {
    double seconds = 0;
    char message[256] = {};
    pp_error error{sizeof(pp_error), message, sizeof(message)};
    pp_status status = hardware.functions->gemm_time(hardware.instance, m, n, k, dtype, &seconds, &error);
    if (status != PP_OK) throw Error(status, std::string("hardware gemm_time: ") + message);
    return seconds;
  }
  return default_gemm_time(*hardware.profile, m, n, k, dtype);
}

inline double collective_time(const pp_hardware_binding_v1& hardware, pp_collective kind, double bytes, int64_t group,
                              int64_t stride) {
  if (hardware.functions && hardware.functions->collective_time) {
    double seconds = 0;
    char message[256] = {};
    pp_error error{sizeof(pp_error), message, sizeof(message)};
    pp_status status =
        hardware.functions->collective_time(hardware.instance, kind, bytes, group, stride, &seconds, &error);
    if (status != PP_OK) throw Error(status, std::string("hardware collective_time: ") + message);
    return seconds;
  }
  return default_collective_time(*hardware.profile, kind, bytes, group, stride);
}

// The fraction of the peak a fused attention kernel reaches on the FLOPs the model counts (the
// full square), for heads `head_dim` wide. The profile's figures are a 128-wide head's; a
// narrower head does less work per tile it loads. The FlashAttention-3 paper (Shah et al. 2024,
// Fig. 5, H100, bf16) measures a 64-wide head at about 0.6 (cuDNN) to 0.75 (FlashAttention-3)
// of the 128-wide rate, 0.68 between them; the FlashAttention-2 paper (Dao 2023, Fig. 4, A100,
// forward and backward) its kernel's at about 0.87. A power law through that point and 1 at 128
// prices every width, wider heads at the 128-wide rate.
inline double head_dim_efficiency(pp_attention_kernel kernel, double head_dim) {
  constexpr double kReferenceWidth = 128.0, kHalfWidth = 64.0;
  const double at_half_width = kernel == PP_ATTENTION_KERNEL_FLASH2 ? 0.87 : 0.68;
  if (!(head_dim > 0) || head_dim >= kReferenceWidth) return 1.0;
  const double exponent = std::log(at_half_width) / std::log(kHalfWidth / kReferenceWidth);
  return std::pow(head_dim / kReferenceWidth, exponent);
}

// FlashAttention in Triton (2022) against FlashAttention-2: the FlashAttention-2 paper (Dao 2023,
// sec. 4.1, A100, forward and backward) measures FlashAttention-2 "1.3-2.5x faster than
// FlashAttention in Triton"; the geometric middle of that range, not fitted to any run.
inline constexpr double kTritonFlashSlowdown = 1.8;

// The profile's rate for `kernel`, scaled for the head width. A profile that states no
// FlashAttention-2 figure (or is older than that field) runs both at its tuned rate: its tuned
// kernel is FlashAttention-2 (Ampere, MI300X's CK kernel), so a narrow head pays FlashAttention-2's
// width factor whichever the recipe names. The Triton kernel runs at FlashAttention-2's rate over
// kTritonFlashSlowdown, with its width factor.
inline double attention_efficiency(const pp_hardware_profile& profile, pp_attention_kernel kernel, double head_dim) {
  const double tuned = profile.attention_efficiency > 0 ? profile.attention_efficiency : 0.5;
  const bool states_flash2 =
      profile.struct_size >= offsetof(pp_hardware_profile, attention_efficiency_flash2) + sizeof(double) &&
      profile.attention_efficiency_flash2 > 0;
  const bool flash2_class = kernel == PP_ATTENTION_KERNEL_FLASH2 || kernel == PP_ATTENTION_KERNEL_TRITON;
  const bool runs_flash2 = flash2_class || !states_flash2;
  double efficiency = flash2_class && states_flash2 ? profile.attention_efficiency_flash2 : tuned;
  if (kernel == PP_ATTENTION_KERNEL_TRITON) efficiency /= kTritonFlashSlowdown;
  return efficiency * head_dim_efficiency(runs_flash2 ? PP_ATTENTION_KERNEL_FLASH2 : PP_ATTENTION_KERNEL_TUNED, head_dim);
}

// Attention in FP8 (pp_training.fp8_attention) runs this many times the rate of the same fused
// kernel in the 16-bit type: FlashAttention-3 (Shah et al. 2024, sec. 4.1) reaches 740 TFLOP/s in
// BF16 and close to 1.2 PFLOP/s in FP8 on an H100, forward. Its softmax runs on the same special
// function units either way, so it gains less than the tensor cores' 2x. Not fitted.
inline constexpr double kFp8AttentionSpeedup = 1.6;

// FLOP/s of a fused attention op (PP_OP_ATTENTION): the GPU's 16-bit peak at the kernel's
// efficiency; FP8 (the op's dtype under fp8_attention) kFp8AttentionSpeedup times that where the
// GPU has FP8 tensor cores.
inline double attention_rate(const pp_hardware_profile& profile, pp_attention_kernel kernel, const pp_op& op) {
  const bool fp8 = op.dtype == PP_DTYPE_FP8;
  const double rate = peak_flops(profile, fp8 ? PP_DTYPE_BF16 : op.dtype) * attention_efficiency(profile, kernel, op.k);
  return fp8 && declared_peak_flops(profile, PP_DTYPE_FP8) > 0 ? rate * kFp8AttentionSpeedup : rate;
}

// How much slower compute runs beside overlapped communication (ABI 1.6); 0 for a profile too
// short to say.
inline double overlap_compute_slowdown(const pp_hardware_profile& profile) {
  const bool declared =
      profile.struct_size >= offsetof(pp_hardware_profile, overlap_compute_slowdown) + sizeof(double);
  return declared && profile.overlap_compute_slowdown > 0 ? profile.overlap_compute_slowdown : 0.0;
}

// Seconds for `compute_s` of compute with `overlapped_s` of communication running beside it, the
// compute `slowdown` times slower while both run (communication keeps its pace). Compute loses
// slowdown / (1 + slowdown) of every second the communication runs, and at most `slowdown` of
// its own time (when the communication outlasts it): max(O, C + min(O s / (1 + s), C s)), the
// minimum being overlap_contention_s. slowdown = 0 is perfect overlap, max(O, C). Only
// `contending_s` of the communication slows the compute: a copy-engine transfer (to host memory)
// takes no SMs.
inline double overlap_contention_s(double compute_s, double contending_s, double slowdown) {
  return slowdown > 0 ? std::min(contending_s * slowdown / (1.0 + slowdown), compute_s * slowdown) : 0.0;
}
inline double overlapped_elapsed_s(double compute_s, double overlapped_s, double contending_s, double slowdown) {
  return std::max(overlapped_s, compute_s + overlap_contention_s(compute_s, contending_s, slowdown));
}
inline double overlapped_elapsed_s(double compute_s, double overlapped_s, double slowdown) {
  return overlapped_elapsed_s(compute_s, overlapped_s, overlapped_s, slowdown);
}

// How much a GPU's speed varies across the fleet (ABI 1.6); 0 for a profile too short to say.
inline double speed_variation(const pp_hardware_profile& profile) {
  const bool declared = profile.struct_size >= offsetof(pp_hardware_profile, speed_variation) + sizeof(double);
  return declared && profile.speed_variation > 0 ? profile.speed_variation : 0.0;
}

// E[max of n standard normal draws]: how many standard deviations the slowest of n GPUs lies
// beyond the mean (0.5642 for 2, 1.5388 for 10, 3.2414 for 1000). The integral of
// z n phi(z) Phi(z)^(n-1) by Simpson's rule.
inline double integrate_expected_maximum_of_normals(int64_t n) {
  if (n <= 1) return 0.0;
  constexpr double kLow = -8.0, kHigh = 9.0;
  constexpr int kIntervals = 3400;  // even, for Simpson's rule; a step of 0.005
  const double step = (kHigh - kLow) / kIntervals, draws = static_cast<double>(n);
  double sum = 0.0;
  for (int i = 0; i <= kIntervals; ++i) {
    const double z = kLow + step * i;
    const double cdf = 0.5 * std::erfc(-z / std::sqrt(2.0));
    const double density = std::exp(-0.5 * z * z) / std::sqrt(2.0 * std::numbers::pi);
    const double term = cdf > 0 ? z * draws * density * std::exp((draws - 1.0) * std::log(cdf)) : 0.0;
    sum += term * (i == 0 || i == kIntervals ? 1.0 : (i % 2 ? 4.0 : 2.0));
  }
  return sum * step / 3.0;
}

// The same, remembering the last n asked (every op of a plan asks the same): n and the value as
// a float packed in one lock-free word, so threads share it without a lock and a plugin holds no
// thread-local storage (which a sanitizer's leak check trips over once the plugin is unloaded).
inline double expected_maximum_of_normals(int64_t n) {
  if (n <= 1) return 0.0;
  if (n > int64_t{UINT32_MAX}) return integrate_expected_maximum_of_normals(n);
  static std::atomic<uint64_t> last{0};  // n in the high half, the value's float bits in the low
  const uint64_t seen = last.load(std::memory_order_relaxed);
  if (seen >> 32 == static_cast<uint64_t>(n)) return static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(seen)));
  const float value = static_cast<float>(integrate_expected_maximum_of_normals(n));
  last.store(static_cast<uint64_t>(n) << 32 | std::bit_cast<uint32_t>(value), std::memory_order_relaxed);
  return static_cast<double>(value);
}

// A synchronous step waits for its slowest GPU: on `gpus` GPUs whose speeds vary by the profile's
// coefficient of variation s, compute takes 1 + s E[max of gpus normals] times its mean time.
inline double slowest_gpu_factor(const pp_hardware_profile& profile, int64_t gpus) {
  const double variation = speed_variation(profile);
  return variation > 0 ? 1.0 + variation * expected_maximum_of_normals(gpus) : 1.0;
}

// Of `compute_s` priced at the slowest of `gpus` GPUs' pace, the seconds that pace adds: what an
// executor reports as time.slowest_gpu_s.
inline double slowest_gpu_s(const pp_hardware_profile& profile, int64_t gpus, double compute_s) {
  return compute_s * (1.0 - 1.0 / slowest_gpu_factor(profile, gpus));
}

// (1.6) An ALL_TO_ALL whose `k` > 0 is a routed exchange: each of the member's m tokens, n bytes
// each, goes once to every member holding one of its k experts (bytes = m n D, D those members on
// average) and once across the outer tier to every domain holding one.
inline bool routed_exchange(const pp_op& op) {
  return op.kind == PP_OP_COLLECTIVE && op.collective == PP_COLLECTIVE_ALL_TO_ALL && op.k > 0 && op.m > 0 && op.n > 0;
}

// A routed exchange over `group` members `stride` ranks apart, for the routing of its layer kind.
// Inside a domain a member moves the copies for the other members of its own domain and
// forwards those arriving for its domain's members, D (1 - 1/local) per token; across, one copy
// per other domain hit, D_domains (1 - 1/domains). Both tiers run together (DeepEP pipelines
// the RDMA sends and the NVLink forwarding); each is priced as an all-to-all of its own copies.
inline double routed_exchange_time(const pp_hardware_binding_v1& hardware, const pp_op& op,
                                   const routing::Routing& routing, int64_t group, int64_t stride);

// Seconds for one instance of `op` on one rank, by the binding's cost functions: what every
// executor charges for it. Compute (GEMMs, attention, memory-bound kernels) runs at the pace of
// the plan's slowest GPU (slowest_gpu_factor); communication at the links'. A backward GEMM
// carries both gradient GEMMs (flops = 2x forward): it is priced at the forward shape and scaled
// by its work. Communication is priced over its axis's
// degree and stride: `strides` (one per plan axis) when given, else the plan's own.
inline double op_time(const PlanView& plan, const pp_hardware_binding_v1& hardware, const pp_op& op,
                      const int64_t* strides = nullptr) {
  const pp_hardware_profile& profile = *hardware.profile;
  // Compute only: communication never asks for the factor (the search reprices it per layout).
  const auto at_slowest_pace = [&](double seconds) { return seconds * slowest_gpu_factor(profile, plan.cluster().num_gpus); };
  switch (op.kind) {
    case PP_OP_GEMM: {
      const double count = op.count > 0 ? op.count : 1.0;
      const double forward_flops = 2.0 * op.m * op.n * op.k * count;
      const double scale = forward_flops > 0 ? op.flops / forward_flops : 0.0;
      return at_slowest_pace(scale * count * gemm_time(hardware, op.m, op.n, op.k, op.dtype));
    }
    case PP_OP_ATTENTION: return at_slowest_pace(op.flops / attention_rate(profile, attention_kernel(plan.training()), op));
    case PP_OP_MEMORY: return at_slowest_pace(memory_time(profile, op.bytes));
    case PP_OP_COLLECTIVE: {
      const size_t index = static_cast<size_t>(op.axis);
      const pp_mesh_axis& axis = plan.axes()[index];
      return collective_time(hardware, op.collective, op.bytes, axis.degree, strides ? strides[index] : axis.stride);
    }
    case PP_OP_SEND_RECV: {
      const size_t index = static_cast<size_t>(op.axis);
      return default_send_time(profile, op.bytes, strides ? strides[index] : plan.axes()[index].stride);
    }
    case PP_OP_HOST_TRANSFER: return host_transfer_time(profile, op.bytes);
  }
  return 0.0;
}

inline double routed_exchange_time(const pp_hardware_binding_v1& hardware, const pp_op& op,
                                   const routing::Routing& routing, int64_t group, int64_t stride) {
  if (group <= 1 || op.bytes <= 0) return 0.0;
  stride = std::max<int64_t>(stride, 1);
  const int64_t local = members_per_domain(*hardware.profile, group, stride), domains = group / local;
  const double token_bytes = op.m * op.n;
  const double members_hit = op.bytes / token_bytes;  // D, as the dispatcher sized the buffer
  double seconds = 0.0;
  if (local > 1) {
    const double inner = token_bytes * members_hit * (1.0 - 1.0 / static_cast<double>(local));
    seconds = collective_time(hardware, PP_COLLECTIVE_ALL_TO_ALL, inner * static_cast<double>(local) / static_cast<double>(local - 1),
                              local, stride);
  }
  if (domains > 1) {
    const double domains_hit = std::min(members_hit, routing::expected_holders(routing, domains));
    const double outer = token_bytes * domains_hit * (1.0 - 1.0 / static_cast<double>(domains));
    seconds = std::max(seconds, collective_time(hardware, PP_COLLECTIVE_ALL_TO_ALL,
                                                outer * static_cast<double>(domains) / static_cast<double>(domains - 1),
                                                domains, stride * local));
  }
  return seconds;
}

// Op `index` of the plan: as op_time above, a routed exchange with its layer kind's routing.
inline double op_time(const PlanView& plan, const pp_hardware_binding_v1& hardware, size_t index,
                      const int64_t* strides = nullptr) {
  const pp_op& op = plan.ops()[index];
  const uint32_t kind = plan.op_layer_kind(index);
  const LayerKinds kinds = plan.layer_kinds();
  if (!routed_exchange(op) || kind >= kinds.size()) return op_time(plan, hardware, op, strides);
  const size_t axis = static_cast<size_t>(op.axis);
  return routed_exchange_time(hardware, op, routing::of(kinds[kind]), plan.axes()[axis].degree,
                              strides ? strides[axis] : plan.axes()[axis].stride);
}

}  // namespace paraplan::cost

#endif  // PARAPLAN_COST_MODEL_HPP
