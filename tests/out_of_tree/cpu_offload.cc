// cpu_offload: ZeRO-Offload-style optimizer offload, as a paraplan strategy plugin.
//
// ZeRO-Offload (Ren et al., "ZeRO-Offload: Democratizing Billion-Scale Model Training", USENIX ATC
// 2021) keeps the fp32 master weights and Adam moments in host memory and runs the optimizer step
// on the CPU. Every step each GPU sends its gradients to the host and gets the updated parameters
// back over PCIe. As a plan transform that is:
//   - optimizer state leaves GPU memory,
//   - a pinned staging buffer for the copies appears in GPU memory,
//   - one per-step host transfer moves the gradient + parameter bytes across the host link
//     (PCIe or C2C), priced by the executor from the hardware profile: a strategy never needs to
//     know which GPU it runs on.
//
// Recipe:
//   [[strategy]]
//   name = "cpu_offload"
//   pinned_buffer_mb = 512
#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include <paraplan/sdk.hpp>

namespace {

constexpr const char* kName = "cpu_offload";

// Bytes of gradients and parameters held by one rank: what crosses PCIe each step. Memory items
// count once per copy held: LAYER items once per layer, EMBEDDING/HEAD items only on the first/last
// pipeline stage. Stages hold different layers, so the busiest stage is the one that sets the step
// time.
double pcie_bytes_per_step(const paraplan::PlanView& plan) {
  double per_layer = 0.0, embedding = 0.0, head = 0.0, every_rank = 0.0;
  for (const pp_memory_item& item : plan.memory()) {
    if (item.kind != PP_MEMORY_GRADIENTS && item.kind != PP_MEMORY_PARAMETERS) continue;
    switch (item.scope) {
      case PP_SCOPE_LAYER: per_layer += item.bytes; break;
      case PP_SCOPE_EMBEDDING: embedding += item.bytes; break;
      case PP_SCOPE_HEAD: head += item.bytes; break;
      case PP_SCOPE_STEP: every_rank += item.bytes; break;
    }
  }
  // The host always describes at least one stage (the whole model when there is no pipeline).
  double busiest = 0.0;
  for (const pp_stage& stage : plan.stages()) {
    double bytes = every_rank + per_layer * static_cast<double>(stage.layers) +
                   (stage.has_embedding ? embedding : 0.0) + (stage.has_head ? head : 0.0);
    busiest = std::max(busiest, bytes);
  }
  return busiest;
}

class CpuOffload : public paraplan::Strategy {
 public:
  // After the data-parallel family (50): ZeRO/FSDP have already sharded optimizer state, gradients
  // and parameters, so what we move off the GPU is exactly this rank's shard.
  static constexpr int32_t apply_order = 60;

  static paraplan::PluginInfo info() {
    using paraplan::ParamSpec;
    return {kName,
            "1.0.0",
            "ZeRO-Offload: optimizer state and update on the CPU; gradients and updated parameters "
            "cross PCIe every step",
            {ParamSpec::Int("pinned_buffer_mb", 256,
                            "GPU memory reserved for pinned staging buffers of the PCIe copies, in MiB")
                 .at_least(0)}};
  }

  // `paraplan search` tries the plan without offload, and with it at two buffer sizes. Degree 1:
  // offload creates no mesh axis.
  static std::vector<paraplan::SearchCase> search_space() {
    return {paraplan::SearchCase::degrees(1, 1).choose("pinned_buffer_mb", {"256", "1024"})};
  }

  explicit CpuOffload(const paraplan::Params& params)
      : pinned_buffer_bytes_(static_cast<double>(params.int_value("pinned_buffer_mb")) * 1024 * 1024) {}

  void apply(const paraplan::StrategyContext&, paraplan::PlanEditor& plan) override {
    // Read everything first: a view's pointers are invalidated by the first edit.
    const paraplan::PlanView view = plan.view();
    const std::vector<pp_memory_item> memory(view.memory().begin(), view.memory().end());
    const std::vector<pp_op> ops(view.ops().begin(), view.ops().end());
    const double transfer_bytes = pcie_bytes_per_step(view);

    for (uint32_t index = 0; index < memory.size(); ++index) {
      if (memory[index].kind != PP_MEMORY_OPTIMIZER) continue;
      // Zeroed rather than removed: reports still show the category, now costing no GPU memory.
      pp_memory_item offloaded = memory[index];
      offloaded.bytes = 0.0;
      plan.set_memory(index, offloaded);
    }
    // The optimizer update runs on the CPU now: it no longer costs the GPU memory bandwidth.
    for (uint32_t index = 0; index < ops.size(); ++index) {
      if (std::string_view(ops[index].name) != "optimizer_step") continue;
      pp_op on_cpu = ops[index];
      on_cpu.bytes = 0.0;
      plan.set_op(index, on_cpu);
    }
    plan.add_memory(paraplan::make_memory_item(PP_MEMORY_OTHER, PP_SCOPE_STEP,
                                               "cpu_offload.pinned_buffer", kName,
                                               pinned_buffer_bytes_));

    // Once per step, after the last micro-batch: gradients out, updated parameters back in. On the
    // critical path: the CPU update waits for the gradients, the next forward for the parameters.
    pp_op transfer = paraplan::make_op(PP_OP_HOST_TRANSFER, PP_PHASE_STEP, PP_SCOPE_STEP,
                                       "offload_transfer", kName);
    transfer.frequency = PP_PER_STEP;
    transfer.bytes = transfer_bytes;
    plan.append_op(transfer);
  }

 private:
  double pinned_buffer_bytes_;
};

}  // namespace

PARAPLAN_PLUGIN(CpuOffload)
