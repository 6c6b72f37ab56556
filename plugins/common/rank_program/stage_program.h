// stage_program.h: what one rank of a pipeline stage runs in one optimizer step, instruction by
// instruction, in the order it issues them. The simulate executor times these programs
// (event_engine.h), the mpi executor runs them on real ranks, the chakra exporter writes them as
// execution traces; each instruction names the plan ops it stands for (OpRun), so a consumer can
// go back to the ops' shapes and sizes.
//
// Every rank of a stage runs the same program; the plan describes one rank per stage. The
// program walks the pipeline schedule's steps for the stage (pp_schedule_step, in order) and, in
// each step, the blocks of the model chunk it runs (embedding, each layer, head; reversed for
// backward passes). A block's ops come from the plan, one scope and phase at a time:
//
//   compute ops       in the plan's list order (backward: reversed), consecutive ones merged into
//                     one instruction on the compute stream (expert ops apart: their time varies
//                     by rank under expert_imbalance)
//   param_* ops       gather parameters: issued on their axis's stream one block ahead (prefetch)
//                     when overlappable, else right before the block; the block's compute waits
//   grad_* ops        reduce weight gradients: issued after the block's compute on the axis's
//                     own reduction stream; when overlappable nothing waits for them but the
//                     optimizer (drain), else the next compute does
//   other communication, critical (PP_OVERLAP_NONE): in list position, the compute stream waits;
//                     overlappable: starts with the block, the next block waits for it
//   per-step ops      (frequency PP_PER_STEP) after the stage's last backward of the chunk that
//                     holds the block (drains), or in the tail when critical
//   STEP-scope ops    of the forward or backward phase are the pipeline's boundary transfers:
//                     point-to-point sends after the step's compute to the next (previous) virtual
//                     stage, other ops (a gather of what arrived) on the receiver before its compute
//   phase STEP ops    the tail, after every stream has drained: the optimizer update, then
//                     communication of the updated parameters
//
// Zero-bubble schedules split each backward pass: the input-gradient step (BACKWARD) runs every
// op of the backward phase but half of each GEMM's work, the weight-gradient step
// (WEIGHT_GRADIENT) the other half and the block's grad_* reductions.
//
// Memory: a forward step allocates its chunk's activations (the stage's per-layer items times
// the chunk's layers, plus the embedding's or head's when the chunk holds them), the chunk's
// last backward step (weight-gradient step under zero-bubble) frees them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "paraplan/hardware.h"
#include "paraplan/sdk.hpp"

