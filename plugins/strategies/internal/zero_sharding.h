// plugins/strategies/internal/zero_sharding.h: ZeRO sharding of the model state over one
// data-parallel group, shared by the `fsdp` and `hsdp` strategies (Rajbhandari et al. 2020).
//
//   stage 0  plain data parallelism: every rank holds everything; gradients all-reduced once per
//            step, bucketed behind the last micro-batch's backward pass.
//   stage 1  optimizer state sharded (Megatron-LM's distributed optimizer): gradients
//            reduce-scattered once per step, updated weights all-gathered after the update.
//   stage 2  gradients sharded too: to keep them sharded across gradient accumulation, the
//            reduce-scatter runs every micro-batch.
//   stage 3  parameters sharded too: each layer's weights are all-gathered before its forward
//            and again before its backward, gradients reduce-scattered: 1.5x the bytes of
//            stage 0, hidden behind compute by prefetching the next layer.
// With 2-byte gradients the model state per rank is 16Ψ, 4Ψ + 12Ψ/N, 2Ψ + 14Ψ/N, 16Ψ/N for a
// group of N ranks.
//
// Sizes come from the plan's memory when the strategy runs (after tensor, pipeline and expert
// parallelism divided it): all-gathers move weights (2 bytes per parameter), reductions move
// gradients (2 or 4 bytes). Expert weights are replicated over fewer ranks: when expert
// parallelism created the axis "edp" (expert data parallelism), expert state ("*.experts") is
// sharded and reduced over it instead of the group's axis. With context parallelism ("cp"),
// ranks of a cp group hold the same weights too: stages 1-3 shard over dp x cp (Megatron-LM's
// distributed optimizer, Megatron-FSDP and torchtitan's FSDP2 on its dp_shard_cp mesh), their
// collectives running over "cp" too; stage 0 all-reduces the full gradients over "cp".
// Under pipeline parallelism stages 2 and 3 synchronise once per step (`syncs_per_step`): the
// only engine that runs them with a pipeline, PyTorch FSDP2 under torch.distributed.pipelining,
// holds gradients and gathered weights whole from a step's first micro-batch to its last.
//
// How the engine runs its collectives (DataParallelEngine, the strategies' parameters): gradient
// buckets of a fixed number of parameters (Megatron-LM's DDP and distributed optimizer, DeepSpeed)
// or one per layer (PyTorch FSDP2 and Megatron-FSDP, a unit per transformer block), each bucket a
// collective of its own that pays the ring's latency; and how many layers stage 3 gathers ahead.
//
//   paraplan::strategies::ZeroSharding zero("fsdp", {.stage = 3});
//   int32_t dp = plan.add_axis("dp", degree, "fsdp");
//   zero.apply(plan, dp, degree);  // shards memory, adds the collectives
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "paraplan/sdk.hpp"

