// plan_job.h: every rank of the MPI job runs the plan's step a few times; rank 0 gathers what
// was measured into report keys.
//
//   measured.step_s                 median over the measured steps of the step time (the
//                                   slowest rank's, from a common start)
//   measured.step_min_s / step_max_s, measured.steps, measured.warmup_steps
//   measured.compute_s              per step, mean over ranks: time in compute kernels
//   measured.op_class_s.<class>     the same by kind: gemm, attention, memory_bound, host_copy
//   measured.exposed_comm_s.<owner> per step, mean over ranks: blocked waiting for that strategy's
//                                   communication
//   measured.pipeline_wait_s        per step, mean over ranks: blocked in pipeline receives
//   measured.progress_s, issue_s    per step, mean over ranks: polling transfers in flight between
//                                   kernels, starting non-blocking ones
//   measured.other_s                per step, mean over ranks: the rest of the step (the program's
//                                   own bookkeeping, and with more ranks than cores, waiting for one)
//   measured.busy_fraction.rank_<r> compute time over step time, per rank
//   verify.passed, verify.checked_transfers, verify.checked_values   (with verify)
//   verify.uneven_all_to_alls       (with verify) exchanges run with per-peer counts, all ranks
//   trace.file, trace.events        (with a trace: the last measured step of every rank)
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "paraplan/sdk.hpp"

namespace mpi_executor {

struct JobOptions {
  int steps = 5;
  int warmup = 1;
  bool verify = false;
  std::string trace;  // Chrome trace file, written by rank 0; empty: none
  // Faults on purpose, to test that they are caught: "sequence" (rank 0 numbers its collectives
  // one ahead of its groups, as if it had run one more: --verify must fail), "stall" (the last
  // rank never starts: the timeout must end the job); empty: none.
  std::string fault;
};

// Called by every rank of MPI_COMM_WORLD; returns the keys on rank 0 and an empty object elsewhere.
nlohmann::json run_plan_job(const paraplan::PlanView& plan, const pp_hardware_binding_v1& hardware,
                            const JobOptions& options);

}  // namespace mpi_executor
