// chrome_trace.h: a timeline of stage programs (simulated, or measured on real ranks) as Chrome
// trace event JSON, which Perfetto (ui.perfetto.dev) and chrome://tracing open.
//
// Top level: "displayTimeUnit", "otherData" {"generator": "paraplan", "trace_format": 2} (the
// format's version, bumped when a field changes meaning), "traceEvents".
// One process per rank (pid = global rank, named "rank 17 (stage 2)"), one thread per
// stream it used (tid = stream index: 0 compute, then the mesh axes' streams). Events:
//   ph "M"  process_name / thread_name / *_sort_index metadata
//   ph "X"  complete events, ts and dur in microseconds: every schedule step on the compute
//           thread ("fwd mb3 chunk1"), nested in it the compute it ran ("fwd layer 12:
//           attn_norm..mlp_residual"), and every transfer on its stream's thread
//           ("all-gather fsdp layer 12 (param_all_gather)", "send_activations mb3 chunk0 to stage 1")
//   ph "C"  the counter "memory" (GB in use, 10^9 bytes as the reports print: model state, buffers, activations) at every change
#pragma once

#include <cstdint>
#include <string>

#include <span>
#include <utility>
#include <vector>

#include "stage_program.h"

namespace rank_program {

// What one rank did: when each instruction of its program started and finished (seconds from
// the step's start), and the memory in use after each change (may be empty).
struct RankTimeline {
  int64_t rank = 0;
  std::string process_name;  // "rank 17 (stage 2)"
  const StageProgram* program = nullptr;
  std::span<const double> start, finish;
  std::span<const std::pair<double, double>> memory;  // (time, bytes in use)
};

// Writes the timelines; returns the number of events written. Throws paraplan::Error when the
// file cannot be written.
uint64_t write_chrome_trace(const std::string& path, const ProgramSet& programs, std::span<const RankTimeline> ranks);

}  // namespace rank_program
