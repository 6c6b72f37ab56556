// NVIDIA GB200 NVL72: one rack of 72 Blackwell GPUs in a single NVLink domain, 18 compute trays
// of two GB200 superchips (4 GPUs) each.
//
// Peaks: NVIDIA GB200 NVL72 datasheet, per rack (FP32 5,760 TFLOP/s; tensor cores "with
// sparsity": TF32 180, BF16/FP16 360, FP8 720, FP4 1,440 PFLOP/s), divided by 72 and halved to
// dense; MXFP8 at the FP8 rate, NVFP4 at FP4's.
// Memory: 13.4 TB HBM3e and 576 TB/s per rack = 186 GB and 8 TB/s per GPU. NVLink 5 through the
// rack's NVLink switch trays: 130 TB/s per rack = 1.8 TB/s per GPU, both directions together.
// Network: NVIDIA's multi-node NVLink tuning guide, a ConnectX-7 400 Gb/s adapter per GPU in each
// compute tray. How the efficiencies were chosen: docs/hardware.md.
#include "hardware/internal/datasheet_hardware.h"

namespace paraplan::hardware {
namespace {

constexpr TierSpec kGb200Nvl72Tiers[] = {
    {.name = "nvlink", .domain_size = 72, .bandwidth_gb_s = 900, .latency_us = 2, .efficiency = 0.80},
    {.name = "infiniband", .domain_size = 0, .bandwidth_gb_s = gbit_s_to_gb_s(400), .latency_us = 5,
     .efficiency = 0.90},
};

constexpr Datasheet kGb200Nvl72{
    .profile =
        {
            .name = "gb200-nvl72",
            .gpus_per_node = 4,
            .tflops = {.fp32 = 80, .tf32 = 1250, .bf16 = 2500, .fp16 = 2500, .fp8 = 5000, .mxfp8 = 5000, .nvfp4 = 10000},
            .memory_gb = 186,
            .memory_bandwidth_gb_s = 8000,
            .memory_efficiency = 0.85,
            .host_link_bandwidth_gb_s = 225,  // NVLink-C2C 900 GB/s (both ways) per 2 GPUs
            .gemm_efficiency_max = 0.58,
            .gemm_half_efficiency_gflop = std::nullopt,
            .gemm_efficiency_max_fp8 = 0.48,
            .gemm_efficiency_max_fp4 = std::nullopt,
            .attention_efficiency = 0.81,
            .attention_efficiency_flash2 = 0.45,
            .tiers = kGb200Nvl72Tiers,
            .host_op_overhead_us = std::nullopt,
            .overlap_compute_slowdown = std::nullopt,
            .speed_variation = std::nullopt,
        },
    .description = "NVIDIA GB200 NVL72 rack, 72 Blackwell GPUs in one NVLink domain; NVIDIA GB200 NVL72 datasheet",
};

}  // namespace
}  // namespace paraplan::hardware

using Gb200Nvl72Hardware = paraplan::hardware::DatasheetHardware<paraplan::hardware::kGb200Nvl72>;
PARAPLAN_PLUGIN(Gb200Nvl72Hardware)
