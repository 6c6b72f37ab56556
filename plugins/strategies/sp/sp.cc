// sp: splitting the sequence dimension, in one of three modes.
//
//   megatron  Sequence parallelism with tensor parallelism (Korthikanti et al. 2022). The
//             regions TP leaves replicated (norms, dropout, residual) are split along the
//             sequence over the TP ranks; each TP all-reduce becomes a reduce-scatter into the
//             sequence-parallel region and an all-gather out of it: the same bytes, and the
//             replicated activations ("act.seq.*", 10·s·b·h per layer) divide by t, so with
//             selective recompute a layer keeps 34·s·b·h/t. Shares the "tp" axis: no degree.
//   ring      Context parallelism with ring attention (Liu et al. 2023; Megatron-LM's
//             cp-comm-type p2p). Its own axis "cp" of degree c: every rank holds s/c tokens of
//             every sequence, so all token-proportional work and activations divide by c. For
//             attention each rank passes its K/V chunk around the ring, c-1 point-to-point
//             steps forward (K and V) and backward (K, V and their gradients), overlapped with
//             the attention of the chunk at hand.
//   ulysses   Context parallelism with DeepSpeed-Ulysses (Jacobs et al. 2023): all-to-all
//             before attention turns sequence shards into head shards (each rank attends over
//             the full sequence for heads/c heads) and all-to-all after turns them back: Q, K, V
//             in and the output out, forward and backward; on the critical path.
// With tp, ring and ulysses leave TP's replicated regions whole unless megatron_sp = true, which
// applies Megatron SP first (Megatron-LM runs --context-parallel-size with --sequence-parallel).
// Gradients of ranks in a cp group are reduced together by the data-parallel strategy.
#include <algorithm>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "paraplan/sdk.hpp"

namespace {

constexpr const char* kName = PP_STRATEGY_SP;

class SequenceParallel : public paraplan::Strategy {
 public:
  static constexpr int32_t apply_order = 30;

  static paraplan::PluginInfo info() {
    return {kName,
            "1.0.0",
            "Sequence parallelism: megatron (with TP), or context parallelism by ring attention or Ulysses",
            {paraplan::ParamSpec::Enum("mode", {"megatron", "ring", "ulysses"}, "megatron",
                                       "megatron: shard TP's replicated regions (no degree); ring / ulysses: context "
                                       "parallelism over its own axis \"cp\" of the given degree"),
             paraplan::ParamSpec::Bool("megatron_sp", false,
                                       "ring / ulysses with tp: also shard TP's replicated regions along the sequence, "
                                       "as Megatron-LM runs --context-parallel-size with --sequence-parallel")}};
  }

  explicit SequenceParallel(const paraplan::Params& params)
      : mode_(params.string_value("mode")), megatron_sp_(params.bool_value("megatron_sp")) {}

  // Megatron SP rides on the tp axis (degree 1); context parallelism takes degrees from 2.
  static std::vector<paraplan::SearchCase> search_space() {
    return {paraplan::SearchCase::degrees(1, 1).choose("mode", {"megatron"}),
            paraplan::SearchCase::degrees(2).choose("mode", {"ring", "ulysses"})};
  }

  void validate(const paraplan::StrategyContext& context) override {
    const int64_t c = context.degree;
    const pp_model& model = context.model;
    if (mode_ == "megatron" && megatron_sp_)
      return refuse("sp megatron_sp = true combines Megatron SP with mode \"ring\" or \"ulysses\"; "
                    "mode \"megatron\" is Megatron SP already");
    if (mode_ == "megatron") {
      if (c != 1)
        return refuse("sp mode \"megatron\" shards over the tp axis and takes no degree (got " + std::to_string(c) +
                      "); use mode \"ring\" or \"ulysses\" for context parallelism");
      return;
    }
    // Causal load balancing gives each rank two chunks of the sequence (Megatron-LM requires it).
    if (mode_ == "ring" && model.seq_len % (2 * c) != 0)
      return refuse("sp ring: 2 x cp = " + std::to_string(2 * c) + " must divide seq_len = " +
                    std::to_string(model.seq_len));
    if (mode_ == "ulysses" && model.seq_len % c != 0)
      return refuse("sp ulysses: cp = " + std::to_string(c) + " must divide seq_len = " + std::to_string(model.seq_len));
  }

