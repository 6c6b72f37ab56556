// simulate: a discrete-event executor. It walks the plan the way a real executor would: every
// pipeline stage's ranks run their schedule steps op by op (stage_program.h) on a compute stream
// and one stream per kind of communication, collectives wait for their slowest member and
// transfers share their links (event_engine.h). It answers what the closed-form model
// approximates: pipeline warm-up and cool-down as the schedule really runs them, which
// communication hides behind which compute, stragglers and expert imbalance.
//
// Results (keys under the same names as the analytic executor's where they mean the same):
//   time.step_s                 one optimizer step: when the last rank finishes its last instruction
//                               (the optimizer update, and what follows it: updated parameters' all-gather)
//   time.pace_rank              the rank with the most work in its steps; the split below is its:
//     step = compute_s + host_wait_s + overlap_contention_s + optimizer_s + sum of exposed_comm_s.<owner>
//            + idle_s, exactly
//   time.compute_s              its compute in the schedule steps, each instruction at its own time
//   time.slowest_gpu_s          of compute_s, what running at the slowest GPU's pace adds (cost_model.hpp)
//   time.host_wait_s            its compute stream idle while the host issues layers' ops (host_issue.hpp)
//   time.overlap_contention_s   what overlapped transfers beside its compute cost it: the compute ran
//                               slower while they ran (the profile's overlap_compute_slowdown)
//   time.optimizer_s            its compute after them
//   time.exposed_comm_s.<owner> communication on its path or that its path waited for, steps and tail
//   time.idle_s                 waiting for other ranks: pipeline neighbours, a group's slowest member,
//                               the last rank to finish
//   time.bubble_s               pipeline_s - work_s: how much longer the pipeline phase lasts than the
//                               pace rank's work in it (its fill and drain, and waits on other ranks)
//   time.work_s                 compute + host wait + contention + exposed communication in the steps
//   time.pipeline_s             when the last rank finishes its last schedule step
//   time.tail_s                 step - pipeline: drained gradient reductions, the optimizer, what follows it
//   pipeline.bubble_fraction    bubble / work (1F1B's (p-1)/m with uniform stages and free communication)
//   streams.stage_<s>.<stream>.busy_fraction   time the stream ran something / step, mean over the stage's ranks
//   memory.peak_bytes.stage_<s> model state, buffers and the activations in use at their peak
//   memory.in_flight_micro_batches.stage_<s>   peak activations / one micro-batch's (whole stage)
//   memory.per_gpu_bytes, memory.capacity_bytes, memory.fits   the fullest stage
//   throughput.*                tokens/s and MFU, as the analytic executor defines them
//   simulation.ranks, simulation.events, trace.file, trace.events
//   simulation.finish_times_per_rank           the most finish times one rank keeps (finish_windows.h)
#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "chrome_trace.h"
#include "event_engine.h"
#include "paraplan/cost_model.hpp"
#include "paraplan/sdk.hpp"
#include "rank_mesh.h"
#include "stage_program.h"

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// "dp reduce" -> "dp_reduce": stream names become result keys.
std::string key_name(std::string name) {
  std::replace(name.begin(), name.end(), ' ', '_');
  return name;
}

class Simulate : public paraplan::Executor {
 public:
  static constexpr uint32_t flags = PP_EXECUTOR_WALKS_SCHEDULE;

  static paraplan::PluginInfo info() {
    return {"simulate",
            "1.0.0",
            "Discrete-event simulation of one step: the pipeline schedule op by op, collectives gated by their "
            "slowest member, shared links, stragglers; Chrome trace output",
            {paraplan::ParamSpec::Enum("ranks", {"stage", "all"}, "stage",
                                       "simulate one representative rank per pipeline stage, or every rank"),
             paraplan::ParamSpec::String("trace", "",
                                         "write the timeline to this file as Chrome trace event JSON "
                                         "(open it in ui.perfetto.dev or chrome://tracing); empty = none"),
             paraplan::ParamSpec::Float("runtime_overhead_gib", 1.0,
                                        "memory every GPU loses to the CUDA context, NCCL buffers and allocator")
                 .range(0.0, 64.0),
             paraplan::ParamSpec::Float("expert_imbalance", 0.0,
                                        "in every MoE layer and micro-batch one rank of each expert group (rotating) "
                                        "receives 1 + this times the mean routed tokens, the others fewer")
                 .range(0.0, 16.0),
             paraplan::ParamSpec::Int("straggler_rank", -1, "a rank whose compute runs slower; -1 = none")
                 .at_least(-1),
             paraplan::ParamSpec::Float("straggler_slowdown", 1.0, "how many times slower the straggler computes")
                 .range(1.0, 1000.0)}};
  }

