#include "calibration_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <stdexcept>
#include <utility>

namespace mpi_executor {
namespace {

// Weighted least squares about the weighted means, which keeps the sums well conditioned when
// x runs to millions (bytes, FLOPs) and y to microseconds.
LineFit fit_weighted(std::span<const double> x, std::span<const double> y, std::span<const double> weight) {
  if (x.size() != y.size()) throw std::invalid_argument("line fit: x and y differ in length");
  double total_weight = 0, mean_x = 0, mean_y = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    total_weight += weight[i];
    mean_x += weight[i] * x[i];
    mean_y += weight[i] * y[i];
  }
  if (x.size() < 2 || !(total_weight > 0)) throw std::invalid_argument("line fit: needs at least two points");
  mean_x /= total_weight;
  mean_y /= total_weight;
  double spread_x = 0, covariance = 0, spread_y = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double dx = x[i] - mean_x, dy = y[i] - mean_y;
    spread_x += weight[i] * dx * dx;
    covariance += weight[i] * dx * dy;
    spread_y += weight[i] * dy * dy;
  }
  if (!(spread_x > 0)) throw std::invalid_argument("line fit: needs two distinct x values");
  LineFit fit;
  fit.slope = covariance / spread_x;
  fit.intercept = mean_y - fit.slope * mean_x;
  double residual = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double error = y[i] - (fit.intercept + fit.slope * x[i]);
    residual += weight[i] * error * error;
  }
  fit.r_squared = spread_y > 0 ? 1.0 - residual / spread_y : (residual > 0 ? 0.0 : 1.0);
  return fit;
}

std::string printf_string(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string printf_string(const char* format, ...) {
  char buffer[512];
  va_list arguments;
  va_start(arguments, format);
  const int length = std::vsnprintf(buffer, sizeof(buffer), format, arguments);
  va_end(arguments);
  return std::string(buffer, static_cast<size_t>(std::clamp(length, 0, static_cast<int>(sizeof(buffer)) - 1)));
}

// Four significant digits: more than a timing on a shared machine can vouch for. Always written
// as a TOML float, so that a value that happens to be whole still reads as the float it is.
std::string toml_number(double value, std::string_view key) {
  if (!std::isfinite(value)) throw std::invalid_argument("profile: " + std::string(key) + " is not a finite number");
  std::string text = printf_string("%.4g", value);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

std::string toml_string(std::string_view text) {
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      quoted += '\\';
      quoted += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      quoted += printf_string("\\u%04x", static_cast<unsigned>(c));
    } else {
      quoted += c;
    }
  }
  return quoted + "\"";
}

void require_positive(double value, std::string_view what) {
  if (!(value > 0) || !std::isfinite(value)) {
    throw std::invalid_argument("profile: " + std::string(what) + " must be a positive finite number");
  }
}

}  // namespace

LineFit fit_line(std::span<const double> x, std::span<const double> y) {
  std::vector<double> weight(x.size(), 1.0);
  return fit_weighted(x, y, weight);
}

LineFit fit_line_relative(std::span<const double> x, std::span<const double> y) {
  std::vector<double> weight(y.size());
  for (size_t i = 0; i < y.size(); ++i) {
    if (!(y[i] > 0)) throw std::invalid_argument("relative line fit: every y must be > 0");
    weight[i] = 1.0 / (y[i] * y[i]);
  }
  return fit_weighted(x, y, weight);
}

std::string_view communication_name(Communication kind) {
  switch (kind) {
    case Communication::kAllReduce: return "all-reduce";
    case Communication::kAllGather: return "all-gather";
    case Communication::kReduceScatter: return "reduce-scatter";
    case Communication::kAllToAll: return "all-to-all";
    case Communication::kSend: return "send";
  }
  return "?";
}

double bus_bandwidth_factor(Communication kind, int group_size) {
  const double ranks = group_size;
  switch (kind) {
    case Communication::kAllReduce: return 2.0 * (ranks - 1.0) / ranks;
    case Communication::kSend: return 1.0;
    default: return (ranks - 1.0) / ranks;
  }
}

double latency_steps(Communication kind, int group_size) {
  switch (kind) {
    case Communication::kAllReduce: return 2.0 * (group_size - 1);
    case Communication::kSend: return 1.0;
    default: return group_size - 1.0;
  }
}