  void apply(const paraplan::StrategyContext& context, paraplan::PlanEditor& plan) override {
    if (mode_ == "megatron" || megatron_sp_) {
      const paraplan::PlanView view = plan.view();
      if (view.axis_index(PP_AXIS_TP) < 0)
        return refuse("sp mode \"megatron\" needs tensor parallelism: add a [[strategy]] name = \"tp\"");
      apply_megatron(plan, view, std::vector<pp_op>(view.ops().begin(), view.ops().end()),
                     std::vector<pp_memory_item>(view.memory().begin(), view.memory().end()));
      if (mode_ == "megatron") return;
    }
    // A fresh view: Megatron SP above may have added gathers, which carry tokens too.
    const paraplan::PlanView view = plan.view();
    const std::vector<pp_op> ops(view.ops().begin(), view.ops().end());
    const std::vector<pp_memory_item> memory(view.memory().begin(), view.memory().end());
    const int32_t tp_axis = view.axis_index(PP_AXIS_TP);
    const double t = tp_axis >= 0 ? static_cast<double>(view.axes()[static_cast<size_t>(tp_axis)].degree) : 1.0;
    const int32_t axis = plan.add_axis(PP_AXIS_CP, context.degree, kName);
    const double c = static_cast<double>(context.degree);
    if (mode_ == "ulysses") {
      const pp_model& model = context.model;
      auto heads_per_rank = [&](int64_t heads, const char* what) {
        if (static_cast<int64_t>(heads / t) % context.degree != 0)
          throw paraplan::ConstraintError("sp ulysses: cp = " + std::to_string(context.degree) + " must divide the " + what +
                                          " per tensor-parallel rank = " + std::to_string(static_cast<int64_t>(heads / t)));
      };
      heads_per_rank(model.heads, "attention heads");
      heads_per_rank(model.kv_heads, "KV heads");
    }
    split_tokens(plan, ops, memory, c);
    if (context.degree > 1) add_context_communication(plan, axis, ops, context.model, t, c);
  }

 private:
  // Where (and in which phase) the all-gather that pairs with the TP collective at `index` runs;
  // tp places its all-reduces after row-parallel GEMMs forward, before column-parallel ones
  // backward. Forward, the sequence-parallel region is gathered before the block's
  // column-parallel GEMM; backward, the gradient is gathered right after the row-parallel GEMM's
  // backward entry, which a backward pass runs before it. The vocabulary-parallel ends pair across
  // phases: the embedding's output is scattered forward and its gradient gathered backward; the
  // output layer's input is gathered forward and its gradient scattered backward.
  struct GatherPlace {
    uint32_t at;
    pp_phase phase;
  };
  static GatherPlace gather_place(const std::vector<pp_op>& ops, uint32_t index) {
    const pp_phase phase = ops[index].phase;
    const bool backward = phase == PP_PHASE_BACKWARD;
    const std::string_view anchor = backward ? (index + 1 < ops.size() ? ops[index + 1].name : "")
                                             : (index > 0 ? ops[index - 1].name : "");
    auto find = [&](std::initializer_list<std::string_view> names, pp_phase in) -> int64_t {
      for (uint32_t i = 0; i < ops.size(); ++i)
        if (ops[i].phase == in && std::find(names.begin(), names.end(), std::string_view(ops[i].name)) != names.end())
          return i;
      return -1;
    };
    int64_t partner = -1;
    if (!backward) {
      if (anchor == PP_OP_ATTN_OUT) partner = find({PP_OP_QKV}, phase);
      if (anchor == PP_OP_MLP_DOWN) partner = find({PP_OP_MLP_UP, PP_OP_MLP_GATE}, phase);
      if (anchor == PP_OP_EXPERT_DOWN) partner = find({PP_OP_EXPERT_UP, PP_OP_EXPERT_GATE}, phase);
      if (partner >= 0) return {static_cast<uint32_t>(partner), phase};
      partner = anchor == PP_OP_EMBEDDING ? find({PP_OP_EMBEDDING}, PP_PHASE_BACKWARD) : -1;
      if (partner >= 0) return {static_cast<uint32_t>(partner + 1), PP_PHASE_BACKWARD};
    } else {
      if (anchor == PP_OP_QKV) partner = find({PP_OP_ATTN_OUT}, phase);
      if (anchor == PP_OP_MLP_UP || anchor == PP_OP_MLP_GATE) partner = find({PP_OP_MLP_DOWN}, phase);
      if (anchor == PP_OP_EXPERT_UP || anchor == PP_OP_EXPERT_GATE) partner = find({PP_OP_EXPERT_DOWN}, phase);
      if (partner >= 0) return {static_cast<uint32_t>(partner + 1), phase};
      partner = anchor == PP_OP_LOGITS ? find({PP_OP_LOGITS}, PP_PHASE_FORWARD) : -1;
      if (partner >= 0) return {static_cast<uint32_t>(partner), PP_PHASE_FORWARD};
    }
    return {index + 1, phase};
  }

