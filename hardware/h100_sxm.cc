// NVIDIA H100 SXM5 80 GB on an HGX H100 8-GPU board, networked as a DGX H100.
//
// Peaks: NVIDIA H100 Tensor Core GPU datasheet, SXM column (tensor-core figures there are "with
// sparsity": halved here). Memory: 80 GB HBM3, 3.35 TB/s. NVLink 4 through NVSwitch: 900 GB/s
// per GPU, both directions together. Network: DGX H100 user guide, eight ConnectX-7 400 Gb/s NDR
// InfiniBand adapters, one per GPU. How the efficiencies were chosen: docs/hardware.md.
#include "hardware/internal/datasheet_hardware.h"

namespace paraplan::hardware {
namespace {

constexpr TierSpec kH100SxmTiers[] = {
    {.name = "nvlink", .domain_size = 8, .bandwidth_gb_s = 450, .latency_us = 2, .efficiency = 0.80},
    {.name = "infiniband", .domain_size = 0, .bandwidth_gb_s = gbit_s_to_gb_s(400), .latency_us = 5,
     .efficiency = 0.90},
};

constexpr Datasheet kH100Sxm{
    .profile =
        {
            .name = "h100-sxm",
            .gpus_per_node = 8,
            .tflops = {.fp32 = 66.9, .tf32 = 494.7, .bf16 = 989.4, .fp16 = 989.4, .fp8 = 1978.9},
            .memory_gb = 80,
            .memory_bandwidth_gb_s = 3350,
            .memory_efficiency = 0.85,
            .host_link_bandwidth_gb_s = 64,  // PCIe Gen5 x16: 128 GB/s both directions
            .gemm_efficiency_max = 0.64,
            .gemm_half_efficiency_gflop = std::nullopt,
            .gemm_efficiency_max_fp8 = 0.53,
            .gemm_efficiency_max_fp4 = std::nullopt,
            .attention_efficiency = 0.81,
            .attention_efficiency_flash2 = 0.45,
            .tiers = kH100SxmTiers,
            .host_op_overhead_us = std::nullopt,
            .overlap_compute_slowdown = std::nullopt,
            .speed_variation = std::nullopt,
        },
    .description = "NVIDIA H100 SXM5 80GB, 8-GPU HGX/DGX H100 node; NVIDIA H100 datasheet and DGX H100 user guide",
};

}  // namespace
}  // namespace paraplan::hardware

using H100SxmHardware = paraplan::hardware::DatasheetHardware<paraplan::hardware::kH100Sxm>;
PARAPLAN_PLUGIN(H100SxmHardware)
