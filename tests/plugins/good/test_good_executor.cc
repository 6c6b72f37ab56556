// test_good_executor: reports plain sums of the plan, so tests can predict every number exactly.
//   time.step_s           = sum of op flops / 1e12 (as if at 1 TFLOP/s, ignoring the hardware)
//   memory.per_gpu_bytes  = sum of memory item bytes (no per-layer or in-flight multiplicity)
//   test.op_count         = number of ops
#include "paraplan/sdk.hpp"

namespace {

class TestGoodExecutor : public paraplan::Executor {
 public:
  static paraplan::PluginInfo info() {
    return {"test_good_executor", "1.0.0", "Test executor: sums flops and memory items", {}};
  }
  explicit TestGoodExecutor(const paraplan::Params&) {}

  void run(const paraplan::PlanView& plan, const pp_hardware_binding_v1&,
           const paraplan::ResultSink& results) override {
    double flops = 0.0;
    for (const pp_op& op : plan.ops()) flops += op.flops;
    double bytes = 0.0;
    for (const pp_memory_item& item : plan.memory()) bytes += item.bytes;
    results.number("time.step_s", flops / 1e12);
    results.number("memory.per_gpu_bytes", bytes);
    results.number("test.op_count", static_cast<double>(plan.ops().size()));
  }
};

}  // namespace

PARAPLAN_PLUGIN(TestGoodExecutor)
