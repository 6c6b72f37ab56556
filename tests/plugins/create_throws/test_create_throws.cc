// test_create_throws: a C++ plugin whose constructor throws. The SDK trampoline must turn the
// exception into PP_ERROR_INTERNAL with the message "boom in create"; nothing may unwind into the
// host.
#include <stdexcept>

#include "paraplan/sdk.hpp"

namespace {

class TestCreateThrows : public paraplan::Strategy {
 public:
  static paraplan::PluginInfo info() {
    return {"test_create_throws", "1.0.0", "Test strategy whose constructor always throws", {}};
  }
  explicit TestCreateThrows(const paraplan::Params&) { throw std::runtime_error("boom in create"); }
  void apply(const paraplan::StrategyContext&, paraplan::PlanEditor&) override {}
};

}  // namespace

PARAPLAN_PLUGIN(TestCreateThrows)
