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

typedef struct pp_executor_v1 {
  uint32_t struct_size;
  pp_status (*create)(const pp_param_set* params, void** instance, pp_error* error);
  void (*destroy)(void* instance);
  pp_status (*run)(void* instance, const pp_plan_view_v1* plan,
                   const pp_hardware_binding_v1* hardware, const pp_result_sink_v1* results,
                   pp_error* error);
  uint32_t flags;
} pp_executor_v1;

#endif /* PARAPLAN_EXECUTOR_H */