  // Megatron-LM's --tp-comm-overlap as Transformer Engine's userbuffers run it (transformer_engine/
  // pytorch/module/base.py, initialize_ub's defaults). Forward (and recomputed forward), the
  // all-gather before a column-parallel GEMM (qkv_fprop, fc1_fprop) is a ring exchange: the GEMM
  // runs in t chunks, each on the shard at hand while the next arrives, so nothing waits; the
  // reduce-scatter after a row-parallel GEMM (proj_fprop, fc2_fprop) is "pipeline" with 4 splits:
  // the GEMM runs in 4 chunks, each chunk's reduce-scatter behind the next chunk, the last one's
  // exposed. Backward the pairs are bulk overlaps (a whole collective beside the other GEMM) or
  // ring exchanges of the data-gradient GEMM, which the plan's one backward op per GEMM (data and
  // weight gradients together) cannot split: hidden, the GEMMs whole. The experts' grouped GEMMs
  // have no userbuffers overlap; their collectives stay as tp marked them.
  static constexpr double kPipelinedSplits = 4;

  // tp marks its all-reduces overlapped plan-wide (its `overlap` parameter).
  static bool overlaps_as_userbuffers(const std::vector<pp_op>& ops) {
    for (const pp_op& op : ops)
      if (op.kind == PP_OP_COLLECTIVE && std::string_view(op.name) == PP_OP_TP_ALL_REDUCE) return op.overlap == PP_OVERLAP_COMPUTE;
    return false;
  }
  // The GEMMs userbuffers overlap: the column-parallel ones after a ring-exchanged all-gather, the
  // row-parallel ones before a pipelined reduce-scatter (attention's and the dense MLP's).
  static bool ring_exchanged(std::string_view gemm) {
    return gemm == PP_OP_QKV || gemm == PP_OP_MLP_UP || gemm == PP_OP_MLP_GATE;
  }
  static bool pipelined(std::string_view gemm) { return gemm == PP_OP_ATTN_OUT || gemm == PP_OP_MLP_DOWN; }
  // A forward reduction right after a pipelined row-parallel GEMM.
  static bool pipelined_reduce_scatter(const std::vector<pp_op>& ops, uint32_t index) {
    if (index == 0 || ops[index].phase == PP_PHASE_BACKWARD || ops[index].scope != PP_SCOPE_LAYER) return false;
    return pipelined(ops[index - 1].name);
  }
  // The same GEMM as `chunks` GEMMs of 1/chunks of its rows each, which run below the whole one's
  // rate (the cost model's size curve).
  static pp_op in_chunks(pp_op gemm, double chunks) {
    gemm.m /= chunks;
    gemm.count = (gemm.count > 0 ? gemm.count : 1.0) * chunks;
    return gemm;
  }

