// rank_runner.h: one MPI rank running its pipeline stage's program (rank_program/stage_program.h)
// for one optimizer step, for real.
//
// The program is issued in order on one thread. Compute instructions run their plan ops as
// kernels (kernels.h); communication starts non-blocking (transfers.h) and is waited for only
// where a later instruction depends on it, as the simulator's streams would: a critical
// collective right away, an overlapped one when the next block (or the optimizer) needs it.
// Between kernels the runner polls the transfers in flight so that MPI moves them while compute
// runs. A step that waits for a pipeline message receives it (blocking) when it starts; sends
// never block the sender (the message is handed over, as the simulator delivers it), and all of
// them complete before the step ends.
//
// What the time went to is measured on the rank's one thread: compute by op kind, time blocked
// waiting for each strategy's communication (exposed), time blocked in pipeline receives (the
// bubble and the boundary transfers).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels.h"
#include "paraplan/sdk.hpp"
#include "rank_mesh.h"
#include "stage_program.h"
#include "transfers.h"

namespace mpi_executor {

enum OpClass { kGemm, kAttention, kMemoryBound, kHostCopy, kOpClasses };
const char* op_class_name(int op_class);

struct StepMeasurement {
  double step_s = 0;                 // this rank: from the step's common start to its last instruction
  double compute_s[kOpClasses] = {};
  std::vector<double> waited_s;      // per ProgramSet::owners: blocked waiting for their communication
  double receive_wait_s = 0;         // blocked in pipeline receives
  double progress_s = 0;             // polling the transfers in flight between kernels
  double issue_s = 0;                // starting non-blocking transfers (MPI_I*, MPI_Isend)
  std::vector<double> start, finish;  // per instruction, seconds from the step's start (when recorded)
};

class RankRunner {
 public:
  RankRunner(const paraplan::PlanView& plan, const rank_program::ProgramSet& programs,
             const rank_program::RankMesh& mesh, int world_rank, bool verify);

  // Runs one step; every rank calls it together (it starts with a barrier).
  StepMeasurement run_step(bool record);

  const rank_program::StageProgram& program() const { return program_; }
  const Transfers& transfers() const { return transfers_; }
  void skew_sequences() { transfers_.skew_sequences(); }  // a fault on purpose (plan_job.h)

 private:
  void execute(size_t index, StepMeasurement& step);
  void wait_for(size_t index, StepMeasurement& step);
  void progress(StepMeasurement& step);
  double now() const;

  const paraplan::PlanView& plan_;
  const rank_program::ProgramSet& programs_;
  const rank_program::RankMesh& mesh_;
  const rank_program::StageProgram& program_;
  int world_rank_;
  Kernels kernels_;
  Transfers transfers_;
  std::vector<std::unique_ptr<Transfer>> in_flight_;  // per instruction, while its transfer runs
  std::vector<size_t> outstanding_;                    // instructions with a transfer in flight
  double step_start_ = 0;
  double last_progress_ = -1;
  static constexpr double kProgressInterval_s = 200e-6;
  bool record_ = false;
  bool draining_ = false;  // the step's end: sends are waited for too
};

}  // namespace mpi_executor
