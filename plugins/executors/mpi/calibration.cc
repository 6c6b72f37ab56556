#include "calibration.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <utility>

#include "kernels.h"

namespace mpi_executor {
namespace {

constexpr double kFloatBytes = sizeof(float);
using Clock = std::chrono::steady_clock;

// Seconds from the first rank's start to the last rank's end. steady_clock is CLOCK_MONOTONIC,
// one clock for every process on the machine (and calibrate_machine() checks there is one).
double together_seconds(MPI_Comm world, Clock::time_point start, Clock::time_point end) {
  double bounds[2] = {-std::chrono::duration<double>(start.time_since_epoch()).count(),
                      std::chrono::duration<double>(end.time_since_epoch()).count()};
  MPI_Allreduce(MPI_IN_PLACE, bounds, 2, MPI_DOUBLE, MPI_MAX, world);
  return bounds[1] + bounds[0];
}

// Seconds one call of `body` takes when every rank of `world` runs it at once. A loop is timed
// from the first rank's start to the last rank's end, not per rank: with more ranks than cores
// a rank that waits for a core would otherwise start its clock late and look as fast as if it
// had the machine to itself. The best of `repeats` loops is kept, as STREAM does, because load
// from outside can only add time, while contention among the ranks is in every loop and so
// stays in the figure. Ranks with nothing to time pass a no-op and still take part, so the
// iteration count and every reduction agree across the world.
template <typename Body>
double time_together(MPI_Comm world, const CalibrationOptions& options, double loop_seconds, Body&& body) {
  body();  // warm-up: first-touch page faults, lazy connection setup
  MPI_Barrier(world);
  Clock::time_point start = Clock::now();
  body();
  const double probe = together_seconds(world, start, Clock::now());
  const double wanted = std::ceil(loop_seconds / std::max(probe, 1e-9));
  const int iterations = static_cast<int>(
      std::clamp(wanted, static_cast<double>(options.min_iterations), static_cast<double>(options.max_iterations)));

  double best = 0;
  for (int repeat = 0; repeat < options.repeats; ++repeat) {
    MPI_Barrier(world);
    start = Clock::now();
    for (int i = 0; i < iterations; ++i) body();
    const double seconds = together_seconds(world, start, Clock::now()) / iterations;
    best = repeat == 0 ? seconds : std::min(best, seconds);
  }
  return best;
}

// Values away from zero and denormals, so no operand takes a slow path.
std::vector<float> filled(size_t count, float scale) {
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i) values[i] = scale * (1.0f + static_cast<float>(i % 7) / 8.0f);
  return values;
}

// The kernels are the executor's own (kernels.h): what is timed here is what a plan runs.
std::vector<GemmTiming> measure_gemms(MPI_Comm world, const CalibrationOptions& options) {
  std::vector<GemmTiming> timings;
  Kernels kernels;
  for (int64_t size : options.gemm_sizes) {
    const size_t n = static_cast<size_t>(size);
    const double seconds =
        time_together(world, options, options.compute_seconds_per_point, [&] { kernels.gemm(n, n, n); });
    const double flops = gemm_flops(GemmSample{size, size, size, seconds});
    timings.push_back(GemmTiming{size, seconds, flops / seconds});
  }
  return timings;
}

// One head of attention as the executor runs it (Kernels::attention_head): scores = Q·Kᵀ, a pass
// that scales the scores, out = scores·V, for s queries, s keys and head dimension d. Its FLOPs
// are 4·s²·d, the cost model's count for the head's forward square.
double measure_attention(MPI_Comm world, const CalibrationOptions& options) {
  const size_t s = static_cast<size_t>(options.attention_sequence), d = static_cast<size_t>(options.attention_head_dim);
  Kernels kernels;
  return time_together(world, options, options.compute_seconds_per_point, [&] { kernels.attention_head(s, s, d); });
}

struct MemoryRates {
  double triad_bytes_per_s = 0;
  double memcpy_bytes_per_s = 0;
};

MemoryRates measure_memory(MPI_Comm world, const CalibrationOptions& options) {
  // Bytes read + written, as a plan op's bytes count them, through the executor's kernels.
  const double bytes = static_cast<double>(options.stream_array_bytes) * 3.0;
  Kernels kernels;
  MemoryRates rates;
  rates.triad_bytes_per_s =
      bytes / time_together(world, options, options.compute_seconds_per_point, [&] { kernels.stream(bytes); });
  rates.memcpy_bytes_per_s =
      bytes / time_together(world, options, options.compute_seconds_per_point, [&] { kernels.copy(bytes); });
  return rates;
}

// Elements of the buffer the cost model counts: whole floats, a multiple of the group size.
int64_t buffer_elements(int64_t bytes, int group_size) {
  const int64_t floats = std::max<int64_t>(1, (bytes + 3) / 4);
  return (floats + group_size - 1) / group_size * group_size;
}

// `total` floats in the buffer the cost model counts, `chunk` = total / group size.
void run_collective(Communication kind, const float* send, float* receive, int total, int chunk, MPI_Comm group) {
  switch (kind) {
    case Communication::kAllReduce:
      MPI_Allreduce(send, receive, total, MPI_FLOAT, MPI_SUM, group);
      return;
    case Communication::kAllGather:
      MPI_Allgather(send, chunk, MPI_FLOAT, receive, chunk, MPI_FLOAT, group);
      return;
    case Communication::kReduceScatter:
      MPI_Reduce_scatter_block(send, receive, chunk, MPI_FLOAT, MPI_SUM, group);
      return;
    case Communication::kAllToAll:
      MPI_Alltoall(send, chunk, MPI_FLOAT, receive, chunk, MPI_FLOAT, group);
      return;
    case Communication::kSend:
      return;
  }
}

void measure_collectives(MPI_Comm world, int group_size, const CalibrationOptions& options,
                         std::vector<CommunicationSample>& samples) {
  int rank = 0, world_size = 0;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &world_size);
  // Consecutive ranks form a group and all groups run at once; ranks beyond the last whole
  // group sit out but keep time with the rest.
  const bool member = rank < world_size / group_size * group_size;
  MPI_Comm group = MPI_COMM_NULL;
  MPI_Comm_split(world, member ? rank / group_size : MPI_UNDEFINED, rank, &group);