CommunicationFit fit_communication(Communication kind, int group_size, std::span<const CommunicationSample> samples) {
  std::vector<double> bytes, seconds;
  CommunicationFit fit;
  fit.kind = kind;
  fit.group_size = group_size;
  for (const CommunicationSample& sample : samples) {
    if (sample.kind != kind || sample.group_size != group_size) continue;
    bytes.push_back(sample.bytes);
    seconds.push_back(sample.seconds);
    if (sample.bytes >= fit.largest_bytes) {
      fit.largest_bytes = sample.bytes;
      fit.bus_bandwidth_at_largest = bus_bandwidth_factor(kind, group_size) * sample.bytes / sample.seconds;
    }
  }
  fit.line = fit_line_relative(bytes, seconds);
  fit.latency_s = std::max(0.0, fit.line.intercept / latency_steps(kind, group_size));
  fit.bandwidth_bytes_per_s = fit.line.slope > 0 ? bus_bandwidth_factor(kind, group_size) / fit.line.slope : 0.0;
  return fit;
}

std::vector<CommunicationFit> fit_communications(std::span<const CommunicationSample> samples) {
  std::vector<std::pair<Communication, int>> seen;
  for (const CommunicationSample& sample : samples) {
    std::pair<Communication, int> key{sample.kind, sample.group_size};
    if (std::find(seen.begin(), seen.end(), key) == seen.end()) seen.push_back(key);
  }
  std::vector<CommunicationFit> fits;
  for (const auto& [kind, group_size] : seen) fits.push_back(fit_communication(kind, group_size, samples));
  return fits;
}

TierFit fit_tier(std::span<const CommunicationSample> samples) {
  // Each sample reads 1 = steps/t · α + factor·n/t · β (β = 1/B): a two-column least squares
  // without intercept, solved by its 2×2 normal equations.
  double uu = 0, uv = 0, vv = 0, u1 = 0, v1 = 0;
  for (const CommunicationSample& sample : samples) {
    if (!(sample.seconds > 0)) throw std::invalid_argument("tier fit: every time must be > 0");
    const double u = latency_steps(sample.kind, sample.group_size) / sample.seconds;
    const double v = bus_bandwidth_factor(sample.kind, sample.group_size) * sample.bytes / sample.seconds;
    uu += u * u;
    uv += u * v;
    vv += v * v;
    u1 += u;
    v1 += v;
  }
  if (!(vv > 0)) throw std::invalid_argument("tier fit: needs samples with bytes > 0");
  double alpha = 0, beta = 0;
  const double determinant = uu * vv - uv * uv;
  if (determinant > 1e-12 * uu * vv) {
    alpha = (u1 * vv - v1 * uv) / determinant;
    beta = (uu * v1 - uv * u1) / determinant;
  }
  if (!(alpha > 0)) {
    alpha = 0;
    beta = v1 / vv;
  }
  if (!(beta > 0)) throw std::invalid_argument("tier fit: time does not grow with message size");

  // B from the bandwidth regime alone: the total time of the large transfers comes out right,
  // whatever their kind. A plan's communication time is spent there, and there the kinds differ
  // most (a reduction computes on the cores as it goes: reduce-scatter ran at a third of
  // all-gather's bus bandwidth at 16 MiB on the development VM), which the relative fit over
  // every size would average away in favour of the many small, latency-bound samples.
  double large_bytes = 0, large_seconds = 0;
  for (const CommunicationSample& sample : samples) {
    if (sample.bytes < kBandwidthRegimeBytes) continue;
    large_bytes += bus_bandwidth_factor(sample.kind, sample.group_size) * sample.bytes;
    large_seconds += sample.seconds - latency_steps(sample.kind, sample.group_size) * alpha;
  }
  if (large_bytes > 0 && large_seconds > 0) beta = large_seconds / large_bytes;

  TierFit tier{alpha, 1.0 / beta, 0.0};
  double squared = 0;
  for (const CommunicationSample& sample : samples) {
    const double predicted = latency_steps(sample.kind, sample.group_size) * alpha +
                             bus_bandwidth_factor(sample.kind, sample.group_size) * sample.bytes * beta;
    const double relative = (predicted - sample.seconds) / sample.seconds;
    squared += relative * relative;
  }
  tier.relative_rms_error = std::sqrt(squared / static_cast<double>(samples.size()));
  return tier;
}

