#include "rank_runner.h"

#include <mpi.h>

#include <algorithm>

#include "plan_ops.h"

namespace mpi_executor {

using rank_program::Instruction;
using rank_program::OpRun;
using rank_program::Work;

const char* op_class_name(int op_class) {
  switch (op_class) {
    case kGemm: return "gemm";
    case kAttention: return "attention";
    case kMemoryBound: return "memory_bound";
    case kHostCopy: return "host_copy";
  }
  return "other";
}

namespace {

int op_class_of(const pp_op& op) {
  switch (op.kind) {
    case PP_OP_GEMM: return kGemm;
    case PP_OP_ATTENTION: return kAttention;
    case PP_OP_HOST_TRANSFER: return kHostCopy;
    default: return kMemoryBound;
  }
}

}  // namespace

RankRunner::RankRunner(const paraplan::PlanView& plan, const rank_program::ProgramSet& programs,
                       const rank_program::RankMesh& mesh, int world_rank, bool verify)
    : plan_(plan),
      programs_(programs),
      mesh_(mesh),
      program_(programs.stages[static_cast<size_t>(mesh.stage(world_rank))]),
      world_rank_(world_rank),
      transfers_(mesh, world_rank, verify) {
  in_flight_.resize(program_.instructions.size());
}

double RankRunner::now() const { return MPI_Wtime() - step_start_; }

StepMeasurement RankRunner::run_step(bool record) {
  StepMeasurement step;
  step.waited_s.assign(programs_.owners.size(), 0.0);
  record_ = record;
  if (record) {
    step.start.assign(program_.instructions.size(), 0.0);
    step.finish.assign(program_.instructions.size(), 0.0);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  step_start_ = MPI_Wtime();
  last_progress_ = -1;
  for (size_t i = 0; i < program_.instructions.size(); ++i) {
    const Instruction& instruction = program_.instructions[i];
    // Transfers of one stream are not serialised as the simulator's streams are: MPI keeps
    // their order on a communicator and may run several at once.
    for (uint32_t d = 0; d < instruction.deps_count; ++d)
      wait_for(static_cast<size_t>(program_.dependencies[instruction.deps_begin + d]), step);
    if (record) step.start[i] = now();
    execute(i, step);
    if (record && !in_flight_[i]) step.finish[i] = now();
    progress(step);
  }
  draining_ = true;
  while (!outstanding_.empty()) wait_for(outstanding_.back(), step);
  draining_ = false;
  step.step_s = now();
  return step;
}

void RankRunner::execute(size_t index, StepMeasurement& step) {
  const Instruction& instruction = program_.instructions[index];
  const std::span<const OpRun> runs(program_.runs.data() + instruction.runs_begin, instruction.runs_count);
  switch (instruction.kind) {
    case Work::kMarker:
    case Work::kMemory: {
      if (instruction.receive < 0) return;
      const int32_t slot = instruction.receive;
      const int64_t sender_stage = programs_.sender_stage(slot, mesh_.stage(world_rank_),
                                                          static_cast<int64_t>(plan_.stages().size()));
      const int sender = mesh_.at_stage(world_rank_, sender_stage);
      const double began = now();
      for (uint32_t op : programs_.message_ops(slot)) {
        transfers_.receive(sender, programs_.message_tag(slot, op), plan_.ops()[op].bytes,
                           program_.step_labels[static_cast<size_t>(instruction.step)]);
      }
      step.receive_wait_s += now() - began;
      return;
    }
    case Work::kCompute:
      for (const OpRun& run : runs) {
        const pp_op& op = plan_.ops()[run.op];
        const double began = now();
        kernels_.run(op, run.share, run.times);
        step.compute_s[op_class_of(op)] += now() - began;
        progress(step);
      }
      return;
    case Work::kCollective: {
      auto transfer = std::make_unique<Transfer>();
      const OpRun& run = runs.front();
      const pp_op& op = plan_.ops()[run.op];
      transfer->what = &program_.labels[static_cast<size_t>(instruction.label)];
      const double began = now();
      for (uint32_t i = 0; i < std::max<uint32_t>(op.repeat, 1); ++i)
        transfers_.start_collective(op, op.bytes * run.times, instruction.on_path, *transfer);
      in_flight_[index] = std::move(transfer);
      outstanding_.push_back(index);
      if (!instruction.on_path) {
        step.issue_s += now() - began;
        return;
      }
      // A critical collective ran (blocking) to its end: what it took is exposed.
      if (instruction.owner >= 0) step.waited_s[static_cast<size_t>(instruction.owner)] += now() - began;
      wait_for(index, step);
      return;
    }
    case Work::kSend: {
      auto transfer = std::make_unique<Transfer>();
      const OpRun& run = runs.front();
      const int tag = programs_.message_tag(instruction.message, run.op);
      const double began = now();
      transfers_.start_send(mesh_.at_stage(world_rank_, instruction.peer_stage), tag, plan_.ops()[run.op].bytes,
                            *transfer);
      step.issue_s += now() - began;
      in_flight_[index] = std::move(transfer);
      outstanding_.push_back(index);
      return;
    }
  }
}

void RankRunner::wait_for(size_t index, StepMeasurement& step) {
  Transfer* transfer = in_flight_[index].get();
  if (!transfer) return;
  const Instruction& instruction = program_.instructions[index];
  // A send never holds its sender back (the receiver may be busy sending to it): its buffer stays
  // its own until it completes, at the latest when the step drains.
  if (instruction.kind == Work::kSend && !draining_) return;
  const double began = now();
  transfers_.wait(*transfer);
  const double waited = now() - began;
  if (instruction.owner >= 0) step.waited_s[static_cast<size_t>(instruction.owner)] += waited;
  if (record_) step.finish[index] = now();
  in_flight_[index].reset();
  outstanding_.erase(std::find(outstanding_.begin(), outstanding_.end(), index));
}

void RankRunner::progress(StepMeasurement& step) {
  if (outstanding_.empty()) return;
  // Often enough to keep transfers moving, not after every small kernel: each poll runs MPI's
  // progress engine, and with more ranks than cores it gives the core away.
  const double began = now();
  if (began - last_progress_ < kProgressInterval_s) return;
  last_progress_ = began;
  for (size_t k = 0; k < outstanding_.size();) {
    const size_t index = outstanding_[k];
    if (transfers_.test(*in_flight_[index])) {
      if (record_) step.finish[index] = now();
      in_flight_[index].reset();
      outstanding_.erase(outstanding_.begin() + static_cast<std::ptrdiff_t>(k));
    } else {
      ++k;
    }
  }
  step.progress_s += now() - began;
}

}  // namespace mpi_executor