namespace paraplan::strategies {

// Expert state ("weights.experts", "optimizer_step.experts") lives on the expert-data-parallel
// group; everything else, shared experts included, on the full data-parallel group.
inline bool is_expert_state(std::string_view name) { return name.ends_with("." PP_MEMORY_SUFFIX_EXPERTS); }

// Ops that update parameters: "optimizer_step" and its variants ("optimizer_step.experts", ...).
inline bool is_optimizer_step(const char* name) {
  return is_named(name, PP_OP_OPTIMIZER_STEP) || has_prefix(name, PP_OP_OPTIMIZER_STEP ".");
}

// Where model state lives: a scope and, for layers, their kind (PP_EVERY_LAYER_KIND: state every
// layer holds, whatever its kind, as a 1.5 strategy adds it).
struct StateSlot {
  pp_scope scope;
  uint32_t kind;
};

// The slots in plan order: the embedding, each kind of layer, the head.
inline std::vector<StateSlot> state_slots(const PlanView& view) {
  std::vector<StateSlot> slots{{PP_SCOPE_EMBEDDING, PP_EVERY_LAYER_KIND}};
  for (uint32_t kind = 0; kind < view.raw().layer_kind_count; ++kind) slots.push_back({PP_SCOPE_LAYER, kind});
  slots.push_back({PP_SCOPE_LAYER, PP_EVERY_LAYER_KIND});
  slots.push_back({PP_SCOPE_HEAD, PP_EVERY_LAYER_KIND});
  return slots;
}

// The bytes one group of ranks shards and communicates, per slot (state_slots' order): weights as
// they are gathered (2 bytes each), gradients at their dtype.
struct StateBytes {
  std::vector<StateSlot> slots;
  std::vector<double> weights, gradients;
};

// The model state before sharding, split into what lives on the data-parallel group (dense) and
// on the expert-data-parallel group (experts).
struct ModelState {
  StateBytes dense;
  StateBytes experts;
  double dense_shards = 1;  // the ranks a rank's share of the dense state is one of (dp, or dp x cp)
};

// The data-parallel engine's behaviour, as fsdp and hsdp take it from the recipe
// (docs/recipes.md lists each engine's values).
struct DataParallelEngine {
  int64_t stage = 0;
  bool overlap = true;  // gradient reductions behind backward, stage-3 gathers prefetched
  // Parameters per gradient bucket: a layer of P parameters is reduced in ceil(P / bucket)
  // collectives (and, at stages 1-2, its updated weights gathered in as many: Megatron-LM runs
  // the distributed optimizer's all-gather on the gradient buckets). 0: one per layer. A bucket
  // never spans layers here: a larger one is priced as one collective per layer.
  double bucket_parameters = 0;
  int64_t prefetch = 1;  // stage 3: layers gathered ahead of the running one (0: each waits for its own)
};

// The smallest bucket a recipe may ask for: below it the buckets' latency, not their bytes, is
// all a plan would show (Megatron-LM's smallest default is 40 million).
inline constexpr double kMinBucketParameters = 1e5;

// Why the engine's settings cannot run, or empty when they can.
inline std::string engine_refusal(std::string_view owner, const DataParallelEngine& engine) {
  if (engine.bucket_parameters > 0 && engine.bucket_parameters < kMinBucketParameters) {
    char bucket[32];
    std::snprintf(bucket, sizeof bucket, "%g", engine.bucket_parameters);
    return std::string(owner) + " " PP_DP_PARAM_BUCKET_PARAMETERS " = " + bucket +
           ": 0 (one bucket per layer) or at least 100000 parameters";
  }
  if (engine.prefetch != 1 && engine.stage < 3)
    return std::string(owner) + " " PP_DP_PARAM_PREFETCH " = " + std::to_string(engine.prefetch) +
           ": prefetching is stage 3's (its weights' all-gathers); stage " + std::to_string(engine.stage) +
           " gathers nothing before a layer runs";
  return {};
}

// The recipe keys fsdp and hsdp share: `leading` (a strategy's own), the ZeRO stage (each
// strategy's range and default), then the engine's.
inline std::vector<ParamSpec> data_parallel_params(ParamSpec stage, std::vector<ParamSpec> leading = {}) {
  std::vector<ParamSpec> params = std::move(leading);
  params.push_back(std::move(stage));
  params.push_back(ParamSpec::Bool(PP_DP_PARAM_OVERLAP, true,
                                   "overlap gradient reductions with backward and prefetch stage-3 all-gathers"));
  params.push_back(ParamSpec::Float(PP_DP_PARAM_BUCKET_PARAMETERS, 0,
                                    "parameters per gradient bucket, each a collective (Megatron-LM 4e7, DeepSpeed "
                                    "5e8); 0 = one per layer (PyTorch FSDP2, Megatron-FSDP)")
                       .at_least(0));
  params.push_back(ParamSpec::Int(PP_DP_PARAM_PREFETCH, 1,
                                  "stage 3: layers whose weights are gathered ahead of the running one (0: none)")
                       .range(0, 8));
  return params;
}

inline DataParallelEngine data_parallel_engine(const Params& params) {
  return {params.int_value(PP_DP_PARAM_STAGE), params.bool_value(PP_DP_PARAM_OVERLAP),
          params.float_value(PP_DP_PARAM_BUCKET_PARAMETERS), params.int_value(PP_DP_PARAM_PREFETCH)};
}

class ZeroSharding {
 public:
  ZeroSharding(std::string owner, DataParallelEngine engine)
      : owner_(std::move(owner)), engine_(engine) {}

