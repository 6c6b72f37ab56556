/* paraplan/abi_history.h: every released minor of ABI 1, and the size each struct had in it.
 *
 * A plugin says which minor it was built against (pp_plugin_v1.abi_minor). Every struct it hands
 * the host is at least as large as in that minor, and the host reads a field appended by a later
 * minor only when the plugin's minor and its struct_size both cover it. These macros are that
 * history as data: the host's loader checks a plugin's tables against its own minor's sizes
 * (host/plugin/abi_history.h holds them as one table), docs/sdk.md prints the table, and
 * tests/abi builds a plugin of every kind against each released minor's frozen headers, loads and
 * runs it, and checks the sizes those headers give against this file.
 *
 * Sizes are offsets into today's structs, so they hold on every platform the headers compile on.
 * A struct that never grew has one size for every minor (sizeof). Arrays a plugin hands the host
 * (pp_param_spec, pp_search_case, pp_search_choice, pp_plan_figures) are indexed with the host's
 * sizeof and never grow within major 1.
 *
 * Adding a minor: append its fields, add a PP_<STRUCT>_SIZE_1_<minor> macro for each struct that
 * grew, a row in host/plugin/abi_history.cc, a frozen copy of the headers under tests/abi/1.<minor>
 * and a line below.
 *
 *   1.0  the first release
 *   1.1  pp_strategy_v1 += search_cases, search_case_count; pp_executor_v1 += evaluate
 *   1.2  pp_hardware_profile += gemm_efficiency_max_fp8
 *   1.3  the exporter kind (exporter.h); pp_plugin_v1 += exporter
 *   1.4  pp_executor_v1 += calibrate
 *   1.5  the host services (host.h: logging); pp_plugin_v1 += attach_host; the plan's names (names.h)
 *   1.6  the layer stack: pp_layer_kind (model.h); pp_model += layer_kinds ... norm_epsilon;
 *        pp_plan_view_v1 += op_layer_kinds ... layer_count_entries; pp_plan_api_v1 +=
 *        insert_layer_op, add_layer_memory, set_layer_counts (structs the host hands plugins);
 *        pp_dtype += MXFP8, NVFP4; pp_hardware_profile += peak_flops_mxfp8, peak_flops_nvfp4,
 *        host_op_overhead_s, attention_efficiency_flash2, overlap_compute_slowdown,
 *        speed_variation; pp_training +=
 *        recompute_modules, cuda_graph_modules, master_weights, attention_kernel,
 *        recompute_num_layers, cpu_offloading_num_layers
 *   1.7  pp_attention_kernel += TRITON (no struct grew; the host refuses that kernel to an older
 *        plugin, which would price it as the tuned one)
 *   1.8  pp_recompute_module += TORCHTITAN_OP; pp_training += elementwise_kernels (a struct the host
 *        hands plugins); the host refuses either to an older executor or exporter, which would read
 *        the first as Megatron-LM's modules and not know the second; pp_training += fp8_attention,
 *        moe_fused_mlp (refused to an older executor or exporter likewise); pp_hardware_profile +=
 *        gemm_efficiency_max_fp4
 */
#ifndef PARAPLAN_ABI_HISTORY_H
#define PARAPLAN_ABI_HISTORY_H

#include <stddef.h>

#include "paraplan/plugin.h"

/* A minor's size of a struct is where the first field a later minor appended begins, or today's
 * sizeof when nothing was appended since: the sizeof a plugin built against that minor reports. */
#define PP_PLUGIN_V1_SIZE_1_0 offsetof(pp_plugin_v1, exporter)
#define PP_PLUGIN_V1_SIZE_1_3 offsetof(pp_plugin_v1, attach_host)
#define PP_PLUGIN_V1_SIZE_1_5 sizeof(pp_plugin_v1)

#define PP_STRATEGY_V1_SIZE_1_0 offsetof(pp_strategy_v1, search_cases)
#define PP_STRATEGY_V1_SIZE_1_1 sizeof(pp_strategy_v1)

#define PP_EXECUTOR_V1_SIZE_1_0 offsetof(pp_executor_v1, evaluate)
#define PP_EXECUTOR_V1_SIZE_1_1 offsetof(pp_executor_v1, calibrate)
#define PP_EXECUTOR_V1_SIZE_1_4 sizeof(pp_executor_v1)

#define PP_HARDWARE_PROFILE_SIZE_1_0 offsetof(pp_hardware_profile, gemm_efficiency_max_fp8)
#define PP_HARDWARE_PROFILE_SIZE_1_2 offsetof(pp_hardware_profile, peak_flops_mxfp8)
#define PP_HARDWARE_PROFILE_SIZE_1_6 offsetof(pp_hardware_profile, gemm_efficiency_max_fp4)
#define PP_HARDWARE_PROFILE_SIZE_1_8 sizeof(pp_hardware_profile)

#endif /* PARAPLAN_ABI_HISTORY_H */