  int64_t largest = 0;
  for (int64_t bytes : options.message_bytes) largest = std::max(largest, buffer_elements(bytes, group_size));
  std::vector<float> send = filled(static_cast<size_t>(largest), 1.0f), receive(static_cast<size_t>(largest));

  for (Communication kind : {Communication::kAllReduce, Communication::kAllGather, Communication::kReduceScatter,
                             Communication::kAllToAll}) {
    for (int64_t bytes : options.message_bytes) {
      const int64_t elements = buffer_elements(bytes, group_size);
      const int total = static_cast<int>(elements), chunk = static_cast<int>(elements / group_size);
      const double seconds = time_together(world, options, options.communication_seconds_per_point, [&] {
        if (member) run_collective(kind, send.data(), receive.data(), total, chunk, group);
      });
      samples.push_back(CommunicationSample{kind, group_size, kFloatBytes * static_cast<double>(elements), seconds});
    }
  }
  if (group != MPI_COMM_NULL) MPI_Comm_free(&group);
}

// Ping-pong between ranks 2i and 2i+1, all pairs at once; a send is half a round trip.
void measure_sends(MPI_Comm world, const CalibrationOptions& options, std::vector<CommunicationSample>& samples) {
  int rank = 0, world_size = 0;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &world_size);
  const bool member = rank < world_size / 2 * 2;
  const int partner = rank ^ 1;
  int64_t largest = 1;
  for (int64_t bytes : options.message_bytes) largest = std::max(largest, bytes);
  std::vector<char> message(static_cast<size_t>(largest), 1);
  for (int64_t bytes : options.message_bytes) {
    const int count = static_cast<int>(std::max<int64_t>(bytes, 1));
    const double round_trip = time_together(world, options, options.communication_seconds_per_point, [&] {
      if (!member) return;
      if (rank % 2 == 0) {
        MPI_Send(message.data(), count, MPI_BYTE, partner, 0, world);
        MPI_Recv(message.data(), count, MPI_BYTE, partner, 0, world, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(message.data(), count, MPI_BYTE, partner, 0, world, MPI_STATUS_IGNORE);
        MPI_Send(message.data(), count, MPI_BYTE, partner, 0, world);
      }
    });
    samples.push_back(CommunicationSample{Communication::kSend, 2, static_cast<double>(count), round_trip / 2});
  }
}

std::vector<int> default_group_sizes(int world_size) {
  std::vector<int> sizes;
  for (int size = 2; size <= world_size; size *= 2) sizes.push_back(size);
  if (world_size >= 2 && sizes.back() != world_size) sizes.push_back(world_size);
  return sizes;
}

