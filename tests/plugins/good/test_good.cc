// test_good: a well-behaved strategy whose effect on the plan is easy to check, and whose schema
// uses every parameter type, so tests can cover schema validation, defaults and typed delivery.
//
// apply(): multiplies the flops of every op named "qkv" by `factor`, and adds a STEP-scope OTHER
// memory item "test_good.buffer" of `depth` * 1e6 bytes.
#include <string_view>
#include <vector>

#include "paraplan/sdk.hpp"

namespace {

class TestGood : public paraplan::Strategy {
 public:
  static paraplan::PluginInfo info() {
    using paraplan::ParamSpec;
    return {"test_good",
            "1.0.0",
            "Test strategy: scales qkv flops by factor and adds a depth MB buffer",
            {ParamSpec::Float("factor", 2.0, "multiplier for the flops of every qkv op").range(1.0, 8.0),
             ParamSpec::Enum("mode", {"fast", "slow"}, "fast", "an enum; no effect"),
             ParamSpec::Int("depth", 3, "size of test_good.buffer in MB (1e6 bytes)").range(1, 10),
             ParamSpec::Bool("verbose", false, "a bool; no effect"),
             ParamSpec::String("label", "x", "a string; no effect")}};
  }

  explicit TestGood(const paraplan::Params& params)
      : factor_(params.float_value("factor")), depth_(params.int_value("depth")) {
    // The no-effect keys are read too, so a value delivered with the wrong type fails create.
    (void)params.string_value("mode");
    (void)params.bool_value("verbose");
    (void)params.string_value("label");
  }

  void apply(const paraplan::StrategyContext&, paraplan::PlanEditor& plan) override {
    // Copied: a view's pointers are invalidated by the first edit.
    const paraplan::PlanView view = plan.view();
    const std::vector<pp_op> ops(view.ops().begin(), view.ops().end());
    for (uint32_t index = 0; index < ops.size(); ++index) {
      if (std::string_view(ops[index].name) != "qkv") continue;
      pp_op scaled = ops[index];
      scaled.flops *= factor_;
      plan.set_op(index, scaled);
    }
    plan.add_memory(paraplan::make_memory_item(PP_MEMORY_OTHER, PP_SCOPE_STEP, "test_good.buffer",
                                               "test_good", static_cast<double>(depth_) * 1e6));
  }

 private:
  double factor_;
  int64_t depth_;
};

}  // namespace

PARAPLAN_PLUGIN(TestGood)
