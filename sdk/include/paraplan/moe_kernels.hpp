// paraplan/moe_kernels.hpp: how much HBM traffic an MoE block's memory-bound kernels move, header-only.
//
// The workload builder counts each memory-bound op of an MoE layer at its minimal traffic (every
// tensor read and written once: docs/cost-model.md). Megatron-Core runs the routed path as
// separate kernels, each a pass of its own: the router's score function, top-k, its
// normalisation and the auxiliary loss's statistics; the permutation's row-id map and gather (and
// the all-to-all dispatcher's sort by local expert); the probabilities applied in the activation;
// the expert inputs' quantisation, rowwise and columnwise, padded per expert; the unpermutation's
// weighted gather-and-sum. Those kernels index rows scattered over the copies of top_k tokens and
// reach a fraction of the bandwidth a streaming elementwise kernel does. The routed path's
// memory-bound ops (router_topk, router_aux_loss, moe_permute with its sort, expert_act,
// fp8_cast_expert, moe_unpermute) therefore carry kUnfusedMoePasses times their minimal bytes,
// what the simulator and the MPI executor move too. The shared experts' activation is a dense
// MLP's fused kernel and keeps its own.
//
// 3.5 is fitted, one figure for every GPU, on the MoE rows of the tuning half of
// recipes/validation/modern.csv (DeepSeek-V3, Qwen3-30B-A3B, Mixtral 8x7B; the argmin on a 0.25
// grid), and reported on the held-out half (docs/validation.md). Plausibility: at the minimal
// traffic the routed path's memory passes take about a sixth of the expert GEMMs' time in GPT-OSS's
// H100 plan; NVIDIA reports that fusing the activation and quantisation into the grouped GEMM
// (cuDNN frontend 1.23, Transformer Engine 2.15) speeds the MLP 1.3-2x at kernel level, which
// takes memory passes worth 30-100 % of the GEMM time: 2-6x the minimal traffic. A recipe that
// runs those fused kernels says so (training.moe_fused_mlp, SDK 1.8: the workload builder then
// emits no activation pass and casts only the MLP's outer tensors); the permutations keep P
// (docs/cost-model.md, limitations).
//
//   op.bytes = paraplan::moe::kUnfusedMoePasses * minimal_bytes;
#ifndef PARAPLAN_MOE_KERNELS_HPP
#define PARAPLAN_MOE_KERNELS_HPP

namespace paraplan::moe {

inline constexpr double kUnfusedMoePasses = 3.5;

}  // namespace paraplan::moe

#endif  // PARAPLAN_MOE_KERNELS_HPP