void check_options(const CalibrationOptions& options, int world_size, const std::vector<int>& group_sizes) {
  auto distinct = [](const std::vector<int64_t>& values) {
    return values.size() >= 2 && std::any_of(values.begin(), values.end(), [&](int64_t v) { return v != values[0]; });
  };
  auto fail = [](const std::string& message) { throw std::invalid_argument("calibrate: " + message); };
  if (world_size < 2) fail("needs at least 2 MPI ranks to measure communication");
  if (!distinct(options.gemm_sizes)) fail("needs at least two different GEMM sizes");
  if (!distinct(options.message_bytes)) fail("needs at least two different message sizes");
  for (int64_t size : options.gemm_sizes)
    if (size < 1 || size > 32768) fail("GEMM sizes must be 1 to 32768");
  for (int64_t bytes : options.message_bytes)
    if (bytes < 1 || bytes > (int64_t{1} << 30)) fail("message sizes must be 1 B to 1 GiB");
  for (int size : group_sizes)
    if (size < 2 || size > world_size) fail("group sizes must be 2 to the number of ranks");
  if (options.stream_array_bytes < 1024) fail("the stream arrays must be at least 1 KiB");
  if (options.attention_sequence < 1 || options.attention_sequence > 32768 || options.attention_head_dim < 1 ||
      options.attention_head_dim > 32768)
    fail("the attention shape must be 1 to 32768");
  if (options.repeats < 1 || options.min_iterations < 1 || options.max_iterations < options.min_iterations)
    fail("repeats and iterations must be >= 1, max_iterations >= min_iterations");
  if (!(options.compute_seconds_per_point > 0 && options.communication_seconds_per_point > 0))
    fail("the seconds per point must be > 0");
  if (options.name.size() > 47) fail("the profile's name must be at most 47 characters");
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm parts{};
  gmtime_r(&now, &parts);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &parts);
  return text;
}

double physical_memory_bytes() {
  return static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
}

}  // namespace

CalibrationOptions quick_calibration() {
  CalibrationOptions options;
  options.gemm_sizes = {64, 96, 128, 192, 256, 384, 512, 768, 1024};
  for (int64_t bytes = 16; bytes <= (int64_t{16} << 20); bytes *= 4) options.message_bytes.push_back(bytes);
  options.stream_array_bytes = int64_t{32} << 20;
  options.repeats = 5;
  return options;
}

CalibrationOptions thorough_calibration() {
  CalibrationOptions options;
  options.gemm_sizes = {64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048};
  for (int64_t bytes = 8; bytes <= (int64_t{64} << 20); bytes *= 2) options.message_bytes.push_back(bytes);
  options.stream_array_bytes = int64_t{128} << 20;
  options.attention_sequence = 2048;
  options.compute_seconds_per_point = 0.2;
  options.communication_seconds_per_point = 0.05;
  options.repeats = 7;
  options.max_iterations = 2000;
  return options;
}

std::string calibrate_machine(MPI_Comm world, const CalibrationOptions& options, CalibrationReport* report_out) {
  const double started = MPI_Wtime();
  int rank = 0, world_size = 0;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &world_size);
  const std::vector<int> group_sizes =
      options.group_sizes.empty() ? default_group_sizes(world_size) : options.group_sizes;
  check_options(options, world_size, group_sizes);

  // One tier called shared memory is only true if no rank is on another machine.
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int node_size = 0, all_on_one_node = 0;
  MPI_Comm_size(node, &node_size);
  MPI_Comm_free(&node);
  int here = node_size == world_size ? 1 : 0;
  MPI_Allreduce(&here, &all_on_one_node, 1, MPI_INT, MPI_MIN, world);
  if (!all_on_one_node) throw std::invalid_argument("calibrate: the ranks span several machines; run it on one");

  prepare_rank_process();  // as the executor runs its ranks (kernels.h)

  CalibrationReport report;
  report.ranks = world_size;
  report.cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  report.host = host_name();
  report.gemm = measure_gemms(world, options);
  std::vector<GemmSample> gemm_samples;
  for (const GemmTiming& timing : report.gemm)
    gemm_samples.push_back(GemmSample{timing.size, timing.size, timing.size, timing.seconds});
  report.gemm_fit = fit_gemm(gemm_samples);

  report.attention_seconds = measure_attention(world, options);
  const double s = static_cast<double>(options.attention_sequence), d = static_cast<double>(options.attention_head_dim);
  const double attention_model_flops = 4.0 * s * s * d;
  report.attention_efficiency =
      std::min(1.0, attention_model_flops / (report.attention_seconds * report.gemm_fit.peak_flops_per_s));

  const MemoryRates memory = measure_memory(world, options);
  report.memory_bandwidth_bytes_per_s = memory.triad_bytes_per_s;
  report.memcpy_bandwidth_bytes_per_s = memory.memcpy_bytes_per_s;
  report.memory_capacity_bytes = physical_memory_bytes() / world_size;

  for (int group_size : group_sizes) measure_collectives(world, group_size, options, report.communication);
  measure_sends(world, options, report.communication);
  report.communication_fits = fit_communications(report.communication);
  report.tier = fit_tier(report.communication);

  MachineFigures figures;
  figures.name = options.name;
  if (figures.name.empty()) {
    const std::string suffix = "-" + std::to_string(world_size) + "-ranks";
    figures.name = report.host.substr(0, 47 - suffix.size()) + suffix;
  }
  figures.host = report.host;
  figures.measured_at = utc_now();
  figures.ranks = world_size;
  figures.cores = report.cores;
  figures.gemm = report.gemm_fit;
  figures.attention_efficiency = report.attention_efficiency;
  char method[200];
  std::snprintf(method, sizeof(method),
                "measured as the executor runs it, Q.K^T, a scaling pass, scores.V; one head s=%lld d=%lld: %.4g ms.",
                static_cast<long long>(options.attention_sequence), static_cast<long long>(options.attention_head_dim),
                report.attention_seconds * 1e3);
  figures.attention_method = method;
  figures.memory_bandwidth_bytes_per_s = report.memory_bandwidth_bytes_per_s;
  figures.host_link_bandwidth_bytes_per_s = report.memcpy_bandwidth_bytes_per_s;
  figures.memory_capacity_bytes = report.memory_capacity_bytes;
  figures.tier = report.tier;
  figures.communications = report.communication_fits;
  // Written on every rank, so that a profile it refuses fails everywhere alike.
  std::string toml = write_profile_toml(figures);
  if (rank != 0) toml.clear();

  double wall = MPI_Wtime() - started;
  MPI_Allreduce(MPI_IN_PLACE, &wall, 1, MPI_DOUBLE, MPI_MAX, world);
  report.wall_seconds = wall;
  report.profile_toml = toml;
  if (report_out) *report_out = std::move(report);
  return toml;
}

