#include "finish_windows.h"

#include <algorithm>
#include <bit>
#include <string>

#include "paraplan/sdk.hpp"

namespace simulate {

using rank_program::Instruction;
using rank_program::StageProgram;

FinishWindows finish_windows(const StageProgram& program, size_t streams) {
  const std::vector<Instruction>& instructions = program.instructions;
  const size_t n = instructions.size();
  FinishWindows windows;
  windows.position.resize(n);
  std::vector<int32_t> length(streams, 0);
  for (size_t i = 0; i < n; ++i) windows.position[i] = length[static_cast<size_t>(instructions[i].stream)]++;

  // Who waits for each instruction through a dependency (stream order aside), as one array.
  std::vector<uint32_t> first_dependent(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    const Instruction& instruction = instructions[i];
    for (uint32_t d = 0; d < instruction.deps_count; ++d) {
      const int32_t dep = program.dependencies[instruction.deps_begin + d];
      if (dep < 0 || static_cast<size_t>(dep) >= i)
        throw paraplan::Error(PP_ERROR_INTERNAL, "simulate: instruction " + std::to_string(i) +
                                                     " depends on instruction " + std::to_string(dep) +
                                                     ", which is not issued before it");
      ++first_dependent[static_cast<size_t>(dep) + 1];
    }
  }
  for (size_t i = 0; i < n; ++i) first_dependent[i + 1] += first_dependent[i];
  std::vector<int32_t> dependents(first_dependent[n]);
  std::vector<uint32_t> filled(first_dependent.begin(), first_dependent.end() - 1);
  for (size_t i = 0; i < n; ++i) {
    const Instruction& instruction = instructions[i];
    for (uint32_t d = 0; d < instruction.deps_count; ++d)
      dependents[filled[static_cast<size_t>(program.dependencies[instruction.deps_begin + d])]++] = static_cast<int32_t>(i);
  }

  // reach(i, s): the position of stream s's first instruction that waits for i, directly or
  // through others; every edge points forward, so one backward sweep settles it.
  std::vector<int32_t> reach(n * streams);
  for (size_t i = n; i-- > 0;) {
    int32_t* mine = &reach[i * streams];
    std::copy(length.begin(), length.end(), mine);
    auto absorb = [&](int32_t j) {
      const int32_t* theirs = &reach[static_cast<size_t>(j) * streams];
      for (size_t s = 0; s < streams; ++s) mine[s] = std::min(mine[s], theirs[s]);
      const size_t stream = static_cast<size_t>(instructions[static_cast<size_t>(j)].stream);
      mine[stream] = std::min(mine[stream], windows.position[static_cast<size_t>(j)]);
    };
    if (program.next_on_stream[i] >= 0) absorb(program.next_on_stream[i]);
    for (uint32_t k = first_dependent[i]; k < first_dependent[i + 1]; ++k) absorb(dependents[k]);
  }

  // The finish times a path instruction reads when it starts (event_engine.cc, charge_wait).
  std::vector<int32_t> needed(streams, 1);
  for (size_t i = 0; i < n; ++i) {
    const Instruction& instruction = instructions[i];
    if (!instruction.on_path) continue;
    auto read = [&](int32_t d) {
      if (d < 0) return;
      const size_t stream = static_cast<size_t>(instructions[static_cast<size_t>(d)].stream);
      int32_t completed = reach[i * streams + stream];
      if (stream == static_cast<size_t>(instruction.stream))  // i itself is running
        completed = std::min(completed, windows.position[i]);
      needed[stream] = std::max(needed[stream], completed - windows.position[static_cast<size_t>(d)]);
    };
    read(instruction.path_previous);
    read(program.previous_on_stream[i]);
    for (uint32_t d = 0; d < instruction.deps_count; ++d) read(program.dependencies[instruction.deps_begin + d]);
  }
  windows.offset.resize(streams);
  windows.mask.resize(streams);
  for (size_t s = 0; s < streams; ++s) {
    const uint32_t size = std::bit_ceil(static_cast<uint32_t>(needed[s]));
    windows.offset[s] = windows.block;
    windows.mask[s] = size - 1;
    windows.block += size;
  }
  return windows;
}

}  // namespace simulate
