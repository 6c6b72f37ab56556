// zoo_executor: reports keys the host must refuse or repair: an empty key, a key in the host's
// own "plan" section, a leaf over the host's section, a key inside an existing value, invalid
// UTF-8 text, a NaN, and one good key.
#include <limits>

#include "paraplan/sdk.hpp"

namespace {

class ZooExecutor : public paraplan::Executor {
 public:
  static paraplan::PluginInfo info() { return {"zoo_executor", "1.0.0", "reports hostile keys", {}}; }
  explicit ZooExecutor(const paraplan::Params&) {}
  void run(const paraplan::PlanView&, const pp_hardware_binding_v1&, const paraplan::ResultSink& results) override {
    results.number("", 1.0);
    results.number("plan", 2.0);
    results.text("plan.model", "replaced");
    results.number("time.step_s", 1.5);
    results.number("time.step_s.inside", 3.0);
    results.text("zoo.text", std::string("bad \xff\xfe bytes"));
    results.number("zoo.nan", std::numeric_limits<double>::quiet_NaN());
    results.number("zoo.bad key", 4.0);
  }
};

}  // namespace

PARAPLAN_PLUGIN(ZooExecutor)
