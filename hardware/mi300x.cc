// AMD Instinct MI300X 192 GB on an 8-GPU platform (fully connected xGMI mesh).
//
// Peaks: AMD Instinct MI300X datasheet, dense figures (FP32 163.4, TF32 653.7, BF16/FP16 1,307.4,
// FP8 2,614.9 TFLOP/s). Memory: 192 GB HBM3, 5.3 TB/s. Infinity Fabric (xGMI): each GPU has 7
// links, one to each peer, 64 GB/s per direction each = 448 GB/s per direction in all. Network:
// one 400 Gb/s NIC per GPU, as in Azure's ND MI300X v5 (8 x 400 Gb/s NDR InfiniBand).
// How the efficiencies were chosen: docs/hardware.md.
#include "hardware/internal/datasheet_hardware.h"

namespace paraplan::hardware {
namespace {

constexpr TierSpec kMi300xTiers[] = {
    {.name = "xgmi", .domain_size = 8, .bandwidth_gb_s = 448, .latency_us = 3, .efficiency = 0.70},
    {.name = "infiniband", .domain_size = 0, .bandwidth_gb_s = gbit_s_to_gb_s(400), .latency_us = 5,
     .efficiency = 0.85},
};

constexpr Datasheet kMi300x{
    .profile =
        {
            .name = "mi300x",
            .gpus_per_node = 8,
            .tflops = {.fp32 = 163.4, .tf32 = 653.7, .bf16 = 1307.4, .fp16 = 1307.4, .fp8 = 2614.9},
            .memory_gb = 192,
            .memory_bandwidth_gb_s = 5300,
            .memory_efficiency = 0.80,
            .host_link_bandwidth_gb_s = 64,  // PCIe Gen5 x16: 128 GB/s both directions
            .gemm_efficiency_max = 0.45,
            .gemm_half_efficiency_gflop = std::nullopt,
            .gemm_efficiency_max_fp8 = 0.37,
            .gemm_efficiency_max_fp4 = std::nullopt,
            .attention_efficiency = 0.51,
            .attention_efficiency_flash2 = std::nullopt,
            .tiers = kMi300xTiers,
            .host_op_overhead_us = std::nullopt,
            .overlap_compute_slowdown = std::nullopt,
            .speed_variation = std::nullopt,
        },
    .description = "AMD Instinct MI300X 192GB, 8-GPU xGMI platform; AMD Instinct MI300X datasheet",
};

}  // namespace
}  // namespace paraplan::hardware

using Mi300xHardware = paraplan::hardware::DatasheetHardware<paraplan::hardware::kMi300x>;
PARAPLAN_PLUGIN(Mi300xHardware)