namespace rank_program {

// A plan op an instruction runs: `share` of its work (zero-bubble steps run half of each backward
// GEMM), `times` over (the tail runs a per-layer op once for all the stage's layers, as one
// transfer `times` the size). Every one of the op's `repeat` instances is included.
struct OpRun {
  uint32_t op = 0;  // index into the plan's ops
  float share = 1;
  float times = 1;
};

enum class Work : uint8_t {
  kCompute,     // on the compute stream for `seconds`
  kCollective,  // over `axis`: starts when every simulated member of the group has reached it
  kSend,        // to the rank `peer_stage` of the pipeline axis: part of boundary message `message`
  kMemory,      // no time: `bytes` of activations allocated (> 0) or released (< 0)
  kMarker       // no time: a step's begin or end, or the barrier before the tail
};

struct Instruction {
  double seconds = 0;  // alone on its links, at full speed
  double bytes = 0;    // kMemory only
  uint32_t deps_begin = 0;  // instructions of the same rank that must finish first:
  uint32_t deps_count = 0;  // StageProgram::dependencies[deps_begin, deps_begin + deps_count)
  uint32_t runs_begin = 0;  // the plan ops it runs: StageProgram::runs[runs_begin, + runs_count);
  uint32_t runs_count = 0;  // none for markers and memory changes
  int32_t label = -1;       // StageProgram::labels
  int32_t step = -1;        // the schedule step it belongs to (index among the stage's steps); -1: the tail
  int32_t receive = -1;     // boundary message that must have arrived before it starts
  int32_t message = -1;     // kSend: the receiver's message slot (ProgramSet::message_slot)
  int32_t peer_stage = -1;  // kSend: the receiving stage
  int32_t expert_slot = -1; // expert compute: which rank of the expert group is the busiest
  int32_t path_previous = -1;  // on the rank's path: the path instruction before it
  int16_t stream = 0;       // 0 = compute; see ProgramSet::streams
  int16_t owner = -1;       // communication: the strategy that inserted it (ProgramSet::owners)
  int16_t axis = -1;        // kCollective and kSend
  uint8_t tier = 0;         // the link tier its transfer occupies
  Work kind = Work::kCompute;
  // On the rank's path: compute, critical communication and markers, each after the one before
  // (overlapped transfers run beside it). Time the path spends waiting is charged to what it
  // waited for.
  bool on_path = false;
  bool step_end = false;    // the marker that closes a schedule step
  bool delivers = false;    // kSend: the message's last send; the message has arrived when it finishes
  bool host_wait = false;   // kCompute of no op: the compute stream idle, the host issuing (host_issue.hpp)
};

struct StageProgram {
  std::vector<Instruction> instructions;
  std::vector<int32_t> dependencies;
  std::vector<OpRun> runs;
  std::vector<std::string> labels;
  std::vector<std::string> step_labels;  // per schedule step: "fwd mb3 chunk1"
  double static_bytes = 0;       // weights, gradients, optimizer state, other, runtime overhead
  double activation_bytes_per_micro_batch = 0;  // the whole stage's, all chunks
  std::vector<int32_t> next_on_stream;   // per instruction: the next one on its stream, or -1
  std::vector<int32_t> previous_on_stream;  // per instruction: the one before it on its stream, or -1
  std::vector<int32_t> first_on_stream;  // per stream: its first instruction, or -1
};

struct ProgramSet {
  std::vector<StageProgram> stages;
  std::vector<std::string> streams;  // "compute", then per axis "<axis>" and "<axis> reduce", then "host"
  std::vector<std::string> owners;   // the strategies whose communication the programs hold
  int32_t pipeline_axis = -1;  // the axis of the boundary sends; -1 with one stage
  int32_t expert_axis = -1;    // the axis of the collective right before the first expert op (the dispatch)
  int32_t message_slots = 0;   // boundary messages a rank can receive per step
  int64_t micro_batches = 1, virtual_stages = 1;
  // The pipeline boundary's point-to-point ops, in send order: [forward, backward]. A message is
  // one of each, sent by a virtual stage's step to the next (forward) or previous one (backward).
  std::vector<uint32_t> boundary_sends[2];
  std::vector<double> op_seconds;  // per plan op: one instance on the (cluster-fitted) profile

  // Message slots number a rank's incoming boundary messages: direction, micro-batch, and the
  // chunk of the receiving step.
  int32_t message_slot(bool forward, int64_t micro_batch, int64_t receiver_chunk) const {
    return static_cast<int32_t>(((forward ? 0 : 1) * micro_batches + micro_batch) * virtual_stages + receiver_chunk);
  }
  bool forward_slot(int32_t slot) const { return slot < micro_batches * virtual_stages; }
  // The stage a message for `slot` comes from, at stage `stage` of `stages`.
  int64_t sender_stage(int32_t slot, int64_t stage, int64_t stages) const {
    return forward_slot(slot) ? (stage + stages - 1) % stages : (stage + 1) % stages;
  }
  // The point-to-point ops a message for `slot` is made of, in send order.
  const std::vector<uint32_t>& message_ops(int32_t slot) const { return boundary_sends[forward_slot(slot) ? 0 : 1]; }
  // The tag sender and receiver give the message's op `op` (an exporter's comm_tag, an MPI tag).
  int32_t message_tag(int32_t slot, uint32_t op) const {
    const std::vector<uint32_t>& ops = message_ops(slot);
    const auto position = std::find(ops.begin(), ops.end(), op) - ops.begin();
    return slot * static_cast<int32_t>(ops.size()) + static_cast<int32_t>(position);
  }
};

// Fills a program's next_on_stream, previous_on_stream and first_on_stream from its instructions' streams.
void index_streams(StageProgram& program, size_t streams);

// `overhead_bytes`: memory every GPU loses to the runtime (CUDA context, NCCL buffers).
ProgramSet build_programs(const paraplan::PlanView& plan, const pp_hardware_binding_v1& hardware,
                          double overhead_bytes);

}  // namespace rank_program