  // Megatron SP: every TP all-reduce becomes reduce-scatter + all-gather; replicated work and
  // activations divide by t.
  void apply_megatron(paraplan::PlanEditor& plan, const paraplan::PlanView& view, const std::vector<pp_op>& ops,
                      const std::vector<pp_memory_item>& memory) const {
    const int32_t tp_axis = view.axis_index(PP_AXIS_TP);  // apply() refused a plan without one
    const double t = static_cast<double>(view.axes()[static_cast<size_t>(tp_axis)].degree);
    struct Insertion {
      uint32_t at;
      pp_op op;
    };
    std::vector<Insertion> insertions;  // the gathers, and the exposed reductions' last chunks
    const bool chunked = overlaps_as_userbuffers(ops);
    for (uint32_t i = 0; i < ops.size(); ++i) {
      pp_op op = ops[i];
      const std::string_view name = op.name;
      if (op.kind == PP_OP_COLLECTIVE && name == PP_OP_TP_ALL_REDUCE) {
        op.collective = PP_COLLECTIVE_REDUCE_SCATTER;
        paraplan::copy_name(op.name, PP_OP_TP_REDUCE_SCATTER);
        pp_op gather = op;
        gather.collective = PP_COLLECTIVE_ALL_GATHER;
        paraplan::copy_name(gather.name, PP_OP_TP_ALL_GATHER);
        if (chunked && pipelined_reduce_scatter(ops, i)) {
          // The last of the GEMM's chunks reduces behind no compute.
          pp_op last = op;
          last.bytes = op.bytes / kPipelinedSplits;
          last.overlap = PP_OVERLAP_NONE;
          op.bytes -= last.bytes;
          insertions.push_back({i + 1, last});
        }
        plan.set_op(i, op);
        const GatherPlace place = gather_place(ops, i);
        gather.phase = place.phase;
        insertions.push_back({place.at, gather});
      } else if (chunked && op.kind == PP_OP_GEMM && op.phase != PP_PHASE_BACKWARD && ring_exchanged(name)) {
        plan.set_op(i, in_chunks(op, t));  // one chunk per shard as it arrives
      } else if (chunked && op.kind == PP_OP_GEMM && op.phase != PP_PHASE_BACKWARD && pipelined(name)) {
        plan.set_op(i, in_chunks(op, kPipelinedSplits));
      } else if (name == PP_OP_ATTN_NORM || name == PP_OP_MLP_NORM || name == PP_OP_ATTN_RESIDUAL ||
                 name == PP_OP_MLP_RESIDUAL || name == PP_OP_FP8_CAST_SEQ || name == PP_OP_FINAL_NORM ||
                 name == PP_OP_EMBEDDING || name == PP_OP_ROUTER_TOPK || name == PP_OP_MOE_PERMUTE ||
                 name == PP_OP_MOE_UNPERMUTE) {
        op.bytes /= t;  // norms, dropout, residuals and the routing of this rank's tokens now run on s/t
        plan.set_op(i, op);
      } else if (name == PP_OP_ROUTER) {
        op.m /= t;  // the router's GEMM (not split by tp) scores only this rank's s/t tokens
        op.flops /= t;
        plan.set_op(i, op);
      }
    }
    // From the back, so earlier positions stay valid.
    std::stable_sort(insertions.begin(), insertions.end(), [](const Insertion& a, const Insertion& b) { return a.at > b.at; });
    for (const Insertion& insertion : insertions) plan.insert_op(insertion.at, insertion.op);
    for (uint32_t i = 0; i < memory.size(); ++i) {
      pp_memory_item item = memory[i];
      if (item.kind != PP_MEMORY_ACTIVATIONS || !paraplan::has_prefix(item.name, PP_MEMORY_PREFIX_ACT_SEQ)) continue;
      item.bytes /= t;
      plan.set_memory(i, item);
    }
  }

  // Context parallelism: everything proportional to tokens divides by c. The optimizer update
  // (phase STEP) is proportional to parameters and stays.
  void split_tokens(paraplan::PlanEditor& plan, const std::vector<pp_op>& ops,
                    const std::vector<pp_memory_item>& memory, double c) const {
    for (uint32_t i = 0; i < ops.size(); ++i) {
      pp_op op = ops[i];
      if (op.phase == PP_PHASE_STEP) continue;
      if (op.kind == PP_OP_GEMM) op.m /= c;
      if (op.kind == PP_OP_ATTENTION) {
        // ring: s/c queries against all s keys; ulysses: all s queries for heads/c heads.
        if (mode_ == "ring") op.m /= c;
        else op.count /= c;
      }
      op.flops /= c;
      op.bytes /= c;
      plan.set_op(i, op);
    }
    for (uint32_t i = 0; i < memory.size(); ++i) {
      pp_memory_item item = memory[i];
      if (item.kind != PP_MEMORY_ACTIVATIONS) continue;
      item.bytes /= c;
      plan.set_memory(i, item);
    }
  }