double gemm_flops(const GemmSample& sample) {
  return 2.0 * static_cast<double>(sample.m) * static_cast<double>(sample.n) * static_cast<double>(sample.k);
}

GemmFit fit_gemm(std::span<const GemmSample> samples) {
  std::vector<double> flops, seconds;
  GemmFit fit;
  for (const GemmSample& sample : samples) {
    flops.push_back(gemm_flops(sample));
    seconds.push_back(sample.seconds);
    if (sample.seconds > 0) fit.best_flops_per_s = std::max(fit.best_flops_per_s, flops.back() / sample.seconds);
  }
  LineFit line = fit_line_relative(flops, seconds);
  if (line.intercept < 0) {
    // Small GEMMs ran at least as fast as large ones (they live in cache): no fixed cost to
    // speak of. The best rate through the origin, t = b·F by relative error, minimises
    // Σ(1 - b·F/t)², so b = Σ(F/t) / Σ(F/t)².
    double sum = 0, sum_squares = 0;
    for (size_t i = 0; i < flops.size(); ++i) {
      const double rate = flops[i] / seconds[i];
      sum += rate;
      sum_squares += rate * rate;
    }
    line.intercept = 0;
    line.slope = sum / sum_squares;
  }
  if (!(line.slope > 0)) throw std::invalid_argument("GEMM fit: time does not grow with FLOPs");
  fit.peak_flops_per_s = 1.0 / line.slope;
  fit.half_efficiency_flops = line.intercept * fit.peak_flops_per_s;
  fit.r_squared = line.r_squared;  // of the line with its intercept, which says how straight it is
  return fit;
}

double gemm_model_seconds(const GemmFit& fit, double flops) {
  return (flops + fit.half_efficiency_flops) / fit.peak_flops_per_s;
}

