/* paraplan/hardware.h: hardware profiles (kind PP_KIND_HARDWARE).
 *
 * A hardware plugin describes one GPU model and its interconnect as data (pp_hardware_profile),
 * and may override the default cost functions with its own (gemm_time, collective_time), e.g.
 * from a measured lookup table. Executors receive the profile and the callbacks through
 * pp_hardware_binding_v1; strategies never see hardware.
 *
 * Tiers are ordered from the innermost (NVLink / xGMI domain) to the outermost (scale-out
 * network). A group of ranks spans tier i when it does not fit in one domain of tier i-1.
 */
#ifndef PARAPLAN_HARDWARE_H
#define PARAPLAN_HARDWARE_H

#include "paraplan/abi.h"
#include "paraplan/params.h"
#include "paraplan/plan.h"

#define PP_MAX_TIERS 4
#define PP_TIER_NAME_CAPACITY 24

typedef struct pp_tier {
  uint32_t struct_size;
  char name[PP_TIER_NAME_CAPACITY];
  int64_t domain_size;          /* GPUs reachable inside one domain of this tier; 0 = unbounded */
  double bandwidth_bytes_per_s; /* per GPU, per direction, as the datasheet states it */
  double latency_s;             /* per message (the alpha of the alpha-beta model) */
  double efficiency;            /* achievable fraction of bandwidth_bytes_per_s (bus bandwidth) */
} pp_tier;

typedef struct pp_hardware_profile {
  uint32_t struct_size;
  char name[PP_NAME_CAPACITY];
  double peak_flops[PP_DTYPE_COUNT]; /* dense, per GPU; 0 where the dtype is unsupported */
  double memory_bytes;               /* HBM capacity per GPU */
  double memory_bandwidth_bytes_per_s;
  double memory_efficiency;          /* achievable fraction of HBM bandwidth */
  int64_t gpus_per_node;
  /* Achievable GEMM efficiency: gemm_efficiency_max * flops / (flops + gemm_half_efficiency_flops),
   * i.e. small GEMMs are launch/latency bound, large ones approach the maximum. */
  double gemm_efficiency_max;
  double gemm_half_efficiency_flops;
  double attention_efficiency;       /* fused attention kernels, fraction of peak */
  uint32_t tier_count;
  pp_tier tiers[PP_MAX_TIERS];
  double host_link_bandwidth_bytes_per_s; /* GPU <-> CPU memory per GPU per direction (PCIe/C2C) */
  /* ABI 1.2: gemm_efficiency_max for FP8 GEMMs, which reach a smaller fraction of their peak;
   * 0 (and every 1.0/1.1 plugin, whose profile ends before this field) = gemm_efficiency_max. */
  double gemm_efficiency_max_fp8;
  /* ABI 1.6: dense peaks of the block-scaled formats (PP_DTYPE_MXFP8, PP_DTYPE_NVFP4), which
   * need tensor cores of their own (Blackwell and later); 0 (and every profile of a plugin older
   * than 1.6) = the GPU has none, and a recipe asking for one is refused. Their GEMMs reach
   * gemm_efficiency_max_fp8 (NVFP4's gemm_efficiency_max_fp4 where declared, ABI 1.8). */
  double peak_flops_mxfp8;
  double peak_flops_nvfp4;
  /* ABI 1.6: host seconds to issue one op of the plan eagerly (a framework module call: Python,
   * autograd, its kernels' launches); the GPU waits when the host falls behind (host_issue.hpp).
   * 0 (and every profile of a plugin older than 1.6) = issuing is free. */
  double host_op_overhead_s;
  /* ABI 1.6: attention_efficiency for FlashAttention-2-class kernels (pp_attention_kernel FLASH2),
   * on the same FLOPs; 0 (and every profile of a plugin older than this field) = the GPU runs
   * them as fast as its tuned kernel (true on Ampere, where FlashAttention-2 is that kernel). */
  double attention_efficiency_flash2;
  /* ABI 1.6: how much slower compute runs while overlapped communication runs beside it on the
   * same GPU (NCCL's kernels take SMs and HBM bandwidth from the GEMMs they hide behind): 0.2 =
   * 20 % slower. 0 (and every profile of a plugin older than this field) = overlap is free. */
  double overlap_compute_slowdown;
  /* ABI 1.6: how much one GPU's sustained speed varies across a fleet of the same part, as a
   * coefficient of variation (manufacturing and power management: Sinha et al., SC22, measured
   * about 8 % between the fastest and slowest GPUs of a cluster). A synchronous step runs at its
   * slowest GPU's pace: on N GPUs its compute is speed_variation x E[max of N standard normals]
   * slower (cost_model.hpp, slowest_gpu_factor). 0 (and every profile of a plugin older than
   * this field) = identical GPUs. */
  double speed_variation;
  /* ABI 1.8: gemm_efficiency_max_fp8 for NVFP4 GEMMs, whose plateau need not follow FP8's (on
   * the GB300 its peak grew 1.5x over the GB200's while FP8's did not); 0 (and every profile of a
   * plugin older than 1.8) = gemm_efficiency_max_fp8. */
  double gemm_efficiency_max_fp4;
} pp_hardware_profile;

typedef struct pp_hardware_v1 {
  uint32_t struct_size;
  pp_status (*create)(const pp_param_set* params, void** instance, pp_error* error);
  void (*destroy)(void* instance);
  pp_status (*describe)(void* instance, pp_hardware_profile* profile, pp_error* error);
  /* Optional (NULL = use the SDK's default model). Seconds for one GEMM on one GPU. */
  pp_status (*gemm_time)(void* instance, double m, double n, double k, pp_dtype dtype,
                         double* seconds, pp_error* error);
  /* Optional (NULL = default alpha-beta model). Seconds for one collective of `bytes` over
   * `group_size` ranks whose neighbours are `stride` ranks apart. */
  pp_status (*collective_time)(void* instance, pp_collective kind, double bytes,
                               int64_t group_size, int64_t stride, double* seconds,
                               pp_error* error);
} pp_hardware_v1;

/* What an executor receives: the described profile plus the cost functions and the instance to
 * call them with. The host hands out its own checked copies (a time that is not finite or is
 * negative becomes an error status), so call only gemm_time, collective_time and describe (which
 * returns the profile again) through it, with `instance`; create and destroy are NULL. */
typedef struct pp_hardware_binding_v1 {
  uint32_t struct_size;
  const pp_hardware_profile* profile;
  const pp_hardware_v1* functions;
  void* instance;
} pp_hardware_binding_v1;

#endif /* PARAPLAN_HARDWARE_H */