  // Why these settings cannot run, or empty (for the strategy's validate()).
  std::string refusal() const { return engine_refusal(owner_, engine_); }

  // Shards the state over `group_axis` (degree `group`), expert state over "edp" when it exists,
  // and adds the ZeRO collectives for both and the gradient all-reduce over "cp". Returns the
  // state as it was before sharding, so a caller can size further collectives from it.
  ModelState apply(PlanEditor& plan, int32_t group_axis, int64_t group) const {
    const PlanView view = plan.view();
    const int32_t edp_axis = view.axis_index(PP_AXIS_EDP);
    const int32_t cp_axis = view.axis_index(PP_AXIS_CP);
    const double dp = static_cast<double>(group);
    const double cp = cp_axis >= 0 ? static_cast<double>(view.axes()[static_cast<size_t>(cp_axis)].degree) : 1.0;
    // Context-parallel ranks hold the same weights, so every sharded stage spreads over dp x cp:
    // Megatron-LM's distributed optimizer (stages 1-2; optimizer/__init__.py builds it on the
    // intra_dp_cp group), and stage 3 as torchtitan's FSDP2 shards on its dp_shard_cp mesh
    // (parallel_dims.py) and Megatron-FSDP on the dp-cp group.
    const bool over_cp = engine_.stage >= 1 && cp > 1;
    const double dense_shards = over_cp ? dp * cp : dp;
    const bool per_step = syncs_per_step(view);
    // ep carves "edp" out of cp x dp (ep.cc), so expert state already spans the cp ranks; without
    // ep the experts are replicated like dense state.
    const double expert_shards =
        edp_axis >= 0 ? static_cast<double>(view.axes()[static_cast<size_t>(edp_axis)].degree) : dense_shards;

    // Collective sizes are the unsharded state: read it before sharding. Which items are expert
    // state is read once (a search applies this to every candidate plan).
    std::vector<bool> expert(view.memory().size());
    for (size_t i = 0; i < expert.size(); ++i) expert[i] = is_expert_state(view.memory()[i].name);
    const ModelState state{state_bytes(view, expert, /*experts=*/false), state_bytes(view, expert, /*experts=*/true),
                           dense_shards};
    shard(plan, expert, dense_shards, expert_shards, per_step);

    if (dp > 1) add_communication(plan, group_axis, state.dense, per_step);
    if (edp_axis >= 0 && expert_shards > 1) add_communication(plan, edp_axis, state.experts, per_step);
    if (edp_axis < 0 && dp > 1) add_communication(plan, group_axis, state.experts, per_step);
    if (cp > 1) add_context_parallel_communication(plan, cp_axis, state, dp, edp_axis < 0, per_step);
    if (engine_.stage == 3) add_gathered_buffers(plan, state, dense_shards > 1, expert_shards > 1, per_step);
    return state;
  }

  // Whether stages 2 and 3 reduce gradients once per step instead of every micro-batch. They do
  // under pipeline parallelism: torch.distributed.pipelining runs every backward of a step but
  // the last with FSDP2's set_requires_gradient_sync(False) and set_reshard_after_backward(False)
  // (stage.py, backward_maybe_with_nosync), and torchtitan keeps parameters gathered after
  // forward when pp > 1 (reshard_after_forward's "default" policy). Gradients then accumulate
  // whole, reduce-scattered once, and stage 3 gathers each layer once per step. No other engine
  // pipelines ZeRO-2/3 (DeepSpeed's pipeline engine takes stages 0-1, Megatron-LM's FSDP refuses
  // pp), so this is the rule, not a choice. The Llama 3 paper's 4D parallelism is this case: its
  // data-parallel ranks "synchronize after each training step" (Dubey et al. 2024, §3.3.2).
  bool syncs_per_step(const PlanView& view) const {
    const int32_t pp_axis = view.axis_index(PP_AXIS_PP);
    return engine_.stage >= 2 && pp_axis >= 0 && view.axes()[static_cast<size_t>(pp_axis)].degree > 1;
  }

