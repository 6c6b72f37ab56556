// fsdp: data parallelism with ZeRO / FSDP sharding (Rajbhandari et al. 2020).
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
// With 2-byte gradients the model state per GPU is 16Ψ, 4Ψ + 12Ψ/N, 2Ψ + 14Ψ/N, 16Ψ/N.
//
// Sizes come from the plan's memory when this strategy runs (after tensor, pipeline and expert
// parallelism divided it): all-gathers move weights (2 bytes per parameter), reductions move
// gradients (2 or 4 bytes). Expert weights are replicated over fewer ranks: when expert
// parallelism created the axis "edp" (expert data parallelism), expert state ("*.experts")
// is sharded and reduced over it instead of "dp". With context parallelism ("cp"), ranks of a
// cp group hold the same weights too, so their gradients are also all-reduced over "cp".
#include <string>
#include <string_view>
#include <vector>

#include "paraplan/sdk.hpp"

namespace {

constexpr const char* kName = "fsdp";

bool is_expert(std::string_view name) { return name.ends_with(".experts"); }

// The per-scope bytes one group of ranks shards and communicates.
struct StateBytes {
  double weights[PP_SCOPE_STEP + 1] = {};
  double gradients[PP_SCOPE_STEP + 1] = {};
};

class Fsdp : public paraplan::Strategy {
 public:
  static constexpr int32_t apply_order = 50;
  static constexpr uint32_t flags =
      PP_STRATEGY_TAKES_REMAINDER | PP_STRATEGY_DEFAULT_DATA_PARALLEL | PP_STRATEGY_SPLITS_BATCH;

  static paraplan::PluginInfo info() {
    return {kName,
            "1.1.0",
            "Data parallelism with ZeRO/FSDP sharding, stages 0 (plain DP) to 3 (full sharding)",
            {paraplan::ParamSpec::Int("stage", 0,
                                      "ZeRO stage: 0 plain DP, 1 shard optimizer state, 2 + gradients, 3 + parameters")
                 .range(0, 3),
             paraplan::ParamSpec::Bool("overlap", true,
                                       "overlap gradient reduction with backward and prefetch stage-3 all-gathers")}};
  }

  explicit Fsdp(const paraplan::Params& params)
      : stage_(params.int_value("stage")), overlap_(params.bool_value("overlap")) {}

  void apply(const paraplan::StrategyContext& context, paraplan::PlanEditor& plan) override {
    const int32_t dp_axis = plan.add_axis("dp", context.degree, kName);
    const paraplan::PlanView view = plan.view();
    const int32_t edp_axis = view.axis_index("edp");
    const int32_t cp_axis = view.axis_index("cp");
    const double dp = static_cast<double>(context.degree);
    const double edp = edp_axis >= 0 ? static_cast<double>(view.axes()[static_cast<size_t>(edp_axis)].degree) : dp;

    // Collective sizes are the unsharded state: read it before sharding.
    StateBytes dense = state_bytes(view, /*experts=*/false);
    StateBytes experts = state_bytes(view, /*experts=*/true);
    std::vector<pp_memory_item> memory(view.memory().begin(), view.memory().end());
    std::vector<pp_op> ops(view.ops().begin(), view.ops().end());
    shard(plan, memory, ops, dp, edp);

    if (dp > 1) add_communication(plan, dp_axis, dense);
    if (edp > 1) add_communication(plan, edp_axis >= 0 ? edp_axis : dp_axis, experts);
    if (cp_axis >= 0 && view.axes()[static_cast<size_t>(cp_axis)].degree > 1) {
      for (pp_scope scope : {PP_SCOPE_EMBEDDING, PP_SCOPE_LAYER, PP_SCOPE_HEAD})
        add(plan, cp_axis, scope, "grad_all_reduce_cp", PP_COLLECTIVE_ALL_REDUCE, PP_PHASE_BACKWARD, PP_PER_STEP,
            dense.gradients[scope] + experts.gradients[scope]);
    }
  }

