// kernels.h: the plan's compute ops run for real on this CPU rank, fp32 through OpenBLAS.
//
// What each op kind runs (the same work the cost model prices, so a calibrated profile predicts it):
//   GEMM       `count` times: its flops over 2·m·n·k (a backward op carries 2, dgrad and wgrad)
//              whole (m x k)·(k x n) products, plus one narrower product for a fraction left
//              over; `share` (a zero-bubble half) narrows n.
//   ATTENTION  per head (`count`): scores = Q·Kᵀ (m x k)·(k x n'), then out = scores·V
//              (m x n')·(n' x k), n' chosen so that 4·m·n'·k·heads equals the op's flops (a causal
//              mask halves the square; backward carries more): the flash-attention work as GEMMs.
//   MEMORY     a streaming triad z = x + a·y over the op's bytes (read two, write one).
//   host copy  memcpy of the op's bytes (there is no separate host memory on a CPU rank).
// The plan's precision is not emulated: every op computes in fp32, whatever its dtype.
#pragma once

#include <cstddef>
#include <vector>

#include "paraplan/plan.h"

namespace mpi_executor {

// Scratch buffers a rank reuses for every op; they grow to the largest op it has run.
class Kernels {
 public:
  // One instance of the op's work times `share` (and `times`, the tail's per-layer multiplicity).
  void run(const pp_op& op, double share, double times);

  void gemm(size_t m, size_t n, size_t k);
  void attention_head(size_t m, size_t n, size_t k);
  void stream(double bytes);
  void copy(double bytes);

 private:
  float* scratch(std::vector<float>& buffer, size_t elements);
  std::vector<float> a_, b_, c_;
};

// A rank process as the executor and the calibration run it: OpenBLAS on one thread (ranks
// already occupy the cores), and freed memory kept for reuse. Without the latter every large
// buffer (ours, and the temporaries MPI's reductions allocate per call) is a fresh mmap that
// page-faults through on every use: a 64 MiB reduce-scatter on two ranks took 480 ms instead of
// 26 ms on the development VM. A GPU framework's caching allocator does the same.
void prepare_rank_process();

}  // namespace mpi_executor
