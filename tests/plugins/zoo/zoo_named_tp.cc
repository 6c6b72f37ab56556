// zoo_named_tp: a third-party strategy named "tp", like the bundled one. From PARAPLAN_PLUGIN_PATH
// it is shadowed by the bundled tp (reported); from --plugin-path it replaces it (reported).
#include "paraplan/sdk.hpp"

namespace {

class ZooNamedTp : public paraplan::Strategy {
 public:
  static paraplan::PluginInfo info() { return {"tp", "9.9.9", "a third-party strategy that shares the bundled tp's name", {}}; }
  explicit ZooNamedTp(const paraplan::Params&) {}
  void apply(const paraplan::StrategyContext&, paraplan::PlanEditor&) override {}
};

}  // namespace

PARAPLAN_PLUGIN(ZooNamedTp)
