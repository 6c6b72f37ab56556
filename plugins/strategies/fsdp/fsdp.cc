// fsdp: data parallelism with ZeRO / FSDP sharding (Rajbhandari et al. 2020).
//
//   stage 0  plain data parallelism: every rank holds everything; gradients all-reduced once per
//            step, bucketed behind the last micro-batch's backward pass.
//   stage 1  optimizer state sharded (4Ψ + 12Ψ/N bytes): gradients reduce-scattered once per
//            step, updated weights all-gathered after the optimizer step.
//   stage 2  gradients sharded too (2Ψ + 14Ψ/N): to keep them sharded across gradient
//            accumulation, the reduce-scatter runs every micro-batch.
//   stage 3  parameters sharded too (16Ψ/N): each layer's weights are all-gathered before its
//            forward and again before its backward, gradients reduce-scattered: 1.5x the bytes
//            of stage 0, hidden behind compute by prefetching the next layer.
// Communication sizes come from the parameter memory the plan holds when this strategy runs
// (after tensor/pipeline/expert parallelism have divided it), so the order of strategies
// composes correctly.
#include <string>

#include "paraplan/sdk.hpp"

namespace {

class Fsdp : public paraplan::Strategy {
 public:
  static constexpr int32_t apply_order = 50;
  static constexpr uint32_t flags =
      PP_STRATEGY_TAKES_REMAINDER | PP_STRATEGY_DEFAULT_DATA_PARALLEL | PP_STRATEGY_SPLITS_BATCH;

  static paraplan::PluginInfo info() {
    return {"fsdp",
            "1.0.0",
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
    const int32_t axis = plan.add_axis("dp", context.degree, "fsdp");
    // Collective sizes are the unsharded weights of each scope: read them before sharding.
    ScopeBytes weights = weight_bytes(plan.view());
    shard_memory(plan, static_cast<double>(context.degree));
    if (context.degree > 1) add_communication(plan, axis, weights);
  }

 private:
  void shard_memory(paraplan::PlanEditor& plan, double ranks) {
    paraplan::PlanView view = plan.view();
    for (uint32_t i = 0; i < view.memory().size(); ++i) {
      pp_memory_item item = view.memory()[i];
      bool sharded = (item.kind == PP_MEMORY_OPTIMIZER && stage_ >= 1) ||
                     (item.kind == PP_MEMORY_GRADIENTS && stage_ >= 2) ||
                     (item.kind == PP_MEMORY_PARAMETERS && stage_ >= 3);
      if (!sharded) continue;
      item.bytes /= ranks;
      plan.set_memory(i, item);
    }
    // The optimizer update touches only this rank's shard from stage 1 on.
    if (stage_ >= 1) {
      view = plan.view();
      for (uint32_t i = 0; i < view.ops().size(); ++i) {
        pp_op op = view.ops()[i];
        if (std::string(op.name) != "optimizer_step") continue;
        op.bytes /= ranks;
        plan.set_op(i, op);
      }
    }
  }

  struct ScopeBytes {
    double by_scope[PP_SCOPE_STEP + 1] = {};
  };

  static ScopeBytes weight_bytes(const paraplan::PlanView& view) {
    ScopeBytes weights;
    for (const pp_memory_item& item : view.memory())
      if (item.kind == PP_MEMORY_PARAMETERS) weights.by_scope[item.scope] += item.bytes;
    return weights;
  }

  // One set of collectives per scope that holds parameters (embedding, each layer, head).
  void add_communication(paraplan::PlanEditor& plan, int32_t axis, const ScopeBytes& weights) {
    for (pp_scope scope : {PP_SCOPE_EMBEDDING, PP_SCOPE_LAYER, PP_SCOPE_HEAD}) {
      // Gradients have the weights' size and dtype (2 bytes per parameter).
      const double bytes = weights.by_scope[scope];
      if (bytes <= 0) continue;
      switch (stage_) {
        case 0:
          add(plan, axis, scope, "grad_all_reduce", PP_COLLECTIVE_ALL_REDUCE, PP_PHASE_BACKWARD, PP_PER_STEP, bytes);
          break;
        case 1:
        case 2:
          add(plan, axis, scope, "grad_reduce_scatter", PP_COLLECTIVE_REDUCE_SCATTER, PP_PHASE_BACKWARD,
              stage_ == 1 ? PP_PER_STEP : PP_PER_MICRO_BATCH, bytes);
          add(plan, axis, scope, "param_all_gather", PP_COLLECTIVE_ALL_GATHER, PP_PHASE_STEP, PP_PER_STEP, bytes);
          break;
        default:
          add(plan, axis, scope, "param_all_gather", PP_COLLECTIVE_ALL_GATHER, PP_PHASE_FORWARD, PP_PER_MICRO_BATCH, bytes);
          add(plan, axis, scope, "param_all_gather", PP_COLLECTIVE_ALL_GATHER, PP_PHASE_BACKWARD, PP_PER_MICRO_BATCH, bytes);
          add(plan, axis, scope, "grad_reduce_scatter", PP_COLLECTIVE_REDUCE_SCATTER, PP_PHASE_BACKWARD,
              PP_PER_MICRO_BATCH, bytes);
          break;
      }
    }
  }

  void add(paraplan::PlanEditor& plan, int32_t axis, pp_scope scope, const char* name, pp_collective kind,
           pp_phase phase, pp_frequency frequency, double bytes) {
    pp_op op = paraplan::make_op(PP_OP_COLLECTIVE, phase, scope, name, "fsdp");
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