  explicit Simulate(const paraplan::Params& params)
      : every_rank_(params.string_value("ranks") == "all"),
        trace_(params.string_value("trace")),
        overhead_bytes_(params.float_value("runtime_overhead_gib") * kGiB),
        expert_imbalance_(params.float_value("expert_imbalance")),
        straggler_rank_(params.int_value("straggler_rank")),
        straggler_slowdown_(params.float_value("straggler_slowdown")) {}

  void run(const paraplan::PlanView& plan, const pp_hardware_binding_v1& given,
           const paraplan::ResultSink& results) override {
    const pp_hardware_profile profile = paraplan::cost::fit_to_cluster(*given.profile, plan.cluster());
    pp_hardware_binding_v1 hardware = given;
    hardware.profile = &profile;
    const rank_program::ProgramSet programs = rank_program::build_programs(plan, hardware, overhead_bytes_);
    const rank_program::RankMesh mesh(plan.axes(), plan.cluster().num_gpus, static_cast<int64_t>(programs.stages.size()),
                                  programs.pipeline_axis, every_rank_);
    simulate::EngineOptions options;
    options.record_timeline = !trace_.empty();
    options.expert_imbalance = expert_imbalance_;
    options.straggler_rank = simulated_straggler(plan, programs);
    options.straggler_slowdown = straggler_slowdown_;
    simulate::EventEngine engine(programs, mesh, profile, options);
    engine.run();

    report_time(results, plan, programs, mesh, engine, profile);
    report_streams(results, programs, mesh, engine);
    report_memory(results, programs, mesh, engine, profile);
    report_throughput(results, plan, engine.step_s(), profile);
    results.number("simulation.ranks", mesh.size());
    results.number("simulation.events", static_cast<double>(engine.events()));
    results.number("simulation.finish_times_per_rank", engine.finish_times_per_rank());
    if (!trace_.empty()) {
      const uint64_t events = write_trace(programs, mesh, engine);
      results.text("trace.file", trace_);
      results.number("trace.events", static_cast<double>(events));
    }
  }

 private:
  uint64_t write_trace(const rank_program::ProgramSet& programs, const rank_program::RankMesh& mesh,
                       const simulate::EventEngine& engine) const {
    std::vector<rank_program::RankTimeline> timelines;
    for (int32_t rank = 0; rank < mesh.size(); ++rank) {
      const simulate::RankRecord& record = engine.record(rank);
      const int64_t global = mesh.global_rank(rank);
      timelines.push_back({global,
                           "rank " + std::to_string(global) + " (stage " + std::to_string(mesh.stage(rank)) +
                               (mesh.every_rank() ? ")" : ", for every rank of the stage)"),
                           &engine.program(rank), record.start, record.finish, record.memory});
    }
    return rank_program::write_chrome_trace(trace_, programs, timelines);
  }

  // The straggler as a simulated rank: itself, or the representative of its stage.
  int64_t simulated_straggler(const paraplan::PlanView& plan, const rank_program::ProgramSet& programs) const {
    const int64_t gpus = plan.cluster().num_gpus;
    if (straggler_rank_ >= gpus)
      throw paraplan::InvalidArgument("straggler_rank = " + std::to_string(straggler_rank_) + " is not a rank of this " +
                                      std::to_string(gpus) + "-GPU plan (0.." + std::to_string(gpus - 1) + ")");
    if (straggler_rank_ < 0 || straggler_slowdown_ == 1.0) return -1;
    if (every_rank_) return straggler_rank_;
    if (programs.pipeline_axis < 0) return 0;
    const pp_mesh_axis& axis = plan.axes()[static_cast<size_t>(programs.pipeline_axis)];
    return (straggler_rank_ / axis.stride) % axis.degree;
  }

