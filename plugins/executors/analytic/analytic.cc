// analytic: the closed-form cost model. Sums every rank class's ops and memory (stage_cost.h)
// and combines the stages with the pipeline schedule the plan carries.
//
//   step = micro_batches x slowest stage's micro-batch time x (1 + bubble_fraction)
//        + the longest tail: exposed per-step communication + optimizer update (after the last micro-batch)
// The totals (step, memory, throughput, MFU) are the search's figures for the plan's own layout
// (plan_figures.h), so evaluate and search price a plan with one model; stage_cost.h breaks them
// down by stage and owner with the same terms (stage_cost.h: phase_elapsed_s, step_s, memory_bytes).
//   memory per GPU = weights + gradients + optimizer state
//                  + activations per micro-batch x micro-batches in flight + other + runtime overhead
//   MFU = model FLOPs per step / (step x GPUs x peak bf16 FLOP/s)   (Megatron-LM convention,
//         cost_model.hpp model_flops_per_step: recomputation, padding and expert imbalance are
//         not model work; fp8 runs are still measured against the bf16 peak)
#include <algorithm>
#include <map>

#include "paraplan/cost_model.hpp"
#include "paraplan/sdk.hpp"
#include "plan_figures.h"
#include "stage_cost.h"

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

class Analytic : public paraplan::Executor {
 public:
  static paraplan::PluginInfo info() {
    return {"analytic",
            "1.0.0",
            "Closed-form cost model: memory per GPU, communication per strategy, step time, throughput, MFU",
            {paraplan::ParamSpec::Float("runtime_overhead_gib", 1.0,
                                        "memory every GPU loses to the CUDA context, NCCL buffers and allocator")
                 .range(0.0, 64.0)}};
  }

  explicit Analytic(const paraplan::Params& params) : overhead_bytes_(params.float_value("runtime_overhead_gib") * kGiB) {}

  void run(const paraplan::PlanView& plan, const pp_hardware_binding_v1& given,
           const paraplan::ResultSink& results) override {
    const pp_hardware_profile profile = paraplan::cost::fit_to_cluster(*given.profile, plan.cluster());
    pp_hardware_binding_v1 hardware = given;
    hardware.profile = &profile;
    const pp_pipeline& pipeline = plan.pipeline();
    const double micro_batches = static_cast<double>(pipeline.micro_batches);

    std::vector<analytic::StageCost> stages;
    for (size_t stage = 0; stage < plan.stages().size(); ++stage) stages.push_back(analytic::cost_stage(plan, hardware, stage));

    // The totals come from the search's own figures (one model, plan_figures.h), for the plan's
    // own layout; the stages' costs break them down.
    std::vector<int64_t> strides;
    for (const pp_mesh_axis& axis : plan.axes()) strides.push_back(axis.stride);
    pp_plan_figures totals{};
    analytic::plan_figures(plan, given, overhead_bytes_, strides, 1, &totals);

    // The slowest stage sets the pace of the whole pipeline; the fullest one the memory.
    size_t slowest = 0, fullest = 0;
    std::vector<double> stage_memory;
    for (size_t i = 0; i < stages.size(); ++i) {
      if (stages[i].micro_batch_s() > stages[slowest].micro_batch_s()) slowest = i;
      const analytic::StageCost& stage = stages[i];
      stage_memory.push_back(analytic::memory_bytes(stage.weights_bytes + stage.gradients_bytes + stage.optimizer_bytes,
                                                    stage.activations_bytes_per_micro_batch,
                                                    analytic::in_flight(plan.stages()[i], pipeline), stage.other_bytes,
                                                    overhead_bytes_));
      if (stage_memory[i] > stage_memory[fullest]) fullest = i;
    }
    const analytic::StageCost& pace = stages[slowest];
    const double bubble_s = pipeline.bubble_fraction * micro_batches * pace.micro_batch_s();
    // After its last micro-batch every stage finishes its gradient reduction and optimizer
    // update on its own; the step ends with the longest such tail (the embedding or head stage,
    // usually), not necessarily the pacing stage's.
    size_t longest_tail = 0;
    for (size_t i = 0; i < stages.size(); ++i)
      if (stages[i].tail_s() > stages[longest_tail].tail_s()) longest_tail = i;

    report_memory(results, stages[fullest], totals.memory_per_gpu_bytes, profile,
                  analytic::in_flight(plan.stages()[fullest], pipeline));
    // Pipeline stages hold different layers (and a layered model's stages different mixes of
    // kinds), embedding and head: each one's memory, row by row.
    if (stages.size() > 1 || !paraplan::beyond_uniform_transformer(plan.model()).empty())
      for (size_t i = 0; i < stages.size(); ++i)
        report_stage_memory(results, plan, i, stages[i], stage_memory[i], analytic::in_flight(plan.stages()[i], pipeline));
    // Every strategy that owns an axis gets its keys, 0 when it moves nothing.
    std::map<std::string, double> owners;
    for (const pp_mesh_axis& axis : plan.axes()) owners.emplace(axis.owner, 0.0);
    report_communication(results, stages, owners);
    report_time(results, pace, stages[longest_tail], micro_batches, bubble_s, totals.step_s, pipeline, owners, profile,
                plan.cluster().num_gpus);
    report_throughput(results, plan, stages, totals);
  }

