// abi_1_<m>_counter: an executor built against minor m's frozen headers. It reports what it was
// handed, so a test can check every field crossed the boundary: the op and memory counts, the
// memory total, the profile's bf16 peak, the GEMM time through the hardware's own function, and
// the minor it was built against.
#include "legacy_names.h"
#include "paraplan/sdk.hpp"

namespace {

class LegacyCounter : public paraplan::Executor {
 public:
  static paraplan::PluginInfo info() {
    return {PARAPLAN_LEGACY_NAME("counter"), "1.0.0", "an executor built against a frozen ABI minor: counts the plan", {}};
  }
  explicit LegacyCounter(const paraplan::Params&) {}

  void run(const paraplan::PlanView& plan, const pp_hardware_binding_v1& hardware,
           const paraplan::ResultSink& results) override {
    double memory = 0.0, gemm_s = 0.0;
    for (const pp_memory_item& item : plan.memory()) memory += item.bytes;
    for (const pp_op& op : plan.ops()) {
      if (op.kind != PP_OP_GEMM || op.phase != PP_PHASE_FORWARD || !hardware.functions->gemm_time) continue;
      double seconds = 0.0;
      pp_error error{sizeof(pp_error), nullptr, 0};
      if (hardware.functions->gemm_time(hardware.instance, op.m, op.n, op.k, op.dtype, &seconds, &error) != PP_OK)
        throw paraplan::InvalidArgument("the hardware's gemm_time failed");
      gemm_s += seconds * op.count;
    }
    results.number("legacy.ops", static_cast<double>(plan.ops().size()));
    results.number("legacy.memory_items", static_cast<double>(plan.memory().size()));
    results.number("legacy.memory_bytes", memory);
    results.number("legacy.peak_bf16", hardware.profile->peak_flops[PP_DTYPE_BF16]);
    results.number("legacy.forward_gemm_s", gemm_s);
    results.number("legacy.built_against_minor", PP_ABI_MINOR);
    results.text("legacy.hardware", hardware.profile->name);
  }
};

}  // namespace

PARAPLAN_PLUGIN(LegacyCounter)
