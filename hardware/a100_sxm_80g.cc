// NVIDIA A100 SXM4 80 GB on an HGX A100 8-GPU board, networked as a DGX A100.
//
// Peaks: NVIDIA A100 Tensor Core GPU datasheet, "A100 80GB SXM" column (tensor-core figures there
// are "with sparsity" where marked: halved here). No FP8 on Ampere. Memory: 80 GB HBM2e,
// 2,039 GB/s. NVLink 3 through NVSwitch: 600 GB/s per GPU, both directions together. Network:
// DGX A100 user guide, eight ConnectX-6 200 Gb/s HDR InfiniBand adapters, one per GPU.
// How the efficiencies were chosen: docs/hardware.md.
#include "hardware/internal/datasheet_hardware.h"

namespace paraplan::hardware {
namespace {

constexpr TierSpec kA100SxmTiers[] = {
    {.name = "nvlink", .domain_size = 8, .bandwidth_gb_s = 300, .latency_us = 2, .efficiency = 0.80},
    {.name = "infiniband", .domain_size = 0, .bandwidth_gb_s = gbit_s_to_gb_s(200), .latency_us = 5,
     .efficiency = 0.90},
};

constexpr Datasheet kA100Sxm80g{
    .profile =
        {
            .name = "a100-sxm-80g",
            .gpus_per_node = 8,
            .tflops = {.fp32 = 19.5, .tf32 = 156, .bf16 = 312, .fp16 = 312, .fp8 = 0},
            .memory_gb = 80,
            .memory_bandwidth_gb_s = 2039,
            .memory_efficiency = 0.85,
            .host_link_bandwidth_gb_s = 32,  // PCIe Gen4 x16: 64 GB/s both directions
            .gemm_efficiency_max = 0.70,
            .gemm_half_efficiency_gflop = std::nullopt,
            .gemm_efficiency_max_fp8 = std::nullopt,  // no FP8 on Ampere
            .gemm_efficiency_max_fp4 = std::nullopt,
            .attention_efficiency = 0.94,
            .attention_efficiency_flash2 = std::nullopt,
            .tiers = kA100SxmTiers,
            .host_op_overhead_us = std::nullopt,
            .overlap_compute_slowdown = std::nullopt,
            .speed_variation = std::nullopt,
        },
    .description = "NVIDIA A100 SXM4 80GB, 8-GPU HGX/DGX A100 node; NVIDIA A100 datasheet and DGX A100 user guide",
};

}  // namespace
}  // namespace paraplan::hardware

using A100Sxm80gHardware = paraplan::hardware::DatasheetHardware<paraplan::hardware::kA100Sxm80g>;
PARAPLAN_PLUGIN(A100Sxm80gHardware)