  // The search's batched figures (plan_figures.h).
  void evaluate(const paraplan::PlanView& plan, const pp_hardware_binding_v1& hardware, std::span<const int64_t> strides,
                uint32_t layouts, pp_plan_figures* figures) {
    analytic::plan_figures(plan, hardware, overhead_bytes_, strides, layouts, figures);
  }

 private:
  void report_memory(const paraplan::ResultSink& results, const analytic::StageCost& stage, double total,
                     const pp_hardware_profile& profile, double in_flight) const {
    results.number("memory.per_gpu_bytes", total);
    results.number("memory.capacity_bytes", profile.memory_bytes);
    results.boolean("memory.fits", total <= profile.memory_bytes);
    results.number("memory.headroom_bytes", profile.memory_bytes - total);  // negative: short by that much
    report_state_and_activations(results, "memory.", stage, in_flight);
    results.number("memory.micro_batches_in_flight", in_flight);
  }

  // A stage's model state, activations (its sets in flight) and the rest, under `prefix`.
  void report_state_and_activations(const paraplan::ResultSink& results, const std::string& prefix,
                                    const analytic::StageCost& stage, double in_flight) const {
    results.number(prefix + "parameters_bytes", stage.weights_bytes);
    results.number(prefix + "gradients_bytes", stage.gradients_bytes);
    results.number(prefix + "optimizer_bytes", stage.optimizer_bytes);
    results.number(prefix + "activations_bytes", stage.activations_bytes_per_micro_batch * in_flight);
    results.number(prefix + "other_bytes", stage.other_bytes + overhead_bytes_);
  }

  // stages.<i>.*: what stage i holds ("E + mla+dense x3 + mla+moe x1 + H") and its memory.
  void report_stage_memory(const paraplan::ResultSink& results, const paraplan::PlanView& plan, size_t index,
                           const analytic::StageCost& stage, double total, double in_flight) const {
    const pp_stage& held = plan.stages()[index];
    const paraplan::LayerKinds kinds(plan.model());
    std::string layers = held.has_embedding ? "E" : "";
    for (uint32_t kind = 0; kind < kinds.size(); ++kind)
      if (const int64_t count = plan.layers_on_stage(index, kind); count > 0)
        layers += (layers.empty() ? "" : " + ") + std::string(kinds[kind].name) + " x" + std::to_string(count);
    if (held.has_head) layers += (layers.empty() ? "" : " + ") + std::string("H");
    const std::string key = "stages." + std::to_string(index) + ".";
    results.text(key + "layers", layers);
    report_state_and_activations(results, key, stage, in_flight);
    results.number(key + "per_gpu_bytes", total);
  }

