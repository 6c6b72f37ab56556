// paraplan/host_issue.hpp: when the GPU waits for the host that issues its work, header-only.
//
// An eager framework issues every op from the host (a Python module call, autograd, the launches
// of its kernels) one after another, running ahead of the GPU, which waits only when the host
// falls behind (Megatron-LM's MoE guide, "CPU Overhead Bottleneck": gaps between kernels where
// the CPU cannot launch them fast enough). With host time c_j and GPU time d_j per op, in order:
//
//   issued_j   = issued_{j-1} + c_j          (at a PP_OP_HOST_SYNC: issued = max(issued, done))
//   done_j     = max(done_{j-1}, issued_j) + d_j
//
// A pass of layers without a sync takes max(sum d, sum c) per layer: the host runs ahead or the
// GPU waits for it. A sync (a dropless MoE layer copying its token counts to the host) drains the
// GPU's queue, so after it the GPU waits for every op the host issues until one runs longer than
// issuing the next. host_wait_s() is what that adds to a layer's pass, in steady state (the
// state resets at each sync, so the second of two passes is exact).
//
// Ops captured in a CUDA graph are replayed, not issued: c = 0 (pp_cuda_graph_module, by the
// block of the layer they belong to). FP8 casts, rotary embeddings and a GLU's clamps are issued
// inside their module's call (inside_another_call), and
// overlapped communication runs on its own stream (d = 0 on the compute stream, c as issued).
// Embedding, head and per-step ops are not counted: a handful per micro-batch or per step.
//
//   double wait = paraplan::issue::host_wait_s(plan, hardware, kind, PP_PHASE_FORWARD);
#ifndef PARAPLAN_HOST_ISSUE_HPP
#define PARAPLAN_HOST_ISSUE_HPP

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "paraplan/cost_model.hpp"
#include "paraplan/names.h"
#include "paraplan/sdk.hpp"

