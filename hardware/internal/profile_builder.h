// hardware/internal/profile_builder.h: a hardware profile written in datasheet units.
//
// Every bundled profile and the TOML reader describe a GPU as a ProfileSpec, in the units a
// datasheet uses (TFLOP/s, GB, GB/s, microseconds). build_profile() converts it to the SI units
// of the ABI struct pp_hardware_profile. check_profile() says once what a valid profile is: the
// bundled profiles assert it at compile time, and the TOML reader reports its verdict with the
// file position of the offending key; it names each field by its TOML key (docs/hardware.md).
//
//   constexpr TierSpec kTiers[] = {
//       {.name = "nvlink", .domain_size = 8, .bandwidth_gb_s = 450, .latency_us = 2, .efficiency = 0.8},
//       {.name = "infiniband", .domain_size = 0, .bandwidth_gb_s = gbit_s_to_gb_s(400), ...}};
//   constexpr ProfileSpec kSpec{.name = "h100-sxm", ..., .tiers = kTiers};
//   static_assert(check_profile(kSpec).ok());
//   pp_hardware_profile profile = build_profile(kSpec);
#ifndef PARAPLAN_HARDWARE_INTERNAL_PROFILE_BUILDER_H
#define PARAPLAN_HARDWARE_INTERNAL_PROFILE_BUILDER_H

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "paraplan/sdk.hpp"

