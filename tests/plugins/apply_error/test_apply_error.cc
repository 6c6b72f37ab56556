// test_apply_error: validates fine, then refuses every plan in apply() with a ConstraintError. The
// host must report PP_ERROR_CONSTRAINT with the message, naming the strategy.
#include "paraplan/sdk.hpp"

namespace {

class TestApplyError : public paraplan::Strategy {
 public:
  static paraplan::PluginInfo info() {
    return {"test_apply_error", "1.0.0", "Test strategy that passes validate and fails apply", {}};
  }
  explicit TestApplyError(const paraplan::Params&) {}
  void validate(const paraplan::StrategyContext&) override {}
  void apply(const paraplan::StrategyContext&, paraplan::PlanEditor&) override {
    throw paraplan::ConstraintError("test_apply_error: refuses every plan");
  }
};

}  // namespace

PARAPLAN_PLUGIN(TestApplyError)
