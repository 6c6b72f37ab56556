// hsdp: hybrid sharded data parallelism (Zhao et al. 2023, "PyTorch FSDP", HYBRID_SHARD;
// DeepSpeed ZeRO++ hpZ and MiCS shard the same way).
//
// The N data-parallel ranks form N/G groups of G ranks (`shard_group`). Within a group the model
// state is sharded exactly as fsdp shards it over G ranks at the same ZeRO stage, with the same
// collectives on the axis "dp" (degree G, the inner one, so with the default group of one node
// they stay on NVLink). Across groups the state is replicated: after the in-group reduction each
// rank holds the gradient shard of its group, 1/G of the gradients, and all-reduces it with the
// ranks holding the same shard in the other R = N/G groups, once per step on "dp_replicate"
// (overlappable with the last micro-batch's backward). Model state per rank is the ZeRO formula
// with G in place of N (16Ψ/G at stage 3, 16Ψ/(G·cp) with context parallelism, whose ranks join the
// shard group at stages 1-3); only 2·(R-1)/R · grads/G bytes per rank and step cross
// the slow network instead of every per-micro-batch all-gather and reduce-scatter.
//
// Expert parallelism: "edp" spans the whole data-parallel group (N/e ranks inside "dp"), which
// cannot fit inside a shard group of G ranks; modelling expert shards that live inside a group
// and replicate across groups needs an "edp" sized from G, which ep (applied first) cannot know.
// Until the SDK lets the data-parallel strategy size "edp", hsdp refuses ep when R > 1.
#include <string>

#include "paraplan/sdk.hpp"
#include "plugins/strategies/internal/zero_sharding.h"

namespace {

constexpr const char* kName = PP_STRATEGY_HSDP;

class HybridShardedDataParallel : public paraplan::Strategy {
 public:
  static constexpr int32_t apply_order = 50;
  static constexpr uint32_t flags = PP_STRATEGY_TAKES_REMAINDER | PP_STRATEGY_SPLITS_BATCH;

  static paraplan::PluginInfo info() {
    return {kName,
            "1.1.0",
            "Hybrid sharded data parallelism (FSDP HYBRID_SHARD): ZeRO sharding within groups, replication across "
            "groups",
            paraplan::strategies::data_parallel_params(
                paraplan::ParamSpec::Int(PP_DP_PARAM_STAGE, 3,
                                         "ZeRO stage within a group: 1 optimizer state, 2 + gradients, 3 + parameters")
                    .range(1, 3),
                {paraplan::ParamSpec::Int("shard_group", 0,
                                          "ranks that shard the state; 0 = one node (gpus_per_node / (tp x cp))")
                     .at_least(0)})};
  }

  // Shard groups of one node (0) and of 2, 4 and 8 nodes of 8 GPUs; a group that does not divide
  // the degree is rejected by validate().
  static std::vector<paraplan::SearchCase> search_space() {
    return {paraplan::SearchCase::degrees(1).choose(PP_DP_PARAM_STAGE, {"1", "2", "3"}).choose("shard_group", {"0", "16", "32", "64"})};
  }

  explicit HybridShardedDataParallel(const paraplan::Params& params)
      : shard_group_(params.int_value("shard_group")),
        zero_(kName, paraplan::strategies::data_parallel_engine(params)) {}

  void validate(const paraplan::StrategyContext& context) override {
    if (std::string why = zero_.refusal(); !why.empty()) return refuse(why);
    if (shard_group_ > 0 && context.degree % shard_group_ != 0)
      return refuse("hsdp shard_group = " + std::to_string(shard_group_) + " must divide the hsdp degree " +
                    std::to_string(context.degree));
  }

  void apply(const paraplan::StrategyContext& context, paraplan::PlanEditor& plan) override {
    const int64_t degree = context.degree;
    std::string why;
    const int64_t group = shard_group(context, plan.view(), why);
    if (group == 0) return refuse(why);
    const int64_t replicas = degree / group;
    if (replicas > 1 && plan.view().axis_index(PP_AXIS_EDP) >= 0)
      return refuse("hsdp with " + std::to_string(replicas) +
                    " replica groups does not support expert parallelism: ep's 'edp' axis spans all " +
                    std::to_string(degree) + " data-parallel ranks, more than a shard group of " +
                    std::to_string(group) + "; use fsdp with ep, or hsdp with shard_group = " + std::to_string(degree));

    const int32_t dp_axis = plan.add_axis(PP_AXIS_DP, group, kName);
    const int32_t replicate_axis = plan.add_axis(PP_AXIS_DP_REPLICATE, replicas, kName);
    const paraplan::strategies::ModelState state = zero_.apply(plan, dp_axis, group);
    if (replicas <= 1) return;
    // Each rank all-reduces its gradient shard (1/group, or 1/(group x cp) where the sharding
    // spans cp, stages 1-3) with the same shard in the other groups, bucket by bucket.
    for (size_t i = 0; i < state.dense.slots.size(); ++i)
      zero_.add(plan, replicate_axis, state.dense.slots[i], PP_OP_GRAD_ALL_REDUCE_REPLICATE, PP_COLLECTIVE_ALL_REDUCE,
                PP_PHASE_BACKWARD, PP_PER_STEP, (state.dense.gradients[i] + state.experts.gradients[i]) / state.dense_shards,
                zero_.buckets(state.dense.weights[i] + state.experts.weights[i]));
  }

 private:
  // The recipe's shard group, or one node's worth of data-parallel ranks: the node's GPUs over
  // the axes laid inside "dp" (tp and cp). A dp degree smaller than that is one group. 0, with
  // `why` said, when no node-wide group divides the degree.
  int64_t shard_group(const paraplan::StrategyContext& context, const paraplan::PlanView& view, std::string& why) const {
    if (shard_group_ > 0) return shard_group_;
    int64_t inner = 1;
    for (const char* name : {PP_AXIS_TP, PP_AXIS_CP}) {
      int32_t axis = view.axis_index(name);
      if (axis >= 0) inner *= view.axes()[static_cast<size_t>(axis)].degree;
    }
    const int64_t per_node = context.cluster.gpus_per_node;
    if (per_node % inner != 0) {
      why = "hsdp cannot size a node-wide shard group: tp x cp = " + std::to_string(inner) +
            " does not divide gpus_per_node = " + std::to_string(per_node) + "; set shard_group";
      return 0;
    }
    const int64_t group = per_node / inner;
    if (context.degree % group == 0) return group;
    if (group % context.degree == 0) return context.degree;
    why = "hsdp's node-wide shard group of " + std::to_string(group) + " ranks does not divide the hsdp degree " +
          std::to_string(context.degree) + "; set shard_group";
    return 0;
  }

  int64_t shard_group_;
  paraplan::strategies::ZeroSharding zero_;
};

}  // namespace

PARAPLAN_PLUGIN(HybridShardedDataParallel)
