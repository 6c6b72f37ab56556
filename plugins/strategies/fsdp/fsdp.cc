// fsdp: data parallelism with ZeRO / FSDP sharding (Rajbhandari et al. 2020) over every
// data-parallel rank, stages 0 (plain DP) to 3 (full sharding). The stages, their collectives
// and the expert and context-parallel rules are in plugins/strategies/internal/zero_sharding.h,
// shared with `hsdp` (which shards within a group and replicates across groups).
#include <string>

#include "paraplan/sdk.hpp"
#include "plugins/strategies/internal/zero_sharding.h"

namespace {

constexpr const char* kName = PP_STRATEGY_FSDP;

class Fsdp : public paraplan::Strategy {
 public:
  static constexpr int32_t apply_order = 50;
  static constexpr uint32_t flags =
      PP_STRATEGY_TAKES_REMAINDER | PP_STRATEGY_DEFAULT_DATA_PARALLEL | PP_STRATEGY_SPLITS_BATCH;

  static paraplan::PluginInfo info() {
    return {kName,
            "1.2.0",
            "Data parallelism with ZeRO/FSDP sharding, stages 0 (plain DP) to 3 (full sharding)",
            paraplan::strategies::data_parallel_params(
                paraplan::ParamSpec::Int(PP_DP_PARAM_STAGE, 0,
                                         "ZeRO stage: 0 plain DP, 1 shard optimizer state, 2 + gradients, 3 + parameters")
                    .range(0, 3))};
  }

  static std::vector<paraplan::SearchCase> search_space() { return {paraplan::SearchCase::degrees(1).choose(PP_DP_PARAM_STAGE, {"0", "1", "2", "3"})}; }

  explicit Fsdp(const paraplan::Params& params) : zero_(kName, paraplan::strategies::data_parallel_engine(params)) {}

  void validate(const paraplan::StrategyContext&) override {
    if (std::string why = zero_.refusal(); !why.empty()) return refuse(why);
  }

  void apply(const paraplan::StrategyContext& context, paraplan::PlanEditor& plan) override {
    const int32_t dp_axis = plan.add_axis(PP_AXIS_DP, context.degree, kName);
    zero_.apply(plan, dp_axis, context.degree);
  }

 private:
  paraplan::strategies::ZeroSharding zero_;
};

}  // namespace

PARAPLAN_PLUGIN(Fsdp)