  // The rank with the most work in its steps sets the pace (the lowest such rank, so ties are
  // settled the same way every run). Its step splits exactly into compute, optimizer, exposed
  // communication by owner and idle time.
  static void report_time(const paraplan::ResultSink& results, const paraplan::PlanView& plan,
                          const rank_program::ProgramSet& programs, const rank_program::RankMesh& mesh,
                          const simulate::EventEngine& engine, const pp_hardware_profile& profile) {
    double pipeline = 0;
    int32_t pace = 0;
    for (int32_t rank = 0; rank < mesh.size(); ++rank) {
      pipeline = std::max(pipeline, engine.record(rank).pipeline_end_s);
      if (engine.record(rank).work_s() > engine.record(pace).work_s() * (1 + 1e-12)) pace = rank;
    }
    const simulate::RankRecord& record = engine.record(pace);
    const double step = engine.step_s(), work = record.work_s();
    double busy = record.compute_s + record.tail_compute_s + record.host_wait_s + record.contention_s;
    for (double exposed : record.exposed_comm_s) busy += exposed;
    const double bubble = std::max(0.0, pipeline - work);
    results.number("time.step_s", step);
    results.number("time.pace_rank", static_cast<double>(mesh.global_rank(pace)));
    results.number("time.compute_s", record.compute_s);
    results.number("time.slowest_gpu_s", paraplan::cost::slowest_gpu_s(profile, plan.cluster().num_gpus, record.compute_s));
    results.number("time.optimizer_s", record.tail_compute_s);
    results.number("time.host_wait_s", record.host_wait_s);
    results.number("time.overlap_contention_s", record.contention_s);
    for (size_t owner = 0; owner < programs.owners.size(); ++owner)
      results.number("time.exposed_comm_s." + programs.owners[owner], record.exposed_comm_s[owner]);
    const double idle = step - busy;  // rounding leaves a few ulps when nothing waited
    results.number("time.idle_s", std::abs(idle) < 1e-12 * step ? 0.0 : idle);
    results.number("time.bubble_s", bubble);
    results.number("time.work_s", work);
    results.number("time.pipeline_s", pipeline);
    results.number("time.tail_s", step - pipeline);
    results.number("pipeline.bubble_fraction", work > 0 ? bubble / work : 0.0);
    results.number("pipeline.stages", static_cast<double>(plan.pipeline().stages));
    results.number("pipeline.virtual_stages", static_cast<double>(plan.pipeline().virtual_stages));
    results.number("pipeline.micro_batches", static_cast<double>(plan.pipeline().micro_batches));
  }

  static void report_streams(const paraplan::ResultSink& results, const rank_program::ProgramSet& programs,
                             const rank_program::RankMesh& mesh, const simulate::EventEngine& engine) {
    const double step = engine.step_s();
    for (size_t stage = 0; stage < programs.stages.size(); ++stage) {
      std::vector<double> busy(programs.streams.size(), 0.0);
      double ranks = 0;
      for (int32_t rank = 0; rank < mesh.size(); ++rank) {
        if (mesh.stage(rank) != static_cast<int32_t>(stage)) continue;
        ranks += 1;
        for (size_t stream = 0; stream < busy.size(); ++stream) busy[stream] += engine.record(rank).busy_s[stream];
      }
      for (size_t stream = 0; stream < busy.size(); ++stream) {
        if (programs.stages[stage].first_on_stream[stream] < 0 || ranks == 0) continue;
        results.number("streams.stage_" + std::to_string(stage) + "." + key_name(programs.streams[stream]) +
                           ".busy_fraction",
                       step > 0 ? busy[stream] / ranks / step : 0.0);
      }
    }
  }

  static void report_memory(const paraplan::ResultSink& results, const rank_program::ProgramSet& programs,
                            const rank_program::RankMesh& mesh, const simulate::EventEngine& engine,
                            const pp_hardware_profile& profile) {
    double fullest = 0;
    for (size_t stage = 0; stage < programs.stages.size(); ++stage) {
      double activations = 0;
      for (int32_t rank = 0; rank < mesh.size(); ++rank)
        if (mesh.stage(rank) == static_cast<int32_t>(stage))
          activations = std::max(activations, engine.record(rank).peak_activation_bytes);
      const rank_program::StageProgram& program = programs.stages[stage];
      const std::string suffix = ".stage_" + std::to_string(stage);
      const double peak = program.static_bytes + activations;
      results.number("memory.peak_bytes" + suffix, peak);
      results.number("memory.in_flight_micro_batches" + suffix,
                     program.activation_bytes_per_micro_batch > 0 ? activations / program.activation_bytes_per_micro_batch
                                                                  : 0.0);
      fullest = std::max(fullest, peak);
    }
    results.number("memory.per_gpu_bytes", fullest);
    results.number("memory.capacity_bytes", profile.memory_bytes);
    results.boolean("memory.fits", fullest <= profile.memory_bytes);
    results.number("memory.headroom_bytes", profile.memory_bytes - fullest);  // negative: short by that much
  }

  static void report_throughput(const paraplan::ResultSink& results, const paraplan::PlanView& plan, double step_s,
                                const pp_hardware_profile& profile) {
    const double gpus = static_cast<double>(plan.cluster().num_gpus);
    const double tokens = static_cast<double>(plan.training().global_batch) * static_cast<double>(plan.model().seq_len);
    const double model_flops = paraplan::cost::model_flops_per_step(plan.model(), plan.training());
    results.number("throughput.tokens_per_s", tokens / step_s);
    results.number("throughput.tokens_per_s_per_gpu", tokens / step_s / gpus);
    results.number("throughput.model_tflops_per_gpu", model_flops / step_s / gpus / 1e12);
    results.number("throughput.mfu", model_flops / step_s / gpus / paraplan::cost::peak_flops(profile, PP_DTYPE_BF16));
  }

  bool every_rank_;
  std::string trace_;
  double overhead_bytes_;
  double expert_imbalance_;
  int64_t straggler_rank_;
  double straggler_slowdown_;
};

}  // namespace

PARAPLAN_PLUGIN(Simulate)
