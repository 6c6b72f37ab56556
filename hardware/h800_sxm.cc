// NVIDIA H800 SXM5 80 GB: the H100 SXM5 with NVLink cut to 400 GB/s (and FP64 to 1 TFLOP/s), on
// an 8-GPU HGX board, networked as DeepSeek's training cluster.
//
// Peaks: NVIDIA H800 Tensor Core GPU datasheet, SXM column: tensor-core rates equal to the H100
// SXM5's (TF32 989, BF16/FP16 1,979, FP8 3,958 TFLOP/s "with sparsity": halved here), FP32 67.
// Memory: 80 GB HBM3, 3.35 TB/s. NVLink 400 GB/s per GPU, both directions together. Network:
// eight 400 Gb/s InfiniBand adapters per node, one per GPU (DeepSeek-V3 report, arXiv 2412.19437,
// sec. 3.1). Efficiencies: the H100 SXM5's, the same silicon and clocks (docs/hardware.md).
#include "hardware/internal/datasheet_hardware.h"

namespace paraplan::hardware {
namespace {

constexpr TierSpec kH800SxmTiers[] = {
    {.name = "nvlink", .domain_size = 8, .bandwidth_gb_s = 200, .latency_us = 2, .efficiency = 0.80},
    {.name = "infiniband", .domain_size = 0, .bandwidth_gb_s = gbit_s_to_gb_s(400), .latency_us = 5,
     .efficiency = 0.90},
};

constexpr Datasheet kH800Sxm{
    .profile =
        {
            .name = "h800-sxm",
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
            .tiers = kH800SxmTiers,
            .host_op_overhead_us = std::nullopt,
            .overlap_compute_slowdown = std::nullopt,
            .speed_variation = std::nullopt,
        },
    .description = "NVIDIA H800 SXM5 80GB (NVLink 400 GB/s), 8-GPU HGX node; NVIDIA H800 datasheet, DeepSeek-V3 report",
};

}  // namespace
}  // namespace paraplan::hardware

using H800SxmHardware = paraplan::hardware::DatasheetHardware<paraplan::hardware::kH800Sxm>;
PARAPLAN_PLUGIN(H800SxmHardware)
