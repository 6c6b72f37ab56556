// NVIDIA H200 SXM 141 GB on an HGX H200 8-GPU board, networked as a DGX H200.
//
// Peaks: NVIDIA H200 Tensor Core GPU datasheet, SXM column: the H100's compute (tensor-core
// figures there are "with sparsity": halved here) with 141 GB of HBM3e at 4.8 TB/s. NVLink 4
// through NVSwitch: 900 GB/s per GPU, both directions together. Network: DGX H200 user guide,
// eight ConnectX-7 400 Gb/s NDR InfiniBand adapters, one per GPU. The GEMM, attention and memory
// efficiencies were measured on an H200; docs/hardware.md has the run.
#include "hardware/internal/datasheet_hardware.h"

namespace paraplan::hardware {
namespace {

constexpr TierSpec kH200SxmTiers[] = {
    {.name = "nvlink", .domain_size = 8, .bandwidth_gb_s = 450, .latency_us = 2, .efficiency = 0.80},
    {.name = "infiniband", .domain_size = 0, .bandwidth_gb_s = gbit_s_to_gb_s(400), .latency_us = 5,
     .efficiency = 0.90},
};

constexpr Datasheet kH200Sxm{
    .profile =
        {
            .name = "h200-sxm",
            .gpus_per_node = 8,
            .tflops = {.fp32 = 66.9, .tf32 = 494.7, .bf16 = 989.4, .fp16 = 989.4, .fp8 = 1978.9},
            .memory_gb = 141,
            .memory_bandwidth_gb_s = 4800,
            .memory_efficiency = 0.85,
            .host_link_bandwidth_gb_s = 64,  // PCIe Gen5 x16: 128 GB/s both directions
            .gemm_efficiency_max = 0.64,
            .gemm_half_efficiency_gflop = std::nullopt,
            .gemm_efficiency_max_fp8 = 0.53,
            .gemm_efficiency_max_fp4 = std::nullopt,
            .attention_efficiency = 0.81,
            .attention_efficiency_flash2 = 0.45,
            .tiers = kH200SxmTiers,
            .host_op_overhead_us = std::nullopt,
            .overlap_compute_slowdown = std::nullopt,
            .speed_variation = std::nullopt,
        },
    .description = "NVIDIA H200 SXM 141GB, 8-GPU HGX/DGX H200 node; NVIDIA H200 datasheet and DGX H200 user guide",
};

}  // namespace
}  // namespace paraplan::hardware

using H200SxmHardware = paraplan::hardware::DatasheetHardware<paraplan::hardware::kH200Sxm>;
PARAPLAN_PLUGIN(H200SxmHardware)
