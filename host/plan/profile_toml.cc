#include "host/plan/profile_toml.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "host/core/toml_quote.h"
#include "paraplan/sdk.hpp"

namespace paraplan::host {
namespace {

// `value` (SI units) in the file's unit (value / scale) as the fewest significant digits that
// the reader, multiplying by `scale` again, turns back into the same double: 989.4 for an H100's
// bf16 peak, not 989.4000000000001.
std::string number(double value, double scale = 1.0) {
  const double shown = value / scale;
  // At least the integer part's digits, so that 80 is not written 8e+01.
  const int whole = std::fabs(shown) >= 1 && std::fabs(shown) < 1e15 ? static_cast<int>(std::log10(std::fabs(shown))) + 1 : 1;
  for (int digits = whole; digits <= 17; ++digits) {
    char text[40];
    std::snprintf(text, sizeof text, "%.*g", digits, shown);
    if (std::strtod(text, nullptr) * scale == value) return text;
  }
  std::array<char, 64> buffer{};
  const auto [end, error] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value / scale);
  return error == std::errc{} ? std::string(buffer.data(), end) : std::string("nan");
}

template <size_t N>
std::string_view field(const char (&text)[N]) {
  size_t length = 0;
  while (length < N && text[length] != '\0') ++length;
  return {text, length};
}

void line(std::string& out, std::string_view key, const std::string& value, std::string_view unit) {
  out += key;
  out += " = ";
  out += value;
  if (!unit.empty()) {
    constexpr size_t kCommentColumn = 40;
    const size_t used = key.size() + 3 + value.size();
    out += std::string(used < kCommentColumn ? kCommentColumn - used : 1, ' ');
    out += "# ";
    out += unit;
  }
  out += '\n';
}

}  // namespace

std::string profile_toml(const pp_hardware_profile& profile) {
  constexpr double kTera = 1e12, kGiga = 1e9, kMicro = 1e-6;
  std::string out;
  line(out, "name", toml_quoted(field(profile.name)), "");
  line(out, "gpus_per_node", std::to_string(profile.gpus_per_node), "");
  out += "\n[compute]                               # dense TFLOP/s per GPU; 0: no such tensor cores\n";
  const std::pair<const char*, double> peaks[] = {
      {"fp32_tflops", profile.peak_flops[PP_DTYPE_FP32]},  {"tf32_tflops", profile.peak_flops[PP_DTYPE_TF32]},
      {"bf16_tflops", profile.peak_flops[PP_DTYPE_BF16]},  {"fp16_tflops", profile.peak_flops[PP_DTYPE_FP16]},
      {"fp8_tflops", profile.peak_flops[PP_DTYPE_FP8]},    {"mxfp8_tflops", profile.peak_flops_mxfp8},
      {"nvfp4_tflops", profile.peak_flops_nvfp4}};
  for (const auto& [key, flops] : peaks) line(out, key, number(flops, kTera), "");
  out += "\n[memory]\n";
  line(out, "capacity_gb", number(profile.memory_bytes, kGiga), "GB (10^9 bytes) per GPU");
  line(out, "bandwidth_gb_s", number(profile.memory_bandwidth_bytes_per_s, kGiga), "GB/s per GPU");
  line(out, "efficiency", number(profile.memory_efficiency), "achievable fraction of the bandwidth");
  if (profile.host_link_bandwidth_bytes_per_s > 0) {
    out += "\n[host_link]\n";
    line(out, "bandwidth_gb_s", number(profile.host_link_bandwidth_bytes_per_s, kGiga), "GB/s per GPU and direction");
  }
  out += "\n[gemm]\n";
  line(out, "efficiency_max", number(profile.gemm_efficiency_max), "plateau, fraction of peak");
  line(out, "half_efficiency_gflop", number(profile.gemm_half_efficiency_flops, kGiga),
       "GEMM size at half the plateau");
  if (profile.gemm_efficiency_max_fp8 > 0)
    line(out, "efficiency_max_fp8", number(profile.gemm_efficiency_max_fp8), "FP8 plateau, fraction of its peak");
  if (profile.gemm_efficiency_max_fp4 > 0)
    line(out, "efficiency_max_fp4", number(profile.gemm_efficiency_max_fp4), "NVFP4 plateau, fraction of its peak");
  out += "\n[attention]\n";
  line(out, "efficiency", number(profile.attention_efficiency), "fraction of bf16 peak, full-square FLOPs");
  if (profile.attention_efficiency_flash2 > 0)
    line(out, "efficiency_flash2", number(profile.attention_efficiency_flash2), "FlashAttention-2-class kernels");
  out += "\n[host]\n";
  line(out, "op_overhead_us", number(profile.host_op_overhead_s, kMicro), "host time to issue one op");
  out += "\n[overlap]\n";
  line(out, "compute_slowdown", number(profile.overlap_compute_slowdown), "compute beside overlapped communication");
  out += "\n[fleet]\n";
  line(out, "speed_variation", number(profile.speed_variation), "coefficient of variation of a GPU's speed");
  for (uint32_t index = 0; index < profile.tier_count && index < PP_MAX_TIERS; ++index) {
    const pp_tier& tier = profile.tiers[index];
    out += "\n[[tiers]]\n";
    line(out, "name", toml_quoted(field(tier.name)), "");
    line(out, "domain_size", std::to_string(tier.domain_size), tier.domain_size == 0 ? "unbounded: the scale-out network" : "GPUs");
    line(out, "bandwidth_gb_s", number(tier.bandwidth_bytes_per_s, kGiga), "GB/s per GPU and direction");
    line(out, "latency_us", number(tier.latency_s, kMicro), "per message");
    line(out, "efficiency", number(tier.efficiency), "achievable fraction of the bandwidth");
  }
  return out;
}

}  // namespace paraplan::host
