// chakra_trace.h: what each pipeline stage's ranks run in one optimizer step, as Chakra nodes
// before they are given ranks: compute runs, collectives over a mesh axis, point-to-point
// sends and receives to a neighbouring stage, each with the nodes it waits for.
//
// Every rank of a stage runs the same program (the plan describes one rank per stage); only the
// communicator group of a collective and the peer of a send or receive differ by rank, so the
// exporter builds one StageTrace per stage and writes it once per rank (chakra.cc).
//
// The nodes are the stage programs the simulate executor times (rank_program/stage_program.h:
// schedule steps, blocks, prefetched gathers, drained reductions, the tail), translated:
//   - a compute instruction is one COMP node (or, without merge_compute, one per plan op);
//   - a collective is one node per instance of its op (`repeat`), one after the other;
//   - a boundary send is a SEND node; a step that waits for a message starts with one RECV node
//     per point-to-point op of the message (tag = message slot and op, as the sender numbers it);
//   - markers and memory changes have no node: whoever waited for them waits for what they
//     waited for. Dependencies are the programs' own (issue order on the rank's path, overlapped
//     transfers beside it).
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
