// chakra_trace.h: what each pipeline stage's ranks run in one optimizer step, as Chakra nodes
// before they are given ranks: compute runs, collectives over a mesh axis, point-to-point
// sends and receives to a neighbouring stage, each with the nodes it waits for.
//
// Every rank of a stage runs the same program (the plan describes one rank per stage); only the
// communicator group of a collective and the peer of a send or receive differ by rank, so the
// exporter builds one StageTrace per stage and writes it once per rank (chakra.cc).
//
// The walk follows the pipeline schedule's steps of the stage (pp_schedule_step) and, in each
// step, the blocks of the model chunk it runs (embedding, each layer, head; reversed for
// backward passes), as the simulate executor does (plugins/executors/simulate/stage_program.h):
//   - consecutive compute ops of a block merge into one COMP node (merge_compute), split where
//     recomputation or expert ops start or stop;
//   - a critical collective (PP_OVERLAP_NONE) sits on the rank's path: it waits for the node
//     before it and the next node waits for it;
//   - an overlappable collective waits for the path node before it and runs beside the path:
//     param_* gathers are issued one block ahead (prefetch) and the block's first node waits for
//     them; grad_* reductions and per-step reductions are waited for only by the optimizer tail;
//     other overlappable ones are joined by the node after the block;
//   - STEP-scope boundary ops: a receive from the upstream stage before the step's compute, a
//     send to the downstream stage after it (tag = direction, micro-batch, chunk, op);
//   - the tail (phase STEP, and per-step ops that cannot overlap) after everything else.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "paraplan/hardware.h"
#include "paraplan/sdk.hpp"

namespace chakra_export {

enum class NodeKind : uint8_t { kCompute, kCollective, kSend, kRecv };

struct TraceNode {
  NodeKind kind = NodeKind::kCompute;
  std::string name;
  double seconds = 0;  // priced by paraplan::cost::op_time, as every executor does
  double flops = 0;    // compute: floating-point operations (Chakra's num_ops)
  double bytes = 0;    // communication: the buffer (Chakra's comm_size)
  pp_collective collective = PP_COLLECTIVE_NONE;
  int32_t axis = -1;        // collective: the mesh axis of its group
  int32_t peer_stage = -1;  // send / receive: the other pipeline stage
  int32_t tag = 0;          // send / receive: matches a send with its receive
  std::vector<uint32_t> deps;  // ids (indices) of the nodes it waits for
};

struct StageTrace {
  std::vector<TraceNode> nodes;
};

struct TraceOptions {
  bool merge_compute = true;
};

struct TraceSet {
  std::vector<StageTrace> stages;
  int32_t pipeline_axis = -1;           // the axis of the boundary sends; -1 with one stage
  std::vector<std::string> unexpressed;  // what the traces approximate, one line each
};

TraceSet build_traces(const paraplan::PlanView& plan, const pp_hardware_binding_v1& hardware,
                      const TraceOptions& options);

}  // namespace chakra_export
