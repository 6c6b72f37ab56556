// abi_1_<m>_buffer: a strategy built against minor m's frozen headers. It adds one buffer of
// `gib` GiB to the plan (memory kind OTHER, scope STEP: held once per GPU), which a test finds in
// every executor's memory total, and refuses a degree above 1 in validate.
#include "legacy_names.h"
#include "paraplan/sdk.hpp"

namespace {

class LegacyBuffer : public paraplan::Strategy {
 public:
  static paraplan::PluginInfo info() {
    return {PARAPLAN_LEGACY_NAME("buffer"), "1.0.0", "a strategy built against a frozen ABI minor: adds a buffer",
            {paraplan::ParamSpec::Float("gib", 1.0, "buffer size in GiB").range(0.0, 1024.0)}};
  }
  explicit LegacyBuffer(const paraplan::Params& params) : gib_(params.float_value("gib")) {}

  void validate(const paraplan::StrategyContext& context) override {
    if (context.degree != 1) throw paraplan::ConstraintError("a buffer has no degree but 1");
  }
  void apply(const paraplan::StrategyContext&, paraplan::PlanEditor& plan) override {
    plan.add_memory(paraplan::make_memory_item(PP_MEMORY_OTHER, PP_SCOPE_STEP, "legacy.buffer",
                                               PARAPLAN_LEGACY_NAME("buffer"), gib_ * 1073741824.0));
  }

 private:
  double gib_;
};

}  // namespace

PARAPLAN_PLUGIN(LegacyBuffer)
