// fuzz_hardware_profile: a TOML hardware profile through the host's bounds (size, nesting) and
// the toml plugin's reader. A profile the reader accepts must also pass the host's physical
// check (the two judge the same machine in different units), and the cost model's figures for
// it must be finite.
#include <string_view>

#include "fuzz_support.h"
#include "hardware/toml/profile_reader.h"
#include "host/plan/profile_check.h"
#include "host/recipe/input_file.h"
#include "paraplan/cost_model.hpp"

// A profile's `base = "..."` is laid over this one (what paraplan hands the plugin for a named
// base, host/plan/profile_toml.h), so the merge is fuzzed too.
constexpr std::string_view kBase = R"(name = "base"
gpus_per_node = 8
[compute]
fp32_tflops = 66.9
bf16_tflops = 989.4
fp8_tflops = 1978.9
[memory]
capacity_gb = 80
bandwidth_gb_s = 3350
efficiency = 0.85
[host]
op_overhead_us = 85
[[tiers]]
name = "nvlink"
domain_size = 8
bandwidth_gb_s = 450
latency_us = 2
efficiency = 0.8
[[tiers]]
name = "infiniband"
domain_size = 0
bandwidth_gb_s = 50
latency_us = 5
efficiency = 0.9
)";

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  pp_hardware_profile profile{};
  bool accepted = false;
  paraplan::fuzz::refuse_cleanly([&] {
    if (text.size() > paraplan::host::kMaxTomlBytes) return;
    paraplan::host::check_toml_depth(text, "fuzz.toml");
    try {
      profile = paraplan::hardware::parse_toml_profile(text, "fuzz.toml", kBase);
      accepted = true;
    } catch (const paraplan::Error&) {  // the plugin's refusal, with the key and line
    }
  });
  if (!accepted) return 0;
  if (std::string problem = paraplan::host::profile_problem(profile); !problem.empty())
    paraplan::fuzz::finding("the reader accepted a profile the host refuses: " + problem);
  namespace cost = paraplan::cost;
  const double figures[] = {
      cost::default_gemm_time(profile, 8192, 8192, 8192, PP_DTYPE_BF16),
      cost::default_gemm_time(profile, 1, 1, 1, PP_DTYPE_FP32),
      cost::memory_time(profile, 1e9),
      cost::default_collective_time(profile, PP_COLLECTIVE_ALL_REDUCE, 1e9, 1024, 1),
      cost::default_collective_time(profile, PP_COLLECTIVE_ALL_TO_ALL, 1e6, 8, 8),
      cost::default_send_time(profile, 1e8, 8),
  };
  for (double seconds : figures)
    if (!std::isfinite(seconds) || seconds < 0) paraplan::fuzz::finding("a cost figure is " + std::to_string(seconds));
  return 0;
}