 private:
  static StateBytes state_bytes(const paraplan::PlanView& view, bool experts) {
    StateBytes bytes;
    for (const pp_memory_item& item : view.memory()) {
      if (is_expert(item.name) != experts) continue;
      if (item.kind == PP_MEMORY_PARAMETERS) bytes.weights[item.scope] += item.bytes;
      if (item.kind == PP_MEMORY_GRADIENTS) bytes.gradients[item.scope] += item.bytes;
    }
    return bytes;
  }

  void shard(paraplan::PlanEditor& plan, const std::vector<pp_memory_item>& memory, const std::vector<pp_op>& ops,
             double dp, double edp) const {
    for (uint32_t i = 0; i < memory.size(); ++i) {
      pp_memory_item item = memory[i];
      bool sharded = (item.kind == PP_MEMORY_OPTIMIZER && stage_ >= 1) ||
                     (item.kind == PP_MEMORY_GRADIENTS && stage_ >= 2) ||
                     (item.kind == PP_MEMORY_PARAMETERS && stage_ >= 3);
      if (!sharded) continue;
      item.bytes /= is_expert(item.name) ? edp : dp;
      plan.set_memory(i, item);
    }
    // From stage 1 on, the optimizer update touches only this rank's shard.
    if (stage_ < 1) return;
    for (uint32_t i = 0; i < ops.size(); ++i) {
      std::string_view name = ops[i].name;
      if (name != "optimizer_step" && name != "optimizer_step.experts") continue;
      pp_op op = ops[i];
      op.bytes /= is_expert(name) ? edp : dp;
      plan.set_op(i, op);
    }
  }

  // One set of collectives per scope that holds state (embedding, each layer, head).
  void add_communication(paraplan::PlanEditor& plan, int32_t axis, const StateBytes& state) const {
    for (pp_scope scope : {PP_SCOPE_EMBEDDING, PP_SCOPE_LAYER, PP_SCOPE_HEAD}) {
      const double weights = state.weights[scope], gradients = state.gradients[scope];
      if (weights <= 0) continue;
      switch (stage_) {
        case 0:
          add(plan, axis, scope, "grad_all_reduce", PP_COLLECTIVE_ALL_REDUCE, PP_PHASE_BACKWARD, PP_PER_STEP, gradients);
          break;
        case 1:
        case 2:
          add(plan, axis, scope, "grad_reduce_scatter", PP_COLLECTIVE_REDUCE_SCATTER, PP_PHASE_BACKWARD,
              stage_ == 1 ? PP_PER_STEP : PP_PER_MICRO_BATCH, gradients);
          add(plan, axis, scope, "param_all_gather", PP_COLLECTIVE_ALL_GATHER, PP_PHASE_STEP, PP_PER_STEP, weights);
          break;
        default:
          add(plan, axis, scope, "param_all_gather", PP_COLLECTIVE_ALL_GATHER, PP_PHASE_FORWARD, PP_PER_MICRO_BATCH, weights);
          add(plan, axis, scope, "param_all_gather", PP_COLLECTIVE_ALL_GATHER, PP_PHASE_BACKWARD, PP_PER_MICRO_BATCH, weights);
          add(plan, axis, scope, "grad_reduce_scatter", PP_COLLECTIVE_REDUCE_SCATTER, PP_PHASE_BACKWARD,
              PP_PER_MICRO_BATCH, gradients);
          break;
      }
    }
  }

  void add(paraplan::PlanEditor& plan, int32_t axis, pp_scope scope, const char* name, pp_collective kind,
           pp_phase phase, pp_frequency frequency, double bytes) const {
    if (bytes <= 0) return;
    pp_op op = paraplan::make_op(PP_OP_COLLECTIVE, phase, scope, name, kName);
    op.collective = kind;
    op.axis = axis;
    op.bytes = bytes;
    op.frequency = frequency;
    // The post-step all-gather of stages 1-2 waits for the optimizer: nothing left to hide it behind.
    op.overlap = overlap_ && phase != PP_PHASE_STEP ? PP_OVERLAP_COMPUTE : PP_OVERLAP_NONE;
    plan.append_op(op);
  }

  int64_t stage_;
  bool overlap_;
};

}  // namespace

PARAPLAN_PLUGIN(Fsdp)
