#include "plan_job.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <thread>

#include "chrome_trace.h"
#include "rank_mesh.h"
#include "rank_runner.h"
#include "stage_program.h"

namespace mpi_executor {
namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// The last step's timeline of every rank, on rank 0.
uint64_t write_trace(const std::string& file, const rank_program::ProgramSet& programs,
                     const rank_program::RankMesh& mesh, const StepMeasurement& last, int rank, int size) {
  std::vector<double> mine(last.start);
  mine.insert(mine.end(), last.finish.begin(), last.finish.end());
  const int count = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<size_t>(size)), offsets(static_cast<size_t>(size));
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::partial_sum(counts.begin(), counts.end() - 1, offsets.begin() + 1);
  std::vector<double> all(rank == 0 ? static_cast<size_t>(offsets.back() + counts.back()) : 0);
  MPI_Gatherv(mine.data(), count, MPI_DOUBLE, all.data(), counts.data(), offsets.data(), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (rank != 0) return 0;
  std::vector<rank_program::RankTimeline> timelines;
  for (int r = 0; r < size; ++r) {
    const size_t half = static_cast<size_t>(counts[static_cast<size_t>(r)]) / 2;
    const double* base = all.data() + offsets[static_cast<size_t>(r)];
    timelines.push_back({r, "rank " + std::to_string(r) + " (stage " + std::to_string(mesh.stage(r)) + ", measured)",
                         &programs.stages[static_cast<size_t>(mesh.stage(r))], {base, half}, {base + half, half}, {}});
  }
  return rank_program::write_chrome_trace(file, programs, timelines);
}

}  // namespace

nlohmann::json run_plan_job(const paraplan::PlanView& plan, const pp_hardware_binding_v1& hardware,
                            const JobOptions& options) {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != plan.cluster().num_gpus)
    throw paraplan::InvalidArgument("the plan runs on " + std::to_string(plan.cluster().num_gpus) +
                                    " GPUs but the MPI job has " + std::to_string(size) +
                                    " ranks: start it with as many ranks as the plan has GPUs");
  const rank_program::ProgramSet programs = rank_program::build_programs(plan, hardware, /*overhead_bytes=*/0);
  const rank_program::RankMesh mesh(plan.axes(), plan.cluster().num_gpus, static_cast<int64_t>(programs.stages.size()),
                                    programs.pipeline_axis, /*every_rank=*/true);
  RankRunner runner(plan, programs, mesh, rank, options.verify);
  if (options.fault == "sequence" && rank == 0) runner.skew_sequences();
  if (options.fault == "stall" && rank == size - 1)
    while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
  for (int i = 0; i < options.warmup; ++i) runner.run_step(false);
  std::vector<StepMeasurement> steps;
  for (int i = 0; i < options.steps; ++i)
    steps.push_back(runner.run_step(!options.trace.empty() && i + 1 == options.steps));

  // The job's step is its slowest rank's.
  std::vector<double> mine, job(steps.size());
  for (const StepMeasurement& step : steps) mine.push_back(step.step_s);
  MPI_Reduce(mine.data(), job.data(), static_cast<int>(mine.size()), MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

  // Per step on this rank, averaged over the measured steps: compute by class, waits by owner,
  // pipeline receives; then averaged over ranks.
  const size_t owners = programs.owners.size();
  // Layout: op classes, owners' waits, pipeline receives, progress polls, issuing, the rest.
  std::vector<double> local(kOpClasses + owners + 4, 0.0), total(local.size());
  const size_t receive_slot = kOpClasses + owners;
  double compute = 0, step_time = 0;
  for (const StepMeasurement& step : steps) {
    for (int c = 0; c < kOpClasses; ++c) local[static_cast<size_t>(c)] += step.compute_s[c] / steps.size();
    for (size_t o = 0; o < owners; ++o) local[kOpClasses + o] += step.waited_s[o] / steps.size();
    const double kernels = std::accumulate(std::begin(step.compute_s), std::end(step.compute_s), 0.0);
    const double waited = std::accumulate(step.waited_s.begin(), step.waited_s.end(), 0.0);
    local[receive_slot] += step.receive_wait_s / steps.size();
    local[receive_slot + 1] += step.progress_s / steps.size();
    local[receive_slot + 2] += step.issue_s / steps.size();
    local[receive_slot + 3] +=
        (step.step_s - kernels - waited - step.receive_wait_s - step.progress_s - step.issue_s) / steps.size();
    compute += kernels;
    step_time += step.step_s;
  }
  MPI_Reduce(local.data(), total.data(), static_cast<int>(local.size()), MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  const double busy = step_time > 0 ? compute / step_time : 0.0;
  std::vector<double> busy_by_rank(static_cast<size_t>(size));
  MPI_Gather(&busy, 1, MPI_DOUBLE, busy_by_rank.data(), 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  double checked[3] = {static_cast<double>(runner.transfers().checked_transfers()),
                       static_cast<double>(runner.transfers().checked_values()),
                       static_cast<double>(runner.transfers().uneven_all_to_alls())};
  double checked_total[3] = {0, 0, 0};
  MPI_Reduce(checked, checked_total, 3, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  const uint64_t trace_events =
      options.trace.empty() ? 0 : write_trace(options.trace, programs, mesh, steps.back(), rank, size);

  nlohmann::json keys = nlohmann::json::object();
  if (rank != 0) return keys;
  keys["measured.step_s"] = median(job);
  keys["measured.step_min_s"] = *std::min_element(job.begin(), job.end());
  keys["measured.step_max_s"] = *std::max_element(job.begin(), job.end());
  keys["measured.steps"] = options.steps;
  keys["measured.warmup_steps"] = options.warmup;
  double compute_per_step = 0;
  for (int c = 0; c < kOpClasses; ++c) {
    keys[std::string("measured.op_class_s.") + op_class_name(c)] = total[static_cast<size_t>(c)] / size;
    compute_per_step += total[static_cast<size_t>(c)] / size;
  }
  keys["measured.compute_s"] = compute_per_step;
  for (size_t o = 0; o < owners; ++o)
    keys["measured.exposed_comm_s." + programs.owners[o]] = total[kOpClasses + o] / size;
  keys["measured.pipeline_wait_s"] = total[receive_slot] / size;
  keys["measured.progress_s"] = total[receive_slot + 1] / size;
  keys["measured.issue_s"] = total[receive_slot + 2] / size;
  keys["measured.other_s"] = total[receive_slot + 3] / size;
  for (int r = 0; r < size; ++r)
    keys["measured.busy_fraction.rank_" + std::to_string(r)] = busy_by_rank[static_cast<size_t>(r)];
  keys["execution.ranks"] = size;
  if (options.verify) {
    keys["verify.passed"] = true;  // a mismatch would have aborted the job with its reason
    keys["verify.checked_transfers"] = checked_total[0];
    keys["verify.checked_values"] = checked_total[1];
    keys["verify.uneven_all_to_alls"] = checked_total[2];
  }
  if (!options.trace.empty()) {
    keys["trace.file"] = options.trace;
    keys["trace.events"] = trace_events;
  }
  return keys;
}

}  // namespace mpi_executor
