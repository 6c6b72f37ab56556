// event_engine.h: the discrete-event simulation of one optimizer step over the simulated ranks.
//
// Each rank runs its stage's program (stage_program.h) on a compute stream and one stream per
// kind of communication. An instruction starts when it heads its stream (streams run in issue
// order, like CUDA streams), the instructions it depends on have finished and, for a boundary
// receive, the sender's transfer has arrived. A collective starts when every simulated member of
// its group has reached it: the slowest member gates the group, and all finish together.
//
// Links: a transfer occupies its tier's egress and ingress at each rank it touches (a collective:
// both directions at every member; a send: the sender's egress, the receiver's ingress).
// Transfers that share one of those run at the rate of their most shared port: two at once on a
// rank's network port each take twice as long while they overlap (processor sharing).
//
// Overlapped communication (a transfer off the rank's path) slows the compute beside it: while
// one runs on a rank, its compute stream's work progresses at 1 / (1 + the profile's
// overlap_compute_slowdown) of full speed and is re-timed when that starts or stops
// (cost::overlapped_elapsed_s is the closed form of the same rule).
//
// Ranks are slowed on purpose by two options: a straggler (one rank's compute `slowdown` times
// slower) and expert imbalance (in every MoE layer and micro-batch one rank of each expert
// group, rotating, receives 1 + x times the mean routed tokens and the others proportionally
// fewer; with one rank per stage the representative is priced as the busiest, whom the
// collectives after the experts wait for).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "rank_mesh.h"
#include "stage_program.h"

namespace simulate {

using rank_program::Instruction;
using rank_program::ProgramSet;
using rank_program::RankMesh;
using rank_program::StageProgram;
using rank_program::Work;

struct EngineOptions {
  bool record_timeline = false;  // keep every instruction's start and finish, and memory samples
  double expert_imbalance = 0;
  int64_t straggler_rank = -1;   // global rank, -1 = none
  double straggler_slowdown = 1;
};

// What one simulated rank did.
struct RankRecord {
  std::vector<double> start, finish;      // per instruction, with record_timeline only
  std::vector<double> busy_s;             // per stream: time it ran something
  // The rank's path (compute, critical communication) split by what its time went to: compute
  // in the schedule steps and after them, and per owner the communication it ran or waited for
  // (steps and tail); the rest of the step it waited for other ranks.
  double compute_s = 0;
  double tail_compute_s = 0;              // after the steps: the optimizer update
  double host_wait_s = 0;                 // in the steps: the compute stream waiting for the host
  double contention_s = 0;                // compute's time lost to overlapped communication beside it
  double contention_in_steps_s = 0;
  std::vector<double> exposed_comm_s;     // per ProgramSet::owners
  double exposed_comm_in_steps_s = 0;
  double pipeline_end_s = 0;              // when its last schedule step ended
  double work_s() const { return compute_s + host_wait_s + exposed_comm_in_steps_s + contention_in_steps_s; }
  double activation_bytes = 0, peak_activation_bytes = 0;
  std::vector<std::pair<double, double>> memory;  // (time, bytes in use) after each change, with record_timeline
};

class EventEngine {
 public:
  EventEngine(const ProgramSet& programs, const RankMesh& mesh, const pp_hardware_profile& profile,
              const EngineOptions& options);
  ~EventEngine();
  EventEngine(const EventEngine&) = delete;
  EventEngine& operator=(const EventEngine&) = delete;

  // Runs the step to its end; throws paraplan::Error when some rank can never proceed.
  void run();

  double step_s() const { return step_s_; }
  uint64_t events() const { return events_; }
  // The most finish times one rank keeps (finish_windows.h): bounded by its program's structure.
  uint32_t finish_times_per_rank() const;
  const RankRecord& record(int32_t rank) const { return records_[static_cast<size_t>(rank)]; }
  const StageProgram& program(int32_t rank) const;

 private:
  class State;
  std::vector<RankRecord> records_;  // before state_, which fills it
  std::unique_ptr<State> state_;
  double step_s_ = 0;
  uint64_t events_ = 0;
};

}  // namespace simulate