std::string format_calibration_report(const CalibrationReport& report) {
  std::string text;
  char line[256];
  auto add = [&](int length) { text.append(line, static_cast<size_t>(std::clamp(length, 0, 255))); };
  add(std::snprintf(line, sizeof(line), "calibrated %s with %d MPI ranks on %d cores%s in %.1f s\n\n",
                    report.host.c_str(), report.ranks, report.cores,
                    report.ranks > report.cores ? " (oversubscribed: ranks share cores)" : "", report.wall_seconds));
  add(std::snprintf(line, sizeof(line), "GEMM, fp32, one thread per rank, all ranks at once\n"));
  add(std::snprintf(line, sizeof(line), "  %6s %11s %9s %15s\n", "m=n=k", "ms/GEMM", "GFLOP/s", "fit GFLOP/s"));
  for (const GemmTiming& timing : report.gemm) {
    const double flops = 2.0 * std::pow(static_cast<double>(timing.size), 3);
    add(std::snprintf(line, sizeof(line), "  %6lld %11.4f %9.2f %15.2f\n", static_cast<long long>(timing.size),
                      timing.seconds * 1e3, timing.flops_per_s / 1e9,
                      flops / gemm_model_seconds(report.gemm_fit, flops) / 1e9));
  }
  add(std::snprintf(line, sizeof(line), "  fit t = (F + F_half)/R: R = %.3f GFLOP/s, F_half = %.4g GFLOP, R^2 = %.4f\n\n",
                    report.gemm_fit.peak_flops_per_s / 1e9, report.gemm_fit.half_efficiency_flops / 1e9,
                    report.gemm_fit.r_squared));
  add(std::snprintf(line, sizeof(line), "attention (one head, Q.K^T and scores.V): %.3f ms, efficiency %.3f of R\n",
                    report.attention_seconds * 1e3, report.attention_efficiency));
  add(std::snprintf(line, sizeof(line),
                    "memory per rank, bytes read + written: triad %.3f GB/s, memcpy %.3f GB/s; capacity %.2f GB\n\n",
                    report.memory_bandwidth_bytes_per_s / 1e9, report.memcpy_bandwidth_bytes_per_s / 1e9,
                    report.memory_capacity_bytes / 1e9));
  add(std::snprintf(line, sizeof(line),
                    "communication, ring model t = steps*alpha + factor*n/B; busbw as nccl-tests at the largest size\n"));
  add(std::snprintf(line, sizeof(line), "  %-14s %3s %9s %11s %8s %9s %7s\n", "kind", "P", "alpha_us", "busbw GB/s",
                    "at KiB", "B GB/s", "R^2"));
  for (const CommunicationFit& fit : report.communication_fits) {
    add(std::snprintf(line, sizeof(line), "  %-14s %3d %9.3f %11.3f %8.0f %9.3f %7.4f\n",
                      std::string(communication_name(fit.kind)).c_str(), fit.group_size, fit.latency_s * 1e6,
                      fit.bus_bandwidth_at_largest / 1e9, fit.largest_bytes / 1024, fit.bandwidth_bytes_per_s / 1e9,
                      fit.line.r_squared));
  }
  add(std::snprintf(line, sizeof(line), "  tier: alpha = %.3f us (all sizes), B = %.3f GB/s (1 MiB and up), relative rms error %.0f%%\n",
                    report.tier.latency_s * 1e6, report.tier.bandwidth_bytes_per_s / 1e9,
                    report.tier.relative_rms_error * 100));
  return text;
}

}  // namespace mpi_executor
