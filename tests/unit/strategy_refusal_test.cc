// Strategy::refuse() (sdk.hpp): a strategy refuses a plan without throwing, and the host sees
// through the C table what a thrown ConstraintError gives: PP_ERROR_CONSTRAINT and the message.
// The refusal is taken by the call that made it, so the next call of the same instance passes.
#include <gtest/gtest.h>

#include <string>

#include "paraplan/sdk.hpp"

namespace {

class Refusing : public paraplan::Strategy {
 public:
  static paraplan::PluginInfo info() { return {"refusing", "1.0.0", "refuses some degrees", {}}; }
  Refusing() = default;
  explicit Refusing(const paraplan::Params&) {}

  void validate(const paraplan::StrategyContext& context) override {
    if (context.degree == 3) return refuse("degree 3 is refused");
    if (context.degree == 5) throw paraplan::ConstraintError("degree 5 is thrown out");
  }
  void apply(const paraplan::StrategyContext& context, paraplan::PlanEditor&) override {
    if (context.degree == 7) return refuse("degree 7 is refused while applying");
  }
};

struct Call {
  pp_status status;
  std::string message;
};

class StrategyRefusal : public testing::Test {
 protected:
  Call validate(int64_t degree) { return call(degree, false); }
  Call apply(int64_t degree) { return call(degree, true); }

 private:
  Call call(int64_t degree, bool applying) {
    pp_model model{};
    model.struct_size = sizeof(model);
    pp_training training{};
    training.struct_size = sizeof(training);
    pp_cluster cluster{};
    cluster.struct_size = sizeof(cluster);
    const pp_strategy_context context{sizeof(pp_strategy_context), degree, &model, &training, &cluster, 0};
    char text[256] = {};
    pp_error error{sizeof(pp_error), text, sizeof(text)};
    const pp_status status = applying ? table_->apply(&strategy_, &context, nullptr, &error)
                                      : table_->validate(&strategy_, &context, &error);
    return {status, text};
  }

  Refusing strategy_;
  const pp_strategy_v1* table_ = paraplan::detail::strategy_table<Refusing>();
};

TEST_F(StrategyRefusal, ARefusalIsAConstraintFailureWithItsMessage) {
  const Call refused = validate(3);
  EXPECT_EQ(refused.status, PP_ERROR_CONSTRAINT);
  EXPECT_EQ(refused.message, "degree 3 is refused");
  const Call thrown = validate(5);  // the same status as the thrown form
  EXPECT_EQ(thrown.status, PP_ERROR_CONSTRAINT);
  EXPECT_EQ(thrown.message, "degree 5 is thrown out");
  const Call applying = apply(7);
  EXPECT_EQ(applying.status, PP_ERROR_CONSTRAINT);
  EXPECT_EQ(applying.message, "degree 7 is refused while applying");
}

TEST_F(StrategyRefusal, TheNextCallStartsClean) {
  EXPECT_EQ(validate(3).status, PP_ERROR_CONSTRAINT);
  EXPECT_EQ(validate(2).status, PP_OK);
  EXPECT_EQ(apply(7).status, PP_ERROR_CONSTRAINT);
  EXPECT_EQ(apply(2).status, PP_OK);
}

}  // namespace
