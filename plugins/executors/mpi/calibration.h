// calibration.h: measures this machine as the MPI executor uses it and writes a hardware profile.
//
// `paraplan calibrate` runs this on N MPI ranks. Each rank stands for one GPU: a CPU process that
// computes fp32 GEMMs with OpenBLAS on one thread. Every measurement runs on all ranks at once,
// because when a plan executes they share the machine's cores and memory bandwidth, and a figure
// taken on an idle machine would promise the planner more than it can have. The method follows
// the GEMM benchmarks and nccl-tests:
//
//   GEMM        square GEMMs from 64³ up to the plateau (Kernels::gemm); seconds per GEMM on
//               the slowest rank.
//   Attention   one head as the executor runs it (kernels.h): Q·Kᵀ, a scaling pass, scores·V;
//               the efficiency is its 4·s²·d FLOPs over the time and the fitted GEMM rate.
//   Memory      the executor's triad (Kernels::stream) on arrays far larger than the caches,
//               bytes read + written (STREAM's count, and a memory op's); its memcpy
//               (Kernels::copy) for the host link, also read + written.
//   Collectives MPI_Allreduce, MPI_Allgather, MPI_Reduce_scatter_block and MPI_Alltoall on
//               MPI_FLOAT in groups of 2, 4, ... and the world (MPI_Comm_split, consecutive
//               ranks, all groups at once), message sizes from bytes to MiB, through the
//               blocking calls the executor uses for critical collectives (Open MPI runs the
//               non-blocking forms through libnbc, measured 2-5x slower at MiB sizes here); a
//               ping-pong between rank pairs for point-to-point sends. One tier,
//               "shared-memory", gets one α and B for all of them (calibration_fit.h says how).
//   Timing      one warm-up call; a probe call decides how many iterations fill the per-point
//               time budget (the same count on every rank); then `repeats` timed loops, each
//               from the first rank's start to the last rank's end (so ranks waiting for a core
//               count), and the best of those (other load on the machine only adds time).
//   Process     set up as the executor sets up its ranks (prepare_rank_process, kernels.h):
//               OpenBLAS on one thread, freed memory kept so MPI temporaries do not page-fault.
//   Kernels     the executor's own (Kernels: gemm, attention_head, stream, copy).
// calibration_fit.h turns the timings into the cost model's parameters and the TOML text.
//
//   CalibrationReport report;
//   std::string toml = calibrate_machine(MPI_COMM_WORLD, quick_calibration(), &report);
//   if (rank == 0) { std::fputs(format_calibration_report(report).c_str(), stdout); write(toml); }
//
// Every rank of `world` must call calibrate_machine(), and all must run on one machine (checked).
#pragma once

#include <mpi.h>  // the C API only: the build sets MPI_CXX_SKIP_MPICXX

#include <cstdint>
#include <string>
#include <vector>

#include "calibration_fit.h"

namespace mpi_executor {

struct CalibrationOptions {
  std::vector<int64_t> gemm_sizes;     // m = n = k of each GEMM timed
  std::vector<int64_t> message_bytes;  // collective and send sizes (rounded up to whole floats per rank)
  std::vector<int> group_sizes;        // empty: 2, 4, 8, ... up to the world, and the world itself
  int64_t stream_array_bytes = 0;      // each of the triad's three arrays, per rank
  int64_t attention_sequence = 1024;
  int64_t attention_head_dim = 128;
  // The budget of one timed loop. Compute loops run longer than the scheduler's time slice
  // (several ms), so that with more ranks than cores every rank gets its fair share of one
  // loop instead of some finishing theirs alone and busy-polling in MPI beside the others.
  double compute_seconds_per_point = 0.05;
  double communication_seconds_per_point = 0.005;
  int repeats = 3;                     // timed loops per point; the best is kept
  int min_iterations = 2;
  int max_iterations = 200;
  std::string name;                    // the profile's name; empty: "<host>-<N>-ranks"
};

// About 5-10 s at 2-4 ranks on two cores: GEMMs to 1024³, messages 16 B to 16 MiB.
CalibrationOptions quick_calibration();

// Minutes: GEMMs to 2048³, messages to 64 MiB, larger arrays, longer loops, more repeats.
CalibrationOptions thorough_calibration();

struct GemmTiming {
  int64_t size = 0;  // m = n = k
  double seconds = 0;
  double flops_per_s = 0;
};

// Everything measured and fitted; the same on every rank (timings are reduced over the world).
struct CalibrationReport {
  int ranks = 0;
  int cores = 0;  // online processors: fewer than ranks means the ranks time-share them
  std::string host;
  double wall_seconds = 0;
  std::vector<GemmTiming> gemm;
  GemmFit gemm_fit;
  double attention_seconds = 0;  // one head: Q·Kᵀ, scaling, scores·V
  double attention_efficiency = 0;
  double memory_bandwidth_bytes_per_s = 0;
  double memcpy_bandwidth_bytes_per_s = 0;
  double memory_capacity_bytes = 0;  // per rank
  std::vector<CommunicationSample> communication;
  std::vector<CommunicationFit> communication_fits;
  TierFit tier;
  std::string profile_toml;  // rank 0 only
};

// Measures, fits, and returns the profile's TOML text on rank 0 (empty on the other ranks).
// Throws std::invalid_argument (on every rank alike) for options that cannot be measured or
// timings that cannot be fitted.
std::string calibrate_machine(MPI_Comm world, const CalibrationOptions& options, CalibrationReport* report = nullptr);

// The report as tables for a terminal: GEMM rates per size, memory, and per collective and
// group size α, bus bandwidth at the largest size and the fitted bandwidth.
std::string format_calibration_report(const CalibrationReport& report);

}  // namespace mpi_executor