  static void report_communication(const paraplan::ResultSink& results, const std::vector<analytic::StageCost>& stages,
                                   std::map<std::string, double> busiest) {
    for (const analytic::StageCost& stage : stages)
      for (const auto& [owner, bytes] : stage.bytes_sent_per_step) busiest[owner] = std::max(busiest[owner], bytes);
    for (const auto& [owner, bytes] : busiest) results.number("comm." + owner + ".bytes_per_gpu_per_step", bytes);
  }

  static void report_time(const paraplan::ResultSink& results, const analytic::StageCost& pace,
                          const analytic::StageCost& tail, double micro_batches, double bubble_s, double step_s,
                          const pp_pipeline& pipeline, std::map<std::string, double> exposed,
                          const pp_hardware_profile& profile, int64_t gpus) {
    results.number("time.step_s", step_s);
    const double compute_s = micro_batches * (pace.forward.compute_s + pace.backward.compute_s);
    results.number("time.compute_s", compute_s);
    results.number("time.slowest_gpu_s", paraplan::cost::slowest_gpu_s(profile, gpus, compute_s));
    results.number("time.bubble_s", bubble_s);
    results.number("time.host_wait_s", micro_batches * (pace.forward.host_wait_s + pace.backward.host_wait_s));
    for (const auto& [owner, seconds] : pace.forward.exposed_by_owner()) exposed[owner] += micro_batches * seconds;
    for (const auto& [owner, seconds] : pace.backward.exposed_by_owner()) exposed[owner] += micro_batches * seconds;
    for (const auto& [owner, seconds] : tail.step_forward.exposed_by_owner()) exposed[owner] += seconds;
    for (const auto& [owner, seconds] : tail.step_backward.exposed_by_owner()) exposed[owner] += seconds;
    for (const auto& [owner, seconds] : tail.step_tail.critical_comm_s) exposed[owner] += seconds;
    for (const auto& [owner, seconds] : exposed) results.number("time.exposed_comm_s." + owner, seconds);
    results.number("time.overlap_contention_s",
                   micro_batches * (pace.forward.contention_s() + pace.backward.contention_s()) +
                       tail.step_forward.contention_s() + tail.step_backward.contention_s() +
                       tail.step_tail.contention_s());
    results.number("time.optimizer_s", tail.step_tail.compute_s);
    results.number("pipeline.bubble_fraction", pipeline.bubble_fraction);
    results.number("pipeline.stages", static_cast<double>(pipeline.stages));
    results.number("pipeline.virtual_stages", static_cast<double>(pipeline.virtual_stages));
  }

  static void report_throughput(const paraplan::ResultSink& results, const paraplan::PlanView& plan,
                                const std::vector<analytic::StageCost>& stages, const pp_plan_figures& totals) {
    const double step_s = totals.step_s;
    const double gpus = static_cast<double>(plan.cluster().num_gpus);
    const double micro_batches = static_cast<double>(plan.pipeline().micro_batches);
    const double tokens = static_cast<double>(plan.training().global_batch) * static_cast<double>(plan.model().seq_len);
    // Every stage class is replicated over gpus / stages ranks, each running all micro-batches.
    const double ranks_per_stage = gpus / static_cast<double>(stages.size());
    // Model FLOPs by convention, from the model; hardware FLOPs are what the ranks really run
    // (recomputation, the busiest expert rank's extra tokens, padding).
    const double model_flops = paraplan::cost::model_flops_per_step(plan.model(), plan.training());
    double hardware_flops = 0;
    for (const analytic::StageCost& stage : stages)
      hardware_flops += ranks_per_stage * micro_batches *
                        (stage.model_flops_per_micro_batch + stage.recompute_flops_per_micro_batch);
    results.number("throughput.tokens_per_s", tokens / step_s);
    results.number("throughput.tokens_per_s_per_gpu", totals.tokens_per_s_per_gpu);
    results.number("throughput.model_flops_per_step", model_flops);
    results.number("throughput.model_tflops_per_gpu", model_flops / step_s / gpus / 1e12);
    results.number("throughput.hardware_tflops_per_gpu", hardware_flops / step_s / gpus / 1e12);
    results.number("throughput.mfu", totals.mfu);
  }

  double overhead_bytes_;
};

}  // namespace

PARAPLAN_PLUGIN(Analytic)