namespace paraplan::issue {

// The profile's host seconds per eagerly issued op (ABI 1.6), 0 for an older profile.
inline double host_op_overhead_s(const pp_hardware_profile& profile) {
  const bool declared = profile.struct_size >= offsetof(pp_hardware_profile, host_op_overhead_s) + sizeof(double);
  return declared ? profile.host_op_overhead_s : 0.0;
}

// Megatron-LM's --cuda-graph-modules names of the pp_cuda_graph_module bits, in bit order
// ("full_iteration" is --cuda-graph-impl full_iteration).
inline constexpr std::pair<const char*, uint32_t> kCudaGraphModuleNames[] = {
    {"attn", PP_CUDA_GRAPH_ATTN},
    {"mlp", PP_CUDA_GRAPH_MLP},
    {"moe", PP_CUDA_GRAPH_MOE},
    {"moe_router", PP_CUDA_GRAPH_MOE_ROUTER},
    {"moe_preprocess", PP_CUDA_GRAPH_MOE_PREPROCESS},
    {"mamba", PP_CUDA_GRAPH_MAMBA},
    {"full_iteration", PP_CUDA_GRAPH_FULL_ITERATION},
};

// The recipe's CUDA-graph modules (ABI 1.6), 0 for an older plan.
inline uint32_t cuda_graph_modules(const pp_training& training) {
  const bool declared = training.struct_size >= offsetof(pp_training, cuda_graph_modules) + sizeof(uint32_t);
  return declared ? training.cuda_graph_modules : 0u;
}

// What a layer holds, which decides the block its shared ops (norms, residuals) belong to.
struct LayerBlocks {
  bool mamba = false;  // the token mixer is Mamba, not attention
  bool moe = false;    // the feed-forward block is an MoE block
};

// The pp_cuda_graph_module block an op of a layer belongs to, by its canonical name (names.h);
// 0 for an op of no block (an MTP module's own ops, a third party's): captured only by
// FULL_ITERATION.
inline uint32_t cuda_graph_module_of(const char* name, LayerBlocks blocks) {
  const uint32_t mixer = blocks.mamba ? PP_CUDA_GRAPH_MAMBA : PP_CUDA_GRAPH_ATTN;
  if (is_named(name, PP_OP_ATTN_NORM) || is_named(name, PP_OP_ATTN_RESIDUAL)) return mixer;
  if (has_prefix(name, "mamba_")) return PP_CUDA_GRAPH_MAMBA;
  if (is_named(name, PP_OP_QKV) || is_named(name, PP_OP_ATTN_OUT) || has_prefix(name, "attention_") ||
      has_prefix(name, "mla_") || has_prefix(name, "cp_"))
    return PP_CUDA_GRAPH_ATTN;
  if (is_named(name, PP_OP_MLP_NORM)) return blocks.moe ? PP_CUDA_GRAPH_MOE_ROUTER : PP_CUDA_GRAPH_MLP;
  if (is_named(name, PP_OP_MLP_RESIDUAL)) return blocks.moe ? PP_CUDA_GRAPH_MOE : PP_CUDA_GRAPH_MLP;
  if (has_prefix(name, "mlp_")) return PP_CUDA_GRAPH_MLP;
  if (has_prefix(name, "router")) return PP_CUDA_GRAPH_MOE_ROUTER;
  if (is_named(name, PP_OP_HOST_SYNC)) return PP_CUDA_GRAPH_MOE_PREPROCESS;
  if (has_prefix(name, "expert_") || has_prefix(name, "shared_expert_") || has_prefix(name, "moe_") ||
      has_prefix(name, "ep_"))
    return PP_CUDA_GRAPH_MOE;
  return 0;
}

// Whether a captured module replays `module`'s ops. The router's graph, like Megatron-Core's,
// also holds the norm before it; the whole MoE block's graph holds the router's ops too.
inline bool captured(uint32_t modules, uint32_t module) {
  if (modules & PP_CUDA_GRAPH_FULL_ITERATION) return true;
  if (module == 0) return false;
  if (modules & module) return true;
  const uint32_t moe_parts = PP_CUDA_GRAPH_MOE_ROUTER | PP_CUDA_GRAPH_MOE_PREPROCESS;
  return (modules & PP_CUDA_GRAPH_MOE) && (module & moe_parts);
}

// Ops the host issues inside another op's module call, at no cost of their own: FP8 casts in
// their GEMM's, the rotary embedding in the attention's (a function it calls), a clamped GLU's
// clamps in the activation's. The experts' per-expert bias loop is a call of its own.
inline bool inside_another_call(const char* name) {
  return has_prefix(name, "fp8_cast") || is_named(name, PP_OP_ROTARY) || is_named(name, PP_OP_MLP_CLAMP) ||
         is_named(name, PP_OP_EXPERT_CLAMP);
}

// Host seconds to issue `op` once per micro-batch (its `repeat` instances included).
inline double issue_time(const pp_hardware_profile& profile, uint32_t modules, const pp_op& op, LayerBlocks blocks) {
  const char* name = op.name;
  if (inside_another_call(name)) return 0.0;
  // Without CUDA graphs nothing is captured: the block is not looked up (a search prices this for
  // every op of every pass).
  if (modules != 0 && captured(modules, cuda_graph_module_of(name, blocks))) return 0.0;
  return host_op_overhead_s(profile) * static_cast<double>(std::max<uint32_t>(op.repeat, 1));
}

// Whether op `index` belongs to a layer of `kind` (PP_EVERY_LAYER_KIND: a plan without kinds).
inline bool in_layer(const PlanView& plan, size_t index, uint32_t kind) {
  const pp_op& op = plan.ops()[index];
  const uint32_t of = plan.op_layer_kind(index);
  return op.scope == PP_SCOPE_LAYER && op.frequency != PP_PER_STEP && (of == kind || of == PP_EVERY_LAYER_KIND);
}

inline LayerBlocks layer_blocks(const PlanView& plan, uint32_t kind) {
  LayerBlocks blocks;
  for (size_t i = 0; i < plan.ops().size(); ++i) {
    if (!in_layer(plan, i, kind)) continue;
    const char* name = plan.ops()[i].name;
    blocks.mamba = blocks.mamba || has_prefix(name, "mamba_");
    blocks.moe = blocks.moe || is_named(name, PP_OP_ROUTER);
  }
  return blocks;
}

// One op of a layer's pass as the host and the GPU see it.
struct IssuedOp {
  double host_s = 0;   // c: issuing it
  double gpu_s = 0;    // d: running it on the compute stream
  bool sync = false;   // the host waits for the GPU before issuing it
  uint32_t index = 0;  // the op's index in the plan
  bool communicates = false;  // d depends on the ranks' layout (a collective or a send)
};

// The GPU's idle time per pass over `ops` in steady state (the recurrence above).
inline double idle_s(const std::vector<IssuedOp>& ops) {
  double host = 0, gpu = 0, issue = 0, run = 0;
  bool syncs = false;
  for (const IssuedOp& op : ops) {
    issue += op.host_s;
    run += op.gpu_s;
    syncs = syncs || op.sync;
  }
  if (!syncs || issue <= 0) return std::max(0.0, issue - run);
  double start = 0;
  for (int pass = 0; pass < 2; ++pass) {
    start = gpu;
    for (const IssuedOp& op : ops) {
      if (op.sync) host = std::max(host, gpu);
      host += op.host_s;
      gpu = std::max(gpu, host) + op.gpu_s;
    }
  }
  return std::max(0.0, gpu - start - run);
}

// Whether the GPU's compute stream waits for `op`: overlapped communication runs on its own.
inline bool holds_compute_stream(const pp_op& op) {
  const bool compute = op.kind == PP_OP_GEMM || op.kind == PP_OP_ATTENTION || op.kind == PP_OP_MEMORY;
  return compute || op.overlap != PP_OVERLAP_COMPUTE;
}

// An op's time on the compute stream.
inline double gpu_time(const PlanView& plan, const pp_hardware_binding_v1& hardware, const pp_op& op,
                       const int64_t* strides = nullptr) {
  return holds_compute_stream(op) ? op.repeat * cost::op_time(plan, hardware, op, strides) : 0.0;
}

// Whether a layer of `share` runs an op that runs on `runs_on` (PlanView::op_share).
inline bool runs_in_share(LayerShare share, LayerShare runs_on) {
  return share == LayerShare::kAll || runs_on == LayerShare::kAll || runs_on == share;
}

// Op `index` of the plan as the host issues it and the GPU runs it (`gpu_s` on the compute stream).
inline IssuedOp issued_op(const pp_hardware_profile& profile, uint32_t modules, const pp_op& op, size_t index,
                          double gpu_s, LayerBlocks blocks) {
  IssuedOp issued;
  issued.host_s = issue_time(profile, modules, op, blocks);
  issued.gpu_s = gpu_s;
  issued.sync = is_named(op.name, PP_OP_HOST_SYNC);
  issued.index = static_cast<uint32_t>(index);
  issued.communicates = op.kind == PP_OP_COLLECTIVE || op.kind == PP_OP_SEND_RECV;
  return issued;
}

// The ops one layer of `kind` runs in `phase` (FORWARD, BACKWARD or RECOMPUTE), in plan order,
// each op's time on the compute stream given by `gpu_seconds(index)` (an executor that has
// priced its ops already passes its table). `share`: a layer among its chunk's first ones set
// apart (LayerShare::kFirst) or the others (kRest) runs only its share's ops (PlanView::op_share);
// kAll lists every op. `blocks`: layer_blocks(plan, kind), found once by a caller that lists every
// phase and share of a kind.
template <typename GpuSeconds>
std::vector<IssuedOp> layer_pass(const PlanView& plan, const pp_hardware_profile& profile, uint32_t kind,
                                 pp_phase phase, GpuSeconds gpu_seconds, LayerShare share, LayerBlocks blocks) {
  const uint32_t modules = cuda_graph_modules(plan.training());
  std::vector<IssuedOp> ops;
  for (size_t i = 0; i < plan.ops().size(); ++i) {
    const pp_op& op = plan.ops()[i];
    if (op.phase != phase || !in_layer(plan, i, kind) || !runs_in_share(share, plan.op_share(i))) continue;
    ops.push_back(issued_op(profile, modules, op, i, gpu_seconds(i), blocks));
  }
  return ops;
}

// One pass as every_layer_pass lists it.
struct LayerPass {
  uint32_t kind;  // PP_EVERY_LAYER_KIND for a plan without kinds
  LayerShare share;
  pp_phase phase;
  std::vector<IssuedOp> ops;
};

// Every pass layer_pass lists, for each layer kind (one, PP_EVERY_LAYER_KIND, for a plan without
// kinds), each share in `shares` and each of the three phases, the empty ones left out, in one
// scan of the plan: a search lists them all for every plan it times.
template <typename GpuSeconds>
std::vector<LayerPass> every_layer_pass(const PlanView& plan, const pp_hardware_profile& profile,
                                        std::span<const LayerShare> shares, GpuSeconds gpu_seconds) {
  constexpr pp_phase kPhases[] = {PP_PHASE_FORWARD, PP_PHASE_BACKWARD, PP_PHASE_RECOMPUTE};
  const uint32_t modules = cuda_graph_modules(plan.training());
  const uint32_t declared = plan.raw().layer_kind_count;
  const size_t kinds = declared == 0 ? 1 : declared;
  const auto kind_at = [&](size_t k) { return declared == 0 ? PP_EVERY_LAYER_KIND : static_cast<uint32_t>(k); };
  std::vector<LayerPass> passes;
  passes.reserve(kinds * shares.size() * 3);
  for (size_t k = 0; k < kinds; ++k)
    for (LayerShare share : shares)
      for (pp_phase phase : kPhases) passes.push_back({kind_at(k), share, phase, {}});
  // The blocks decide only what a CUDA graph captures.
  std::vector<LayerBlocks> blocks(kinds);
  if (modules != 0)
    for (size_t k = 0; k < kinds; ++k) blocks[k] = layer_blocks(plan, kind_at(k));
  for (size_t i = 0; i < plan.ops().size(); ++i) {
    const pp_op& op = plan.ops()[i];
    const size_t phase = static_cast<size_t>(std::find(std::begin(kPhases), std::end(kPhases), op.phase) - kPhases);
    if (phase == std::size(kPhases) || op.scope != PP_SCOPE_LAYER || op.frequency == PP_PER_STEP) continue;
    const uint32_t of = plan.op_layer_kind(i);
    const LayerShare runs_on = plan.op_share(i);
    for (size_t k = 0; k < kinds; ++k) {
      if (of != kind_at(k) && of != PP_EVERY_LAYER_KIND) continue;  // in_layer
      const IssuedOp issued = issued_op(profile, modules, op, i, gpu_seconds(i), blocks[k]);
      for (size_t s = 0; s < shares.size(); ++s)
        if (runs_in_share(shares[s], runs_on)) passes[(k * shares.size() + s) * 3 + phase].ops.push_back(issued);
    }
  }
  std::erase_if(passes, [](const LayerPass& pass) { return pass.ops.empty(); });
  return passes;
}

// The same, the layer's blocks found here.
template <typename GpuSeconds>
std::vector<IssuedOp> layer_pass(const PlanView& plan, const pp_hardware_profile& profile, uint32_t kind,
                                 pp_phase phase, GpuSeconds gpu_seconds, LayerShare share = LayerShare::kAll) {
  return layer_pass(plan, profile, kind, phase, gpu_seconds, share, layer_blocks(plan, kind));
}

inline std::vector<IssuedOp> layer_pass(const PlanView& plan, const pp_hardware_binding_v1& hardware, uint32_t kind,
                                        pp_phase phase, const int64_t* strides = nullptr,
                                        LayerShare share = LayerShare::kAll) {
  return layer_pass(
      plan, *hardware.profile, kind, phase,
      [&](size_t index) { return gpu_time(plan, hardware, plan.ops()[index], strides); }, share);
}

// What the host adds to one layer of `kind` (of `share`) in `phase`: the GPU's idle time, 0 when
// issuing is free or the host keeps ahead.
inline double host_wait_s(const PlanView& plan, const pp_hardware_binding_v1& hardware, uint32_t kind, pp_phase phase,
                          const int64_t* strides = nullptr, LayerShare share = LayerShare::kAll) {
  if (host_op_overhead_s(*hardware.profile) <= 0) return 0.0;
  return idle_s(layer_pass(plan, hardware, kind, phase, strides, share));
}

}  // namespace paraplan::issue

#endif  // PARAPLAN_HOST_ISSUE_HPP
