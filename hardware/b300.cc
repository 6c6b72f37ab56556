// NVIDIA B300 (Blackwell Ultra) on an HGX B300 8-GPU board, networked as a DGX B300.
//
// Peaks: NVIDIA HGX B300 specifications, per 8-GPU board (FP32 600 TFLOP/s; tensor cores "with
// sparsity": TF32 18, BF16/FP16 36, FP8 72 PFLOP/s), divided by 8 and halved to dense: the B200's
// rates (Blackwell Ultra adds FP4 throughput, not these): FP4 108 PFLOP/s dense per board, 13.5
// per GPU; MXFP8 at the FP8 rate, NVFP4 at FP4's. Memory: 2.1 TB HBM3e per board = 270 GB
// usable per GPU (288 GB physical), 8 TB/s. NVLink 5 through NVSwitch: 1.8 TB/s per GPU, both
// directions together. Network: eight ConnectX-8 800 Gb/s adapters, one per GPU. Efficiencies:
// the B200's until measured (docs/hardware.md).
#include "hardware/internal/datasheet_hardware.h"

namespace paraplan::hardware {
namespace {

constexpr TierSpec kB300Tiers[] = {
    {.name = "nvlink", .domain_size = 8, .bandwidth_gb_s = 900, .latency_us = 2, .efficiency = 0.80},
    {.name = "infiniband", .domain_size = 0, .bandwidth_gb_s = gbit_s_to_gb_s(800), .latency_us = 5,
     .efficiency = 0.90},
};

constexpr Datasheet kB300{
    .profile =
        {
            .name = "b300",
            .gpus_per_node = 8,
            .tflops = {.fp32 = 75, .tf32 = 1125, .bf16 = 2250, .fp16 = 2250, .fp8 = 4500, .mxfp8 = 4500, .nvfp4 = 13500},
            .memory_gb = 270,
            .memory_bandwidth_gb_s = 8000,
            .memory_efficiency = 0.85,
            .host_link_bandwidth_gb_s = 64,  // PCIe Gen5 x16 to the DGX B300 Xeon hosts
            .gemm_efficiency_max = 0.62,
            .gemm_half_efficiency_gflop = std::nullopt,
            .gemm_efficiency_max_fp8 = 0.51,
            .gemm_efficiency_max_fp4 = std::nullopt,
            .attention_efficiency = 0.81,
            .attention_efficiency_flash2 = 0.45,
            .tiers = kB300Tiers,
            .host_op_overhead_us = std::nullopt,
            .overlap_compute_slowdown = std::nullopt,
            .speed_variation = std::nullopt,
        },
    .description = "NVIDIA B300 (Blackwell Ultra) 270GB, 8-GPU HGX/DGX B300 node; NVIDIA HGX B300 specifications",
};

}  // namespace
}  // namespace paraplan::hardware

using B300Hardware = paraplan::hardware::DatasheetHardware<paraplan::hardware::kB300>;
PARAPLAN_PLUGIN(B300Hardware)