  // How often the gradients are reduce-scattered: once per step at stage 1 (the distributed
  // optimizer accumulates whole gradients) and when synchronised once per step, else every
  // micro-batch, which keeps stages 2 and 3 sharded across accumulation.
  pp_frequency reduction_frequency(bool per_step) const {
    return engine_.stage == 1 || per_step ? PP_PER_STEP : PP_PER_MICRO_BATCH;
  }

  // How many collectives move one slot's state of `weight_bytes` (its weights as gathered, 2
  // bytes a parameter): one per bucket of the engine's size, at least one.
  uint32_t buckets(double weight_bytes) const {
    if (engine_.bucket_parameters <= 0) return 1;
    return static_cast<uint32_t>(std::max(1.0, std::ceil(weight_bytes / kComputeWeightBytes / engine_.bucket_parameters)));
  }

  // Appends one collective owned by this strategy, as `collectives` equal back-to-back ones
  // (buckets) of bytes / collectives each. `overlap` lets it hide behind compute unless it runs
  // after the optimizer (phase STEP), where nothing is left to hide it behind, or it is a stage-3
  // gather with nothing prefetched (each layer then waits for its own weights).
  void add(PlanEditor& plan, int32_t axis, StateSlot slot, const char* name, pp_collective kind, pp_phase phase,
           pp_frequency frequency, double bytes, uint32_t collectives = 1) const {
    if (bytes <= 0) return;
    pp_op op = make_op(PP_OP_COLLECTIVE, phase, slot.scope, name, owner_);
    op.collective = kind;
    op.axis = axis;
    op.bytes = bytes / collectives;
    op.repeat = collectives;
    op.frequency = frequency;
    const bool waits_for_itself = phase != PP_PHASE_STEP && kind == PP_COLLECTIVE_ALL_GATHER && engine_.prefetch < 1;
    op.overlap = engine_.overlap && phase != PP_PHASE_STEP && !waits_for_itself ? PP_OVERLAP_COMPUTE : PP_OVERLAP_NONE;
    plan.insert_layer_op(plan.view().raw().op_count, op, slot.kind);
  }

 private:
  // `expert`: whether each memory item is expert state.
  static StateBytes state_bytes(const PlanView& view, const std::vector<bool>& expert, bool experts) {
    StateBytes bytes{state_slots(view), {}, {}};
    // Weights move and are held gathered at 2 bytes, however they are kept between steps.
    const double gathered_per_stored = kComputeWeightBytes / stored_weight_bytes(view.training());
    bytes.weights.assign(bytes.slots.size(), 0.0);
    bytes.gradients.assign(bytes.slots.size(), 0.0);
    for (size_t i = 0; i < view.memory().size(); ++i) {
      const pp_memory_item& item = view.memory()[i];
      if (expert[i] != experts) continue;
      const uint32_t kind = item.scope == PP_SCOPE_LAYER ? view.memory_layer_kind(i) : PP_EVERY_LAYER_KIND;
      for (size_t slot = 0; slot < bytes.slots.size(); ++slot) {
        if (bytes.slots[slot].scope != item.scope || bytes.slots[slot].kind != kind) continue;
        if (item.kind == PP_MEMORY_PARAMETERS) bytes.weights[slot] += item.bytes * gathered_per_stored;
        if (item.kind == PP_MEMORY_GRADIENTS) bytes.gradients[slot] += item.bytes;
      }
    }
    return bytes;
  }

  // Divides each sharded item (and the optimizer update) by the ranks it is spread over.
  // Gradients synchronised once per step are held whole until then. The items and ops to change
  // are copied from one view before any edit (an edit may move the plan's arrays), not the plan.
  void shard(PlanEditor& plan, const std::vector<bool>& expert, double dense_shards, double expert_shards,
             bool per_step) const {
    const PlanView view = plan.view();
    std::vector<std::pair<uint32_t, pp_memory_item>> items;
    std::vector<std::pair<uint32_t, pp_op>> updates;
    for (uint32_t i = 0; i < view.memory().size(); ++i) {
      const pp_memory_item& item = view.memory()[i];
      const bool sharded = (item.kind == PP_MEMORY_OPTIMIZER && engine_.stage >= 1) ||
                           (item.kind == PP_MEMORY_GRADIENTS && engine_.stage >= 2 && !per_step) ||
                           (item.kind == PP_MEMORY_PARAMETERS && engine_.stage >= 3);
      if (sharded) items.emplace_back(i, item);
    }
    // From stage 1 on, the optimizer update touches only this rank's shard.
    if (engine_.stage >= 1)
      for (uint32_t i = 0; i < view.ops().size(); ++i)
        if (is_optimizer_step(view.ops()[i].name)) updates.emplace_back(i, view.ops()[i]);
    for (auto& [i, item] : items) {
      item.bytes /= expert[i] ? expert_shards : dense_shards;
      plan.set_memory(i, item);
    }
    for (auto& [i, op] : updates) {
      op.bytes /= is_expert_state(op.name) ? expert_shards : dense_shards;
      plan.set_op(i, op);
    }
  }

