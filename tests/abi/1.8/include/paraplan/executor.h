/* paraplan/executor.h: executors (kind PP_KIND_EXECUTOR).
 *
 * An executor turns a finished plan plus a hardware binding into results: the analytic executor
 * sums closed-form costs, a simulator replays the schedule, a real executor runs it. Results go
 * back through pp_result_sink_v1 as dotted keys ("time.step_s", "memory.fits"), which the host
 * turns into its JSON and text reports; keys are documented by each executor.
 */
#ifndef PARAPLAN_EXECUTOR_H
#define PARAPLAN_EXECUTOR_H

#include "paraplan/abi.h"
#include "paraplan/hardware.h"
#include "paraplan/params.h"
#include "paraplan/plan.h"

typedef struct pp_result_sink_v1 {
  uint32_t struct_size;
  void* context;
  void (*number)(void* context, const char* key, double value);
  void (*boolean)(void* context, const char* key, int32_t value);
  void (*text)(void* context, const char* key, const char* value);
} pp_result_sink_v1;

enum {
  /* The executor walks the plan's schedule steps (a simulator, a real executor). Without this
   * flag the host tells strategies they may skip listing them: a closed-form executor needs
   * only the pipeline's summary, and listing p·m·2 steps dominates a large plan's evaluation. */
  PP_EXECUTOR_WALKS_SCHEDULE = 1u << 0
};

/* The figures `paraplan search` ranks candidates by (ABI 1.1). */
typedef struct pp_plan_figures {
  uint32_t struct_size;
  double step_s;               /* one optimizer step */
  double memory_per_gpu_bytes; /* the most loaded GPU */
  double memory_capacity_bytes;
  double tokens_per_s_per_gpu;
  double mfu;                  /* model FLOPs utilisation, 0..1 */
} pp_plan_figures;

typedef struct pp_executor_v1 {
  uint32_t struct_size;
  pp_status (*create)(const pp_param_set* params, void** instance, pp_error* error);
  void (*destroy)(void* instance);
  pp_status (*run)(void* instance, const pp_plan_view_v1* plan,
                   const pp_hardware_binding_v1* hardware, const pp_result_sink_v1* results,
                   pp_error* error);
  uint32_t flags;
  /* ABI 1.1, optional (NULL: the host calls run() once per layout and reads the same figures
   * from its keys). The search's inner loop: figures for one plan under `layout_count` mesh
   * layouts at once. Layout i gives every axis's stride: strides[i * plan->axis_count + axis]
   * (the plan's own strides are ignored). Memory does not depend on the layout; with
   * layout_count == 0 only figures[0]'s memory fields are filled, so the host can reject a plan
   * that does not fit before it times any layout. */
  pp_status (*evaluate)(void* instance, const pp_plan_view_v1* plan, const pp_hardware_binding_v1* hardware,
                        const int64_t* strides, uint32_t layout_count, pp_plan_figures* figures,
                        pp_error* error);
  /* ABI 1.4, optional (NULL: the executor does not run on a real machine). Measures the machine
   * the executor runs plans on, the way it runs them (matrix multiplies, memory bandwidth, each
   * collective per group size), and reports figures under "calibration.*" and the measured
   * hardware profile, in the `toml` hardware plugin's format, as the text "calibration.profile"
   * (`paraplan calibrate` writes it to a file that recipes name as their hardware). */
  pp_status (*calibrate)(void* instance, const pp_result_sink_v1* results, pp_error* error);
} pp_executor_v1;

/* The size of the ABI 1.0 table: a plugin built against 1.0 passes this as struct_size. */
#define PP_EXECUTOR_V1_0_SIZE offsetof(pp_executor_v1, evaluate)

#endif /* PARAPLAN_EXECUTOR_H */