namespace paraplan::hardware {

// Dense peak throughput of one GPU in TFLOP/s, without 2:4 structured sparsity (datasheets
// print the sparse figure for tensor cores; halve it). 0 means the GPU has no such datatype.
struct DenseTflops {
  double fp32 = 0;
  double tf32 = 0;
  double bf16 = 0;
  double fp16 = 0;
  double fp8 = 0;
  double mxfp8 = 0;  // block-scaled FP8 (Blackwell's tensor cores run it at the FP8 rate)
  double nvfp4 = 0;
};

// One level of the interconnect, innermost first.
struct TierSpec {
  std::string_view name;
  int64_t domain_size = 0;    // GPUs inside one domain; 0 = unbounded (the scale-out network)
  double bandwidth_gb_s = 0;  // GB/s per GPU and per direction
  double latency_us = 0;      // per message: the alpha of the alpha-beta model
  double efficiency = 0;      // achievable fraction of bandwidth_gb_s (nccl-tests bus bandwidth)
};

struct ProfileSpec {
  std::string_view name;
  int64_t gpus_per_node = 0;
  DenseTflops tflops;
  double memory_gb = 0;              // HBM per GPU, 10^9 bytes
  double memory_bandwidth_gb_s = 0;  // HBM per GPU, GB/s
  double memory_efficiency = 0;
  // GPU <-> CPU memory (PCIe or NVLink-C2C), GB/s per GPU and per direction; 0 = not declared,
  // and then plans that offload to CPU memory cannot be priced.
  double host_link_bandwidth_gb_s = 0;
  double gemm_efficiency_max = 0;
  // GEMM size in GFLOP at which a GEMM reaches half of gemm_efficiency_max; when absent it is
  // derived from kGemmFixedOverheadUs (see gemm_half_efficiency_gflop()).
  std::optional<double> gemm_half_efficiency_gflop;
  // The plateau of FP8 GEMMs, a smaller fraction of their peak; absent: gemm_efficiency_max.
  std::optional<double> gemm_efficiency_max_fp8;
  // The plateau of NVFP4 GEMMs; absent: the FP8 plateau.
  std::optional<double> gemm_efficiency_max_fp4;
  double attention_efficiency = 0;
  // FlashAttention-2-class kernels (pp_attention_kernel FLASH2) on the same FLOPs; absent: the
  // tuned kernel's rate (Ampere, where FlashAttention-2 is the tuned kernel).
  std::optional<double> attention_efficiency_flash2;
  std::span<const TierSpec> tiers;
  // Host time to issue one op of the plan eagerly, in us; absent: kHostOpOverheadUs.
  std::optional<double> host_op_overhead_us;
  // How much slower compute runs beside overlapped communication; absent:
  // kOverlapComputeSlowdown.
  std::optional<double> overlap_compute_slowdown;
  // How much one GPU's sustained speed varies across a fleet of the part (a coefficient of
  // variation); absent: kSpeedVariation.
  std::optional<double> speed_variation;
};

// A GEMM behaves as if it paid a fixed cost on top of its ideal time: launch, prologue and
// epilogue, the last partial wave of tiles. With that cost t0, a GEMM of F FLOPs runs at
// efficiency max * F / (F + F_half) where F_half = t0 * peak * max. 5 us fits bf16 GEMMs from
// 1.5k^3 to 16k^3 measured on an H200 (docs/hardware.md, "Measured on an H200").
inline constexpr double kGemmFixedOverheadUs = 5.0;

// An eager framework's host time per op of the plan (a module call: Python, autograd, its
// kernels' launches; paraplan/host_issue.hpp). 85 us fits vTrain's launch-bound single-node
// runs (docs/validation.md, "Host issue time"); it is the node's CPU and software, not the GPU.
inline constexpr double kHostOpOverheadUs = 85.0;

constexpr double host_op_overhead_us(const ProfileSpec& spec) { return spec.host_op_overhead_us.value_or(kHostOpOverheadUs); }

// Compute beside overlapped communication (NCCL's kernels hold SMs and HBM bandwidth): Lee et al.
// 2025 ("Characterizing Compute-Communication Overlap in GPU-Accelerated Distributed Deep
// Learning", arXiv 2507.03114) measured GPT and Llama kernels overlapped with collectives on
// A100, H100, MI250 and MI210 at 18.9 % slower on average (40 % at most) than alone.
inline constexpr double kOverlapComputeSlowdown = 0.189;

constexpr double overlap_compute_slowdown(const ProfileSpec& spec) {
  return spec.overlap_compute_slowdown.value_or(kOverlapComputeSlowdown);
}

// GPUs of one part differ in sustained speed (manufacturing, power management): Sinha et al.,
// "Not All GPUs Are Created Equal" (SC22), measured 8 % on average between the GPUs of a
// cluster, across four clusters and both vendors, with outliers up to 1.5x. Were that spread
// normal it would be about 8 standard deviations (the range of 10,000 draws is 7.7), 1 % each;
// its tails are heavier than a normal's, and a training job's health checks drain the outliers,
// so the body a job runs on varies less. The profiles take 0.5 %; the shipped runs cannot pin it
// (docs/validation.md, "The slowest GPU").
inline constexpr double kSpeedVariation = 0.005;

constexpr double speed_variation(const ProfileSpec& spec) { return spec.speed_variation.value_or(kSpeedVariation); }

// Network links are sold in gigabits per second; profiles count gigabytes.
constexpr double gbit_s_to_gb_s(double gigabits_per_second) { return gigabits_per_second / 8.0; }

constexpr double gemm_half_efficiency_gflop(const ProfileSpec& spec) {
  if (spec.gemm_half_efficiency_gflop) return *spec.gemm_half_efficiency_gflop;
  // us * TFLOP/s = 10^6 FLOP = 10^-3 GFLOP.
  return kGemmFixedOverheadUs * spec.tflops.bf16 * spec.gemm_efficiency_max * 1e-3;
}

// The first thing wrong with a spec. `key` is the TOML key path relative to `tier` (a key of
// tiers[tier]) or to the document (tier == kNoTier).
struct ProfileProblem {
  static constexpr int kNoTier = -1;
  int tier = kNoTier;
  std::string_view key;
  std::string_view message;  // empty when the spec is valid
  constexpr bool ok() const { return message.empty(); }
};

namespace detail {

// NaN and infinities fail x - x == 0.
constexpr bool finite(double value) { return value - value == 0.0; }

// What a field may be, in datasheet units. The bounds are far beyond any device (1 ZFLOP/s,
// 1 EB of memory, 1 ZB/s: room for idealised test machines with "free" links) and far above
// zero (no denormals): past them, converted figures overflow to infinity or step times do, and a
// report says "fits" with no time.
struct Range {
  double low, high;
  bool zero_allowed;         // 0 means "not declared" (a datatype the GPU lacks, no host link)
  std::string_view message;  // what is wrong with a value outside it
};
inline constexpr Range kTflops{1e-6, 1e9, false, "must be in [1e-6, 1e9] TFLOP/s"};
inline constexpr Range kTflopsOrNone{1e-6, 1e9, true, "must be 0 (none) or in [1e-6, 1e9] TFLOP/s"};
inline constexpr Range kGigabytes{1e-3, 1e9, false, "must be in [0.001, 1e9] GB"};
inline constexpr Range kBandwidth{1e-6, 1e12, false, "must be in [1e-6, 1e12] GB/s"};
inline constexpr Range kBandwidthOrNone{1e-6, 1e12, true, "must be 0 (none) or in [1e-6, 1e12] GB/s"};
inline constexpr Range kFraction{1e-6, 1.0, false, "must be a fraction in [1e-6, 1]"};
inline constexpr Range kMicroseconds{0.0, 1e6, true, "must be in [0, 1e6] us"};
inline constexpr Range kGigaflops{0.0, 1e9, true, "must be in [0, 1e9] GFLOP"};
inline constexpr Range kSlowdown{0.0, 1.0, true, "must be in [0, 1] (0: overlap is free, 1: compute at half speed)"};
inline constexpr Range kVariation{0.0, 0.5, true, "must be in [0, 0.5] (0: identical GPUs; 0.01: 1 % between GPUs)"};
inline constexpr int64_t kMaxGpusPerNode = 100000;
inline constexpr int64_t kMaxDomainSize = int64_t{1} << 24;

constexpr std::string_view range_problem(double value, Range range) {
  if (!finite(value)) return "must be a finite number";
  if ((value == 0.0 && range.zero_allowed) || (value >= range.low && value <= range.high)) return "";
  return range.message;
}

// Domains must nest with each other and with the node, so that a group of consecutive ranks
// maps onto whole domains (tiers) and whole nodes.
constexpr bool nests(int64_t a, int64_t b) { return a % b == 0 || b % a == 0; }

}  // namespace detail

constexpr ProfileProblem check_profile(const ProfileSpec& spec) {
  static_assert(PP_NAME_CAPACITY == 48 && PP_TIER_NAME_CAPACITY == 24, "update the messages below");
  constexpr int kTop = ProfileProblem::kNoTier;
  if (spec.name.empty() || spec.name.size() >= PP_NAME_CAPACITY) {
    return {kTop, "name", "must be 1 to 47 characters"};
  }
  if (spec.gpus_per_node < 1 || spec.gpus_per_node > detail::kMaxGpusPerNode)
    return {kTop, "gpus_per_node", "must be in [1, 100000]"};

  struct Field {
    std::string_view key;
    double value;
    detail::Range range;
  };
  const Field fields[] = {
      {"compute.fp32_tflops", spec.tflops.fp32, detail::kTflops},
      {"compute.tf32_tflops", spec.tflops.tf32, detail::kTflopsOrNone},
      {"compute.bf16_tflops", spec.tflops.bf16, detail::kTflops},
      {"compute.fp16_tflops", spec.tflops.fp16, detail::kTflopsOrNone},
      {"compute.fp8_tflops", spec.tflops.fp8, detail::kTflopsOrNone},
      {"compute.mxfp8_tflops", spec.tflops.mxfp8, detail::kTflopsOrNone},
      {"compute.nvfp4_tflops", spec.tflops.nvfp4, detail::kTflopsOrNone},
      {"memory.capacity_gb", spec.memory_gb, detail::kGigabytes},
      {"memory.bandwidth_gb_s", spec.memory_bandwidth_gb_s, detail::kBandwidth},
      {"memory.efficiency", spec.memory_efficiency, detail::kFraction},
      {"host_link.bandwidth_gb_s", spec.host_link_bandwidth_gb_s, detail::kBandwidthOrNone},
      {"gemm.efficiency_max", spec.gemm_efficiency_max, detail::kFraction},
      {"gemm.half_efficiency_gflop", gemm_half_efficiency_gflop(spec), detail::kGigaflops},
      {"gemm.efficiency_max_fp8", spec.gemm_efficiency_max_fp8.value_or(spec.gemm_efficiency_max), detail::kFraction},
      {"gemm.efficiency_max_fp4", spec.gemm_efficiency_max_fp4.value_or(spec.gemm_efficiency_max), detail::kFraction},
      {"attention.efficiency", spec.attention_efficiency, detail::kFraction},
      {"attention.efficiency_flash2", spec.attention_efficiency_flash2.value_or(spec.attention_efficiency), detail::kFraction},
      {"host.op_overhead_us", host_op_overhead_us(spec), detail::kMicroseconds},
      {"overlap.compute_slowdown", overlap_compute_slowdown(spec), detail::kSlowdown},
      {"fleet.speed_variation", speed_variation(spec), detail::kVariation},
  };
  for (const Field& field : fields) {
    std::string_view problem = detail::range_problem(field.value, field.range);
    if (!problem.empty()) return {kTop, field.key, problem};
  }

  static_assert(PP_MAX_TIERS == 4, "update the message below");
  if (spec.tiers.empty() || spec.tiers.size() > PP_MAX_TIERS) {
    return {kTop, "tiers", "must have 1 to 4 entries"};
  }
  int64_t inner_domain = 1;
  for (size_t index = 0; index < spec.tiers.size(); ++index) {
    const TierSpec& tier = spec.tiers[index];
    const int at = static_cast<int>(index);
    const bool outermost = index + 1 == spec.tiers.size();
    if (tier.name.empty() || tier.name.size() >= PP_TIER_NAME_CAPACITY) {
      return {at, "name", "must be 1 to 23 characters"};
    }
    if (outermost && tier.domain_size != 0) {
      return {at, "domain_size", "the outermost tier must be unbounded (0)"};
    }
    if (tier.domain_size < 0 || tier.domain_size > detail::kMaxDomainSize)
      return {at, "domain_size", "must be in [0, 16777216]"};
    if (!outermost) {
      if (tier.domain_size == 0) return {at, "domain_size", "only the outermost tier may be unbounded (0)"};
      if (tier.domain_size < 2) {
        return {at, "domain_size", "must be >= 2, or 0 (unbounded) for the outermost tier"};
      }
      if (tier.domain_size <= inner_domain || tier.domain_size % inner_domain != 0) {
        return {at, "domain_size", "must be a larger multiple of the previous tier's domain_size"};
      }
      if (!detail::nests(tier.domain_size, spec.gpus_per_node)) {
        return {at, "domain_size", "must divide gpus_per_node or be a multiple of it"};
      }
      inner_domain = tier.domain_size;
    }
    const Field tier_fields[] = {
        {"bandwidth_gb_s", tier.bandwidth_gb_s, detail::kBandwidth},
        {"latency_us", tier.latency_us, detail::kMicroseconds},
        {"efficiency", tier.efficiency, detail::kFraction},
    };
    for (const Field& field : tier_fields) {
      std::string_view problem = detail::range_problem(field.value, field.range);
      if (!problem.empty()) return {at, field.key, problem};
    }
  }
  return {};
}

// Converts to the ABI's SI units. Throws InvalidArgument for a spec check_profile() rejects.
inline pp_hardware_profile build_profile(const ProfileSpec& spec) {
  if (ProfileProblem problem = check_profile(spec); !problem.ok()) {
    std::string key = problem.tier == ProfileProblem::kNoTier
                          ? std::string(problem.key)
                          : "tiers[" + std::to_string(problem.tier) + "]." + std::string(problem.key);
    throw InvalidArgument("hardware profile '" + std::string(spec.name) + "': " + key + ": " +
                          std::string(problem.message));
  }
  constexpr double kTera = 1e12, kGiga = 1e9, kMicro = 1e-6;
  pp_hardware_profile profile{};
  profile.struct_size = sizeof(profile);
  copy_name(profile.name, spec.name);
  profile.peak_flops[PP_DTYPE_FP32] = spec.tflops.fp32 * kTera;
  profile.peak_flops[PP_DTYPE_TF32] = spec.tflops.tf32 * kTera;
  profile.peak_flops[PP_DTYPE_BF16] = spec.tflops.bf16 * kTera;
  profile.peak_flops[PP_DTYPE_FP16] = spec.tflops.fp16 * kTera;
  profile.peak_flops[PP_DTYPE_FP8] = spec.tflops.fp8 * kTera;
  profile.peak_flops_mxfp8 = spec.tflops.mxfp8 * kTera;
  profile.peak_flops_nvfp4 = spec.tflops.nvfp4 * kTera;
  profile.memory_bytes = spec.memory_gb * kGiga;
  profile.memory_bandwidth_bytes_per_s = spec.memory_bandwidth_gb_s * kGiga;
  profile.memory_efficiency = spec.memory_efficiency;
  profile.host_link_bandwidth_bytes_per_s = spec.host_link_bandwidth_gb_s * kGiga;
  profile.gpus_per_node = spec.gpus_per_node;
  profile.gemm_efficiency_max = spec.gemm_efficiency_max;
  profile.gemm_half_efficiency_flops = gemm_half_efficiency_gflop(spec) * kGiga;
  profile.gemm_efficiency_max_fp8 = spec.gemm_efficiency_max_fp8.value_or(0.0);
  profile.gemm_efficiency_max_fp4 = spec.gemm_efficiency_max_fp4.value_or(0.0);
  profile.attention_efficiency = spec.attention_efficiency;
  profile.attention_efficiency_flash2 = spec.attention_efficiency_flash2.value_or(0.0);
  profile.host_op_overhead_s = host_op_overhead_us(spec) * kMicro;
  profile.overlap_compute_slowdown = overlap_compute_slowdown(spec);
  profile.speed_variation = speed_variation(spec);
  profile.tier_count = static_cast<uint32_t>(spec.tiers.size());
  for (size_t index = 0; index < spec.tiers.size(); ++index) {
    const TierSpec& source = spec.tiers[index];
    pp_tier& tier = profile.tiers[index];
    tier.struct_size = sizeof(tier);
    copy_name(tier.name, source.name);
    tier.domain_size = source.domain_size;
    tier.bandwidth_bytes_per_s = source.bandwidth_gb_s * kGiga;
    tier.latency_s = source.latency_us * kMicro;
    tier.efficiency = source.efficiency;
  }
  return profile;
}

}  // namespace paraplan::hardware

#endif  // PARAPLAN_HARDWARE_INTERNAL_PROFILE_BUILDER_H
