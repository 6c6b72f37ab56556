/* paraplan/abi.h: version, status codes and the basic types shared by every SDK header.
 *
 * The SDK's binary contract is plain C: fixed-width integers, doubles, `const char*` and
 * function pointers. Every struct begins with `struct_size` so the host can tell which fields a
 * plugin knows; fields are only ever appended within one major version. A new major version is
 * a new entry point (`paraplan_plugin_v2`) and a new set of `_v2` structs.
 *
 * Compatibility rule (checked by the host at load time):
 *   plugin.abi_major == PP_ABI_MAJOR  and  plugin.abi_minor <= host's PP_ABI_MINOR
 *
 * History: 1.0 the first release; 1.1 appends the search space to pp_strategy_v1 and the
 * batched figures function to pp_executor_v1 (a 1.0 plugin loads unchanged: the host reads an
 * appended field only when the plugin's struct_size covers it); 1.2 appends the FP8 GEMM plateau
 * to pp_hardware_profile (an older hardware plugin's profile leaves it 0: the bf16 plateau); 1.3
 * adds the exporter kind (exporter.h) and appends its table to pp_plugin_v1; 1.4 appends the
 * machine measurement (calibrate) to pp_executor_v1; 1.5 adds the host services (host.h:
 * logging) and appends attach_host to pp_plugin_v1; 1.6 adds the layer stack (model.h:
 * pp_layer_kind; pp_model, pp_plan_view_v1 and pp_plan_api_v1 appended); 1.7 adds a value to an
 * enum (pp_attention_kernel TRITON), no struct grows; 1.8 adds torchtitan's op policy
 * (pp_recompute_module TORCHTITAN_OP), eager kernels, FP8 attention and fused MoE MLPs (pp_training
 * elementwise_kernels, fp8_attention, moe_fused_mlp appended) and an NVFP4 GEMM plateau
 * (pp_hardware_profile gemm_efficiency_max_fp4 appended).
 * abi_history.h has every minor's struct sizes.
 */
#ifndef PARAPLAN_ABI_H
#define PARAPLAN_ABI_H

#include <stddef.h>
#include <stdint.h>

#define PP_ABI_MAJOR 1
#define PP_ABI_MINOR 8

#ifdef __cplusplus
#define PP_EXTERN_C extern "C"
#else
#define PP_EXTERN_C
#endif

#if defined(_WIN32)
#define PP_EXPORT __declspec(dllexport)
#else
#define PP_EXPORT __attribute__((visibility("default")))
#endif

/* Status codes returned by every plugin function that can fail. A non-zero status comes with a
 * human-readable message that the plugin wrote into the host's pp_error buffer. */
typedef enum pp_status {
  PP_OK = 0,
  PP_ERROR_INVALID_ARGUMENT = 1, /* a parameter or input value is malformed */
  PP_ERROR_CONSTRAINT = 2,       /* valid input, but this plan is impossible (e.g. tp ∤ heads) */
  PP_ERROR_UNSUPPORTED = 3,      /* the plugin cannot handle this model/plan feature */
  PP_ERROR_INTERNAL = 4          /* a bug or an unexpected exception inside the plugin */
} pp_status;

/* A host-owned buffer the plugin writes its error message into (NUL-terminated, truncated to
 * fit). Plugins never allocate memory that the host must free. */
typedef struct pp_error {
  uint32_t struct_size;
  char* message;
  size_t capacity;
} pp_error;

typedef enum pp_plugin_kind {
  PP_KIND_STRATEGY = 1, /* transforms a plan along one mesh axis (see strategy.h) */
  PP_KIND_HARDWARE = 2, /* describes a GPU and its interconnect (see hardware.h) */
  PP_KIND_EXECUTOR = 3, /* turns a plan plus hardware into results (see executor.h) */
  PP_KIND_EXPORTER = 4  /* writes a plan in a training engine's terms (see exporter.h; ABI 1.3) */
} pp_plugin_kind;

typedef enum pp_dtype {
  PP_DTYPE_FP32 = 0,
  PP_DTYPE_TF32 = 1,
  PP_DTYPE_BF16 = 2,
  PP_DTYPE_FP16 = 3,
  PP_DTYPE_FP8 = 4,
  PP_DTYPE_COUNT = 5, /* the dtypes pp_hardware_profile.peak_flops indexes; later ones have fields */
  /* ABI 1.6: block-scaled formats (their peaks: pp_hardware_profile.peak_flops_mxfp8, _nvfp4) */
  PP_DTYPE_MXFP8 = 5, /* E4M3 elements, one E8M0 scale per 32 (OCP Microscaling) */
  PP_DTYPE_NVFP4 = 6  /* E2M1 elements, one E4M3 scale per 16 and an fp32 scale per tensor */
} pp_dtype;

#endif /* PARAPLAN_ABI_H */