std::string write_profile_toml(const MachineFigures& figures) {
  if (figures.name.empty() || figures.name.size() > 47) {
    throw std::invalid_argument("profile: name must be 1 to 47 characters");
  }
  if (figures.ranks < 1) throw std::invalid_argument("profile: ranks must be >= 1");
  require_positive(figures.gemm.peak_flops_per_s, "the GEMM rate");
  require_positive(figures.memory_bandwidth_bytes_per_s, "the memory bandwidth");
  require_positive(figures.memory_capacity_bytes, "the memory capacity");
  require_positive(figures.tier.bandwidth_bytes_per_s, "the tier bandwidth");
  if (!(figures.attention_efficiency > 0 && figures.attention_efficiency <= 1)) {
    throw std::invalid_argument("profile: attention efficiency must be in (0, 1]");
  }

  const double tflops = figures.gemm.peak_flops_per_s / 1e12;
  const double gflops = figures.gemm.peak_flops_per_s / 1e9;
  const double half_gflop = figures.gemm.half_efficiency_flops / 1e9;
  std::string text;
  text += "# Measured by `paraplan calibrate` on " + figures.host + " at " + figures.measured_at + " with " +
          std::to_string(figures.ranks) + " MPI ranks.\n";
  if (figures.cores > 0 && figures.ranks > figures.cores) {
    text += "# Oversubscribed: " + std::to_string(figures.ranks) + " ranks on " + std::to_string(figures.cores) +
            " cores, so each rank's figures are its share of a core.\n";
  }
  text += "# One \"GPU\" is one rank: a CPU process running single-threaded fp32 OpenBLAS GEMMs. All ranks\n"
          "# were measured at once, sharing the machine's cores and memory as they do when executing.\n#\n";
  text += printf_string("# GEMM: t = (F + F_half) / R with R = %.4g GFLOP/s per rank, F_half = %.4g GFLOP (R^2 %.4f);\n",
                        gflops, half_gflop, figures.gemm.r_squared);
  text += printf_string("#   the fastest size reached %.4g GFLOP/s.\n", figures.gemm.best_flops_per_s / 1e9);
  text += "# Attention: " + figures.attention_method + "\n";
  text += printf_string("# Memory, bytes read + written: triad %.4g GB/s per rank; memcpy %.4g GB/s per rank.\n",
                        figures.memory_bandwidth_bytes_per_s / 1e9, figures.host_link_bandwidth_bytes_per_s / 1e9);
  text += printf_string("# Tier: one ring alpha-beta model for every transfer below: alpha %.4g us (fitted over\n"
                        "#   all of them), B %.4g GB/s (their total time from 1 MiB up), relative rms error %.0f%%.\n",
                        figures.tier.latency_s * 1e6, figures.tier.bandwidth_bytes_per_s / 1e9,
                        figures.tier.relative_rms_error * 100);
  if (!figures.communications.empty()) {
    text += "#   per kind and group size: t = a + b*n, alpha = a/steps, B = busbw factor/b\n";
    text += "#   busbw_gb_s is nccl-tests' bus bandwidth at the largest size, at_kib\n";
    text += printf_string("#   %-14s %3s %9s %9s %11s %8s %6s\n", "kind", "P", "alpha_us", "B_gb_s", "busbw_gb_s",
                          "at_kib", "R^2");
    for (const CommunicationFit& fit : figures.communications) {
      text += printf_string("#   %-14s %3d %9.3g %9.4g %11.4g %8.0f %6.3f\n",
                            std::string(communication_name(fit.kind)).c_str(), fit.group_size, fit.latency_s * 1e6,
                            fit.bandwidth_bytes_per_s / 1e9, fit.bus_bandwidth_at_largest / 1e9,
                            fit.largest_bytes / 1024, fit.line.r_squared);
    }
  }
  text += "\n";

  text += "name = " + toml_string(figures.name) + "\n";
  text += "gpus_per_node = " + std::to_string(figures.ranks) + "        # one per MPI rank\n\n";

  const std::string peak = toml_number(tflops, "compute");
  text += "[compute]                # the fitted fp32 rate R: every dtype runs as fp32 GEMMs here\n";
  text += "fp32_tflops = " + peak + "\n";
  text += "tf32_tflops = " + peak + "\n";
  text += "bf16_tflops = " + peak + "\n";
  text += "fp16_tflops = " + peak + "\n";
  text += "fp8_tflops = 0.0         # none: FP8 plans are priced at the bf16 rate\n\n";

  text += "[memory]\n";
  text += "capacity_gb = " + toml_number(figures.memory_capacity_bytes / 1e9, "memory.capacity_gb") +
          "    # physical memory / ranks\n";
  text += "bandwidth_gb_s = " + toml_number(figures.memory_bandwidth_bytes_per_s / 1e9, "memory.bandwidth_gb_s") +
          "    # triad, bytes read + written, all ranks at once\n";
  text += "efficiency = 1.0         # the bandwidth above is already the achieved rate\n\n";

  if (figures.host_link_bandwidth_bytes_per_s > 0) {
    text += "[host_link]              # offload is a memcpy within the same memory; read + written\n";
    text += "bandwidth_gb_s = " +
            toml_number(figures.host_link_bandwidth_bytes_per_s / 1e9, "host_link.bandwidth_gb_s") + "\n\n";
  }

  text += "[gemm]                   # efficiency = F / (F + F_half): the curve the timings fit\n";
  text += "efficiency_max = 1.0\n";
  text += "half_efficiency_gflop = " + toml_number(half_gflop, "gemm.half_efficiency_gflop") + "\n\n";

  text += "[attention]\n";
  text += "efficiency = " + toml_number(figures.attention_efficiency, "attention.efficiency") + "\n\n";

  text += "[overlap]                # not measured by calibrate: 0 prices overlap as free\n";
  text += "compute_slowdown = 0\n\n";

  text += "[fleet]                  # not measured by calibrate: 0 prices the ranks as identical\n";
  text += "speed_variation = 0\n\n";

  text += "[[tiers]]                # every rank talks to every other through shared memory\n";
  text += "name = \"shared-memory\"\n";
  text += "domain_size = 0          # the only tier, so the outermost: unbounded\n";
  text += "bandwidth_gb_s = " + toml_number(figures.tier.bandwidth_bytes_per_s / 1e9, "tiers[0].bandwidth_gb_s") + "\n";
  text += "latency_us = " + toml_number(figures.tier.latency_s * 1e6, "tiers[0].latency_us") + "\n";
  text += "efficiency = 1.0         # B is fitted to bus bandwidth as measured\n";
  return text;
}

}  // namespace mpi_executor
