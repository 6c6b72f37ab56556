// calibration_fit.h: turns calibration timings into the cost model's parameters and a profile.
//
// `paraplan calibrate` (calibration.h) times GEMMs, a streaming kernel and MPI collectives on
// this machine; this file is the arithmetic that follows, with no MPI in it, so that it can be
// tested on numbers worked out by hand. Each fit answers for a formula of
// paraplan/cost_model.hpp, so that the profile predicts exactly what was measured:
//
//   GEMM  t = (F + F_half) / R for F = 2mnk FLOPs: the cost model's F / (peak · max · F/(F+F_half))
//         with max = 1. A line t = a + b·F gives R = 1/b and F_half = a·R.
//   Ring collectives on P ranks, n bytes (Thakur, Rabenseifner and Gropp 2005):
//         t = steps·α + factor·n / B, steps = P-1 (all-reduce 2(P-1)), factor = the nccl-tests
//         bus-bandwidth factor (all-reduce 2(P-1)/P; all-gather, reduce-scatter, all-to-all
//         (P-1)/P). A line t = a + b·n per (kind, P) gives α = a/steps and B = factor/b.
//         Point-to-point sends are t = α + n/B: steps 1, factor 1.
//   The tier: one α and one B for all of them, fitted jointly (fit_tier()).
//
// Timings span four or more decades (a 64³ GEMM and a 1024³ one; 16 B and 4 MiB messages), so
// the lines are fitted by relative error (weights 1/t²): an ordinary fit would let the largest
// points set the intercept, whose small absolute value is what the small points measure.
//
//   LineFit line = fit_line_relative(bytes, seconds);
//   CommunicationFit fit = fit_communication(Communication::kAllReduce, 4, samples);   // fit.latency_s = α
//   std::string toml = write_profile_toml(figures);   // hardware/toml/profile_reader.cc reads it
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mpi_executor {

// y = intercept + slope·x; r_squared under the fit's own weights (1 for points on a line).
struct LineFit {
  double intercept = 0;
  double slope = 0;
  double r_squared = 0;
};

// Ordinary least squares. Throws std::invalid_argument unless there are two distinct x.
LineFit fit_line(std::span<const double> x, std::span<const double> y);

// Least squares on relative residuals (y_i - fit_i) / y_i; every y must be > 0.
LineFit fit_line_relative(std::span<const double> x, std::span<const double> y);

// What was timed: the four collectives the plans use, and a point-to-point send (PP).
enum class Communication { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kSend };

std::string_view communication_name(Communication kind);  // "all-reduce", ..., "send"

// nccl-tests' bus-bandwidth factor: busbw = factor · n / t. 1 for a send.
double bus_bandwidth_factor(Communication kind, int group_size);

// Messages in the ring algorithm's critical path: what α is multiplied by.
double latency_steps(Communication kind, int group_size);

// One timing: `bytes` is the buffer the cost model counts (all-gather: the gathered result;
// reduce-scatter: the full input; all-to-all: one rank's send buffer; all-reduce and send: the
// message), `seconds` one operation on the slowest rank.
struct CommunicationSample {
  Communication kind = Communication::kAllReduce;
  int group_size = 2;
  double bytes = 0;
  double seconds = 0;
};

// The ring model fitted to one (kind, group size).
struct CommunicationFit {
  Communication kind = Communication::kAllReduce;
  int group_size = 2;
  LineFit line;                        // seconds against bytes
  double latency_s = 0;                // α; 0 when the intercept came out negative
  double bandwidth_bytes_per_s = 0;    // B; 0 when time did not grow with size
  double largest_bytes = 0;
  double bus_bandwidth_at_largest = 0; // bytes/s, as nccl-tests prints busbw
};

// Fits the samples of one (kind, group size); others in `samples` are ignored.
CommunicationFit fit_communication(Communication kind, int group_size, std::span<const CommunicationSample> samples);

// One fit per (kind, group size) present, in order of first appearance.
std::vector<CommunicationFit> fit_communications(std::span<const CommunicationSample> samples);

// The single tier that prices every measured transfer.
struct TierFit {
  double latency_s = 0;
  double bandwidth_bytes_per_s = 0;
  double relative_rms_error = 0;  // of the tier's predictions over all samples
};

// α and B minimising the relative error of steps·α + factor·n/B over all samples at once. One
// tier has to price every collective a plan issues, at every group size, so the parameters are
// chosen for exactly that, rather than as a median of per-fit values that no single formula was
// checked against; relative weighting keeps any one kind or size from dominating. A negative α
// (time flat at small sizes) is pinned to 0 and B refitted. When samples of at least
// kBandwidthRegimeBytes exist, B is then set so that their total time is right (Σ factor·n over
// Σ (t − steps·α)): plans spend their communication time in large transfers. Throws
// std::invalid_argument when the samples cannot determine a positive B.
inline constexpr double kBandwidthRegimeBytes = 1 << 20;
TierFit fit_tier(std::span<const CommunicationSample> samples);

// One GEMM timing: m×k by k×n, `seconds` per GEMM on the slowest rank.
struct GemmSample {
  int64_t m = 0, n = 0, k = 0;
  double seconds = 0;
};

double gemm_flops(const GemmSample& sample);  // 2mnk

struct GemmFit {
  double peak_flops_per_s = 0;       // R
  double half_efficiency_flops = 0;  // F_half: a GEMM of this size runs at R/2
  double r_squared = 0;
  double best_flops_per_s = 0;       // the fastest rate any sample reached
};

GemmFit fit_gemm(std::span<const GemmSample> samples);

// Seconds the fitted curve predicts for `flops`: what the cost model will charge.
double gemm_model_seconds(const GemmFit& fit, double flops);

// Everything a profile says, in SI units, plus what its comment header reports.
struct MachineFigures {
  std::string name;         // the profile's name, 1-47 characters
  std::string host;         // for the comment
  std::string measured_at;  // e.g. "2026-11-30T14:02:11Z"
  int ranks = 1;            // gpus_per_node: one "GPU" per MPI rank
  int cores = 0;            // for the comment; 0 = unknown
  GemmFit gemm;
  double attention_efficiency = 1;  // in (0, 1]
  std::string attention_method;     // one line saying how it was obtained
  double memory_bandwidth_bytes_per_s = 0;
  double host_link_bandwidth_bytes_per_s = 0;
  double memory_capacity_bytes = 0;  // per rank
  TierFit tier;
  std::vector<CommunicationFit> communications;  // reported in the comment only
};

// The TOML text of the profile (docs/hardware.md, "TOML profile format"): peak = R for fp32,
// tf32, bf16 and fp16 (the executor computes in fp32 whatever dtype a plan names; fp8 = 0 makes
// the cost model fall back to bf16), gemm.efficiency_max = 1 with F_half, efficiencies 1 (the
// measured figures are already achieved rates), and one unbounded tier "shared-memory".
std::string write_profile_toml(const MachineFigures& figures);

}  // namespace mpi_executor