  // Over cp, after the data-parallel collectives, as a hierarchical collective over dp x cp would
  // run (the same bytes as one collective on the combined group). The distributed optimizer
  // (stages 1-2) reduce-scatters the 1/dp gradient shard over cp and all-gathers the updated 1/dp
  // weights back; stage 3 gathers the 1/dp weight shard over cp before each forward and backward
  // and reduce-scatters the 1/dp gradient shard, every micro-batch; stage 0 all-reduces the full
  // gradients. Expert state joins only when it is not already reduced over an "edp" that spans cp.
  void add_context_parallel_communication(PlanEditor& plan, int32_t cp_axis, const ModelState& state, double dp,
                                          bool with_experts, bool per_step) const {
    const double share = engine_.stage >= 1 ? 1.0 / dp : 1.0;
    const pp_frequency reduction = reduction_frequency(per_step);
    for (size_t i = 0; i < state.dense.slots.size(); ++i) {
      const double slot_weights = state.dense.weights[i] + (with_experts ? state.experts.weights[i] : 0.0);
      const double gradients = (state.dense.gradients[i] + (with_experts ? state.experts.gradients[i] : 0.0)) * share;
      const double weights = slot_weights * share;
      // Each of the combined dp x cp collective's buckets has its leg over cp.
      const uint32_t collectives = buckets(slot_weights);
      const StateSlot slot = state.dense.slots[i];
      if (engine_.stage == 1 || engine_.stage == 2) {
        add(plan, cp_axis, slot, PP_OP_GRAD_REDUCE_SCATTER, PP_COLLECTIVE_REDUCE_SCATTER, PP_PHASE_BACKWARD, reduction,
            gradients, collectives);
        add(plan, cp_axis, slot, PP_OP_PARAM_ALL_GATHER, PP_COLLECTIVE_ALL_GATHER, PP_PHASE_STEP, PP_PER_STEP, weights,
            collectives);
      } else if (engine_.stage == 3) {
        add_stage3_gathers(plan, cp_axis, slot, weights, per_step);
        add(plan, cp_axis, slot, PP_OP_GRAD_REDUCE_SCATTER, PP_COLLECTIVE_REDUCE_SCATTER, PP_PHASE_BACKWARD, reduction,
            gradients, collectives);
      } else {
        add(plan, cp_axis, slot, PP_OP_GRAD_ALL_REDUCE_CP, PP_COLLECTIVE_ALL_REDUCE, PP_PHASE_BACKWARD, PP_PER_STEP,
            gradients, collectives);
      }
    }
  }

