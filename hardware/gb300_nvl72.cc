// NVIDIA GB300 NVL72: one rack of 72 Blackwell Ultra GPUs in a single NVLink domain, 18 compute
// trays of two GB300 superchips (4 GPUs) each.
//
// Peaks: NVIDIA GB300 NVL72 specifications, per rack (tensor cores "with sparsity": TF32 180,
// BF16/FP16 360, FP8 720 PFLOP/s), divided by 72 and halved to dense: the GB200's rates; FP4
// 1,080 PFLOP/s dense (Blackwell Ultra's gain: 15 per GPU, where sparsity adds nothing);
// MXFP8 at the FP8 rate, NVFP4 at FP4's; FP32 as
// the GB200's (80 TFLOP/s). Memory: up to 20 TB HBM3e per rack = 279 GB usable per GPU (288 GB
// physical), 8 TB/s. NVLink 5: 130 TB/s per rack = 1.8 TB/s per GPU, both directions together.
// Network: a ConnectX-8 800 Gb/s adapter per GPU. Efficiencies: the GB200 NVL72's (docs/hardware.md)
// but FP8's plateau. On the same Llama 3 8B plan in the same container (Megatron-Bridge 25.11)
// the GB300 runs 19 % (FP8) and 21 % (MXFP8) faster than the GB200, on datasheets that give both
// the same FP8 peak (its 1,400 W against the GB200's 1,200 W keeps clocks up under GEMM load):
// 0.62 of the peak, fitted on its eleven FP8 and MXFP8 Llama 3.1 405B runs, the two
// Llama 3 8B runs held out (1.9 %; fitted alone they pick 0.60). NVFP4 stays on the GB200's 0.48
// of its own, larger peak, where its five runs sit (docs/validation.md).
#include "hardware/internal/datasheet_hardware.h"

namespace paraplan::hardware {
namespace {

constexpr TierSpec kGb300Nvl72Tiers[] = {
    {.name = "nvlink", .domain_size = 72, .bandwidth_gb_s = 900, .latency_us = 2, .efficiency = 0.80},
    {.name = "infiniband", .domain_size = 0, .bandwidth_gb_s = gbit_s_to_gb_s(800), .latency_us = 5,
     .efficiency = 0.90},
};

constexpr Datasheet kGb300Nvl72{
    .profile =
        {
            .name = "gb300-nvl72",
            .gpus_per_node = 4,
            .tflops = {.fp32 = 80, .tf32 = 1250, .bf16 = 2500, .fp16 = 2500, .fp8 = 5000, .mxfp8 = 5000, .nvfp4 = 15000},
            .memory_gb = 279,
            .memory_bandwidth_gb_s = 8000,
            .memory_efficiency = 0.85,
            .host_link_bandwidth_gb_s = 225,  // NVLink-C2C 900 GB/s (both ways) per 2 GPUs
            .gemm_efficiency_max = 0.58,
            .gemm_half_efficiency_gflop = std::nullopt,
            .gemm_efficiency_max_fp8 = 0.62,  // fitted to measured GB300 runs (header)
            .gemm_efficiency_max_fp4 = 0.48,
            .attention_efficiency = 0.81,
            .attention_efficiency_flash2 = 0.45,
            .tiers = kGb300Nvl72Tiers,
            .host_op_overhead_us = std::nullopt,
            .overlap_compute_slowdown = std::nullopt,
            .speed_variation = std::nullopt,
        },
    .description = "NVIDIA GB300 NVL72 rack, 72 Blackwell Ultra GPUs in one NVLink domain; NVIDIA GB300 NVL72 specifications",
};

}  // namespace
}  // namespace paraplan::hardware

using Gb300Nvl72Hardware = paraplan::hardware::DatasheetHardware<paraplan::hardware::kGb300Nvl72>;
PARAPLAN_PLUGIN(Gb300Nvl72Hardware)
