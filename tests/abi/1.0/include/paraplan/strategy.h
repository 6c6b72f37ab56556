/* paraplan/strategy.h: parallelism strategies (kind PP_KIND_STRATEGY).
 *
 * A strategy owns (at most) one kind of mesh axis and transforms the plan for it: validate the
 * constraints, divide work and memory, insert communication, and for pipelines set the layout and
 * schedule. The host applies strategies in ascending `apply_order` (EP 10, TP 20, SP/CP 30,
 * PP 40, data-parallel family 50), each exactly once.
 *
 * Degrees: the recipe's `degree` key is understood by the host for every strategy. The product
 * of the degrees of strategies without PP_STRATEGY_SUBDIVIDES_DATA must equal the GPU count; a
 * strategy flagged PP_STRATEGY_TAKES_REMAINDER may omit its degree and receives the quotient.
 * When no such strategy is in the recipe, the host adds the loaded strategy flagged
 * PP_STRATEGY_DEFAULT_DATA_PARALLEL with its default parameters.
 *
 * Before any strategy runs, the host fixes the data-parallel size (the product of the degrees of
 * strategies flagged PP_STRATEGY_SPLITS_BATCH) and the number of micro-batches per step,
 * global_batch / (micro_batch * data_parallel_size), so a pipeline strategy can rely on it.
 */
#ifndef PARAPLAN_STRATEGY_H
#define PARAPLAN_STRATEGY_H

#include "paraplan/abi.h"
#include "paraplan/params.h"
#include "paraplan/plan.h"

enum {
  PP_STRATEGY_TAKES_REMAINDER = 1u << 0,       /* degree may be omitted: gets the GPUs left */
  PP_STRATEGY_DEFAULT_DATA_PARALLEL = 1u << 1, /* added when a recipe names no remainder taker */
  PP_STRATEGY_SUBDIVIDES_DATA = 1u << 2,       /* degree is carved out of the data axis */
  PP_STRATEGY_SPLITS_BATCH = 1u << 3           /* its ranks process different samples */
};

/* What the host resolved for this strategy instance. */
typedef struct pp_strategy_context {
  uint32_t struct_size;
  int64_t degree; /* resolved degree (>= 1) */
  const pp_model* model;
  const pp_training* training;
  const pp_cluster* cluster;
  int32_t wants_schedule; /* 0: the executor ignores schedule steps; a pipeline may skip them */
} pp_strategy_context;

typedef struct pp_strategy_v1 {
  uint32_t struct_size;
  int32_t apply_order;
  uint32_t flags;
  pp_status (*create)(const pp_param_set* params, void** instance, pp_error* error);
  void (*destroy)(void* instance);
  /* Checks the constraints that need no plan (divisibility, ranges against the model). */
  pp_status (*validate)(void* instance, const pp_strategy_context* context, pp_error* error);
  /* Transforms the plan. */
  pp_status (*apply)(void* instance, const pp_strategy_context* context,
                     const pp_plan_api_v1* plan, pp_error* error);
} pp_strategy_v1;

#endif /* PARAPLAN_STRATEGY_H */