  // ZeRO-3 holds a layer's weights whole while it runs, and the next ones' as they arrive: PyTorch
  // FSDP prefetches one layer ahead (FSDP2's implicit prefetch, FSDP1's BACKWARD_PRE), as
  // Megatron-LM's FSDP does (the engine's `prefetch`); without overlap a layer is gathered only
  // when it is needed. In backward the running layer's gradients are whole too until their
  // reduce-scatter. On every stage: (1 + prefetch) x the largest layer's weights + its gradients. The embedding and the
  // head stay gathered from their forward to their backward (FSDP2 does not reshard the root
  // module, which holds them, after forward), on the stages that hold them. Only sharded state is
  // gathered: experts that ep left whole on their rank (edp = 1) are held anyway. Synchronised
  // once per step, every layer stays gathered through the step (its gradients are whole already).
  void add_gathered_buffers(PlanEditor& plan, const ModelState& state, bool dense_sharded, bool experts_sharded,
                            bool per_step) const {
    if (!dense_sharded && !experts_sharded) return;
    const double layers_in_flight = engine_.overlap ? 1.0 + static_cast<double>(engine_.prefetch) : 1.0;
    double layer_bytes = 0;
    for (size_t i = 0; i < state.dense.slots.size(); ++i) {
      const double weights = (dense_sharded ? state.dense.weights[i] : 0.0) + (experts_sharded ? state.experts.weights[i] : 0.0);
      const double gradients =
          (dense_sharded ? state.dense.gradients[i] : 0.0) + (experts_sharded ? state.experts.gradients[i] : 0.0);
      const pp_scope scope = state.dense.slots[i].scope;
      if (scope == PP_SCOPE_LAYER && per_step) {
        if (weights > 0)
          plan.add_layer_memory(make_memory_item(PP_MEMORY_OTHER, scope, PP_MEMORY_ZERO3_GATHERED, owner_, weights),
                                state.dense.slots[i].kind);
      } else if (scope == PP_SCOPE_LAYER) {
        layer_bytes = std::max(layer_bytes, layers_in_flight * weights + gradients);
      } else if (weights > 0) {
        plan.add_memory(make_memory_item(PP_MEMORY_OTHER, scope, PP_MEMORY_ZERO3_GATHERED, owner_, weights));
      }
    }
    if (layer_bytes > 0)
      plan.add_memory(make_memory_item(PP_MEMORY_OTHER, PP_SCOPE_STEP, PP_MEMORY_ZERO3_GATHERED, owner_, layer_bytes));
  }

  // Stage 3's weight gathers: before each micro-batch's forward and backward, or once per step
  // (before the step's first forward) when the weights stay gathered through it.
  void add_stage3_gathers(PlanEditor& plan, int32_t axis, StateSlot slot, double weights, bool per_step) const {
    if (per_step) {
      add(plan, axis, slot, PP_OP_PARAM_ALL_GATHER, PP_COLLECTIVE_ALL_GATHER, PP_PHASE_FORWARD, PP_PER_STEP, weights);
      return;
    }
    for (pp_phase phase : {PP_PHASE_FORWARD, PP_PHASE_BACKWARD})
      add(plan, axis, slot, PP_OP_PARAM_ALL_GATHER, PP_COLLECTIVE_ALL_GATHER, phase, PP_PER_MICRO_BATCH, weights);
  }

  // One set of collectives per slot that holds state (embedding, each kind of layer, head), the
  // reductions (and stages 1-2's gathers after the update) in the engine's buckets.
  void add_communication(PlanEditor& plan, int32_t axis, const StateBytes& state, bool per_step) const {
    const pp_frequency reduction = reduction_frequency(per_step);
    for (size_t i = 0; i < state.slots.size(); ++i) {
      const StateSlot scope = state.slots[i];
      const double weights = state.weights[i], gradients = state.gradients[i];
      if (weights <= 0) continue;
      const uint32_t collectives = buckets(weights);
      switch (engine_.stage) {
        case 0:
          add(plan, axis, scope, PP_OP_GRAD_ALL_REDUCE, PP_COLLECTIVE_ALL_REDUCE, PP_PHASE_BACKWARD, PP_PER_STEP,
              gradients, collectives);
          break;
        case 1:
        case 2:
          add(plan, axis, scope, PP_OP_GRAD_REDUCE_SCATTER, PP_COLLECTIVE_REDUCE_SCATTER, PP_PHASE_BACKWARD, reduction,
              gradients, collectives);
          add(plan, axis, scope, PP_OP_PARAM_ALL_GATHER, PP_COLLECTIVE_ALL_GATHER, PP_PHASE_STEP, PP_PER_STEP, weights,
              collectives);
          break;
        default:
          add_stage3_gathers(plan, axis, scope, weights, per_step);
          add(plan, axis, scope, PP_OP_GRAD_REDUCE_SCATTER, PP_COLLECTIVE_REDUCE_SCATTER, PP_PHASE_BACKWARD, reduction,
              gradients, collectives);
          break;
      }
    }
  }

  std::string owner_;
  DataParallelEngine engine_;
};

}  // namespace paraplan::strategies
