// finish_windows.h: how many recent finish times each stream of a stage program must keep, so
// that a simulated rank's memory is bounded by its program's structure, not by its length.
//
// Streams run in issue order, so an instruction has finished exactly when its stream has
// completed more instructions than its position on the stream: readiness needs one count per
// stream. Finish times themselves are read only when a path instruction starts, to charge what
// it waited for (the path instruction before it, its inputs, its stream's previous instruction).
// Each stream keeps its last `window` finish times in a ring, indexed by position.
//
// The window is exact, not a guess. When instruction i starts, no instruction on stream s that
// transitively waits for i (stream order and dependencies) has started, so stream s has
// completed at most reach(i, s) instructions, the position of the first such one (the stream's
// length when none waits for i). A finish time i reads, of instruction d on s, is therefore
// still in a ring of reach(i, s) - position(d) entries. The window is the largest of these over
// every read, rounded up to a power of two.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "stage_program.h"

namespace simulate {

struct FinishWindows {
  std::vector<int32_t> position;  // per instruction: how many instructions precede it on its stream
  std::vector<uint32_t> offset;   // per stream: where its ring starts in a rank's block
  std::vector<uint32_t> mask;     // per stream: its ring's size - 1 (sizes are powers of two)
  uint32_t block = 0;             // finish times a rank keeps, all streams together

  // Where instruction i's finish time sits in a rank's block.
  uint32_t slot(const rank_program::Instruction& instruction, int32_t i) const {
    const size_t stream = static_cast<size_t>(instruction.stream);
    return offset[stream] + (static_cast<uint32_t>(position[static_cast<size_t>(i)]) & mask[stream]);
  }
};

// `program` must have its streams indexed (index_streams); throws paraplan::Error when an
// instruction depends on a later one (the programs are built in issue order, so never).
FinishWindows finish_windows(const rank_program::StageProgram& program, size_t streams);

}  // namespace simulate