  // One set per pass of the layer that runs attention (FORWARD, BACKWARD, RECOMPUTE), anchored on
  // the attention core so recompute only repeats what recomputes attention.
  void add_context_communication(paraplan::PlanEditor& plan, int32_t axis, const std::vector<pp_op>& ops,
                                 const pp_model& model, double t, double c) const {
    const paraplan::PlanView view = plan.view();
    const std::vector<uint32_t> kinds(view.raw().op_layer_kinds, view.raw().op_layer_kinds + ops.size());
    for (size_t index = 0; index < ops.size(); ++index) {
      const pp_op& op = ops[index];
      // The attention core: one fused op, or the first of its two unfused GEMMs.
      const std::string_view name = op.name;
      if (name != PP_OP_ATTENTION_CORE && name != PP_OP_ATTENTION_SCORES) continue;
      const uint32_t kind = kinds[index];
      // Per rank after this split: s/c tokens of b sequences; widths per tensor-parallel rank.
      // The widths of this kind of layer: MLA's keys carry nope + rope dims, its values v dims.
      double heads = static_cast<double>(model.heads), q_width = heads * static_cast<double>(model.head_dim);
      double kv_width = static_cast<double>(2 * model.kv_heads * model.head_dim);
      if (kind != PP_EVERY_LAYER_KIND) {
        const pp_layer_kind& layer = paraplan::LayerKinds(model)[kind];
        heads = static_cast<double>(layer.heads);
        if (layer.mixer == PP_MIXER_MLA) {
          const double qk = static_cast<double>(layer.qk_nope_head_dim + layer.qk_rope_head_dim);
          q_width = heads * qk;
          kv_width = heads * (qk + static_cast<double>(layer.v_head_dim));
        } else {
          q_width = heads * static_cast<double>(layer.head_dim);
          kv_width = static_cast<double>(2 * layer.kv_heads * layer.head_dim);
        }
      }
      const double tokens = op.count / (heads / t) * op.m / c;  // b·s/c
      const double q_bytes = tokens * q_width / t * 2.0;
      const double kv_bytes = tokens * kv_width / t * 2.0;
      const bool backward = op.phase == PP_PHASE_BACKWARD;
      if (mode_ == "ring") {
        pp_op ring = paraplan::make_op(PP_OP_SEND_RECV, op.phase, op.scope, PP_OP_CP_RING_KV, kName);
        ring.axis = axis;
        ring.bytes = backward ? 2.0 * kv_bytes : kv_bytes;  // backward also passes dK and dV on
        ring.repeat = static_cast<uint32_t>(c - 1);
        ring.overlap = PP_OVERLAP_COMPUTE;
        plan.insert_layer_op(plan.view().raw().op_count, ring, kind);
      } else {
        add_all_to_all(plan, axis, op, kind, PP_OP_CP_ALL_TO_ALL_QKV, q_bytes + kv_bytes);
        add_all_to_all(plan, axis, op, kind, PP_OP_CP_ALL_TO_ALL_OUT, q_bytes);  // the output has the queries' width
      }
    }
  }

  void add_all_to_all(paraplan::PlanEditor& plan, int32_t axis, const pp_op& anchor, uint32_t kind, const char* name,
                      double bytes) const {
    pp_op op = paraplan::make_op(PP_OP_COLLECTIVE, anchor.phase, anchor.scope, name, kName);
    op.collective = PP_COLLECTIVE_ALL_TO_ALL;
    op.axis = axis;
    op.bytes = bytes;
    plan.insert_layer_op(plan.view().raw().op_count, op, kind);
  }

  std::string mode_;
  bool megatron_sp_;
};

}  // namespace

PARAPLAN_PLUGIN(SequenceParallel)
