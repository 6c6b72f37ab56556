/* paraplan/exporter.h: exporters (kind PP_KIND_EXPORTER, ABI 1.3).
 *
 * An exporter turns a finished plan into what a training engine or a network simulator needs to
 * run it: a launch script with the engine's flags, a job config, a per-rank trace. It writes
 * files through pp_artifact_sink_v1 (the host puts them in the output directory, or prints text
 * files on stdout) and reports whatever the engine cannot express, one line each; `paraplan
 * export --strict` turns such a report into exit code 1.
 *
 * Besides the plan (what each rank runs) an exporter sees the settings the plan was composed
 * from: every strategy with its degree and its parameters as text ("stage" = "3"), because engine
 * flags follow the strategies' settings more directly than the ops they produced.
 */
#ifndef PARAPLAN_EXPORTER_H
#define PARAPLAN_EXPORTER_H

#include "paraplan/abi.h"
#include "paraplan/hardware.h"
#include "paraplan/params.h"
#include "paraplan/plan.h"

typedef struct pp_export_setting {
  uint32_t struct_size;
  const char* key;
  const char* value; /* as the recipe would write it: 3, 0.5, true, interleaved-1f1b */
} pp_export_setting;

/* One strategy of the plan, in the order it was applied. */
typedef struct pp_export_strategy {
  uint32_t struct_size;
  const char* name;
  int64_t degree;
  const pp_export_setting* settings; /* every parameter of the strategy's schema, defaults filled in */
  uint32_t setting_count;
} pp_export_strategy;

typedef struct pp_export_context_v1 {
  uint32_t struct_size;
  const char* recipe_file; /* for comments in the artifacts */
  const char* model_name;  /* the preset's name, or "custom" */
  const pp_export_strategy* strategies;
  uint32_t strategy_count;
} pp_export_context_v1;

typedef struct pp_artifact_sink_v1 {
  uint32_t struct_size;
  void* context;
  /* A file of the export. `name` is relative ("launch_megatron.sh", "chakra/trace.0.et"), without
   * ".." or a leading "/"; `text` is nonzero for text files (the ones printed without --out). */
  void (*file)(void* context, const char* name, const void* data, uint64_t size, int32_t text);
  /* One thing the target cannot express, as one line: "HSDP: DeepSpeed has no hybrid sharding". */
  void (*unexpressed)(void* context, const char* message);
} pp_artifact_sink_v1;

enum {
  /* The exporter needs the plan's schedule steps (a per-rank trace); see PP_EXECUTOR_WALKS_SCHEDULE. */
  PP_EXPORTER_WALKS_SCHEDULE = 1u << 0,
  /* Its artifacts are binary or many files: it needs an output directory (--out). */
  PP_EXPORTER_NEEDS_DIRECTORY = 1u << 1
};

typedef struct pp_exporter_v1 {
  uint32_t struct_size;
  pp_status (*create)(const pp_param_set* params, void** instance, pp_error* error);
  void (*destroy)(void* instance);
  pp_status (*export_plan)(void* instance, const pp_plan_view_v1* plan, const pp_hardware_binding_v1* hardware,
                           const pp_export_context_v1* context, const pp_artifact_sink_v1* artifacts,
                           pp_error* error);
  uint32_t flags;
} pp_exporter_v1;

#endif /* PARAPLAN_EXPORTER_H */
