// NVIDIA B200 180 GB on an HGX B200 8-GPU board, networked as a DGX B200.
//
// Peaks: NVIDIA HGX B200 datasheet, per 8-GPU board (FP32 600 TFLOP/s; tensor cores "with
// sparsity": TF32 18, BF16/FP16 36, FP8 72, FP4 144 PFLOP/s), divided by 8 and halved to dense;
// MXFP8 runs at the FP8 rate, NVFP4 at FP4's (Blackwell's block-scaled tensor cores). Memory:
// 1,440 GB and 64 TB/s per board = 180 GB and 8 TB/s per GPU. NVLink 5 through NVSwitch:
// 1.8 TB/s per GPU, both directions together. Network: DGX B200 datasheet, eight ConnectX-7
// 400 Gb/s adapters, one per GPU. How the efficiencies were chosen: docs/hardware.md.
#include "hardware/internal/datasheet_hardware.h"

namespace paraplan::hardware {
namespace {

constexpr TierSpec kB200Tiers[] = {
    {.name = "nvlink", .domain_size = 8, .bandwidth_gb_s = 900, .latency_us = 2, .efficiency = 0.80},
    {.name = "infiniband", .domain_size = 0, .bandwidth_gb_s = gbit_s_to_gb_s(400), .latency_us = 5,
     .efficiency = 0.90},
};

constexpr Datasheet kB200{
    .profile =
        {
            .name = "b200",
            .gpus_per_node = 8,
            .tflops = {.fp32 = 75, .tf32 = 1125, .bf16 = 2250, .fp16 = 2250, .fp8 = 4500, .mxfp8 = 4500, .nvfp4 = 9000},
            .memory_gb = 180,
            .memory_bandwidth_gb_s = 8000,
            .memory_efficiency = 0.85,
            .host_link_bandwidth_gb_s = 64,  // PCIe Gen5 x16 to the DGX B200 Xeon hosts
            .gemm_efficiency_max = 0.62,
            .gemm_half_efficiency_gflop = std::nullopt,
            .gemm_efficiency_max_fp8 = 0.51,
            .gemm_efficiency_max_fp4 = std::nullopt,
            .attention_efficiency = 0.81,
            .attention_efficiency_flash2 = 0.45,
            .tiers = kB200Tiers,
            .host_op_overhead_us = std::nullopt,
            .overlap_compute_slowdown = std::nullopt,
            .speed_variation = std::nullopt,
        },
    .description = "NVIDIA B200 180GB, 8-GPU HGX/DGX B200 node; NVIDIA HGX B200 and DGX B200 datasheets",
};

}  // namespace
}  // namespace paraplan::hardware

using B200Hardware = paraplan::hardware::DatasheetHardware<paraplan::hardware::kB200>;
PARAPLAN_PLUGIN(B200Hardware)
