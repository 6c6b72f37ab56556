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
 * Search space (ABI 1.1): a strategy lists what `paraplan search` may try as search cases. Each
 * case fixes a range of degrees and, for some of its parameters, the values to try; the search
 * takes the cartesian product of a case's choices, every divisor of the GPU count within the
 * degree range, and the union over cases. A strategy without cases is searched only when a recipe
 * names it. Example, pipeline parallelism (two cases, so virtual stages go only with the
 * interleaved schedule):
 *   static const char* const kPlain[] = {"1f1b", "zero-bubble"};
 *   static const char* const kInterleaved[] = {"interleaved-1f1b"};
 *   static const char* const kChunks[] = {"2", "3", "4"};
 *   static const pp_search_choice kPlainChoices[] = {{sizeof(pp_search_choice), "schedule", kPlain, 2}};
 *   static const pp_search_choice kInterleavedChoices[] = {
 *     {sizeof(pp_search_choice), "schedule", kInterleaved, 1},
 *     {sizeof(pp_search_choice), "virtual_stages", kChunks, 3}};
 *   static const pp_search_case kCases[] = {{sizeof(pp_search_case), 2, 0, kPlainChoices, 1},
 *                                           {sizeof(pp_search_case), 2, 0, kInterleavedChoices, 2}};
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

/* pp_search_choice and pp_search_case come in arrays the host indexes with its own sizeof, like
 * pp_param_spec: they never grow within major version 1 (a later minor would add new arrays). */

/* One parameter a search case varies: the values to try, written as a recipe would write them
 * ("2", "true", "interleaved-1f1b", "0.5"); the host validates them against the schema. */
typedef struct pp_search_choice {
  uint32_t struct_size;
  const char* param;
  const char* const* values;
  uint32_t value_count;
} pp_search_choice;

/* One region of the search space. Parameters the case does not list keep their defaults. */
typedef struct pp_search_case {
  uint32_t struct_size;
  int64_t min_degree; /* >= 1; 2 for a strategy whose degree 1 means "not used" */
  int64_t max_degree; /* 0: no limit */
  const pp_search_choice* choices;
  uint32_t choice_count;
} pp_search_case;

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
  /* ABI 1.1: what `paraplan search` may try (NULL / 0: searched only when a recipe names it). */
  const pp_search_case* search_cases;
  uint32_t search_case_count;
} pp_strategy_v1;

/* The size of the ABI 1.0 table: a plugin built against 1.0 passes this as struct_size. */
#define PP_STRATEGY_V1_0_SIZE offsetof(pp_strategy_v1, search_cases)

#endif /* PARAPLAN_STRATEGY_H */
