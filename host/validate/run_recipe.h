// paraplan/host/validate/run_recipe.h: a measured run as a search recipe.
//
// Everything the row publishes is pinned; each blank knob (micro_batch, vpp, recompute,
// sequence_parallel, zero_stage) is left to `paraplan search`, so the prediction is the best
// plan with the published settings held fixed, as the experts who tuned the run would have found.
// The recipe lists the strategies the row implies and no other is tried, except sp (Megatron
// sequence parallelism, with and without) when sequence_parallel is blank and tp > 1. The mesh
// order is Megatron-LM's, the layout the published runs used.
//
// Example: narayanan21-t1-3.6b (tp 2, pp 1, dp 32, ZeRO 0, full recompute, micro_batch and vpp
// blank) becomes [training] with no micro_batch (searched), tp degree 2, no pp table, and fsdp
// degree 32 stage 0.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "host/recipe/recipe.h"
#include "host/validate/measured_runs.h"

namespace paraplan::host {

// "published.csv:12 (row narayanan21-t1-1.7b)": how messages about the row's recipe begin.
std::string run_recipe_name(const MeasuredRun& run);

// The row as search-recipe TOML. Throws PlanError for a row no plan can express: degrees whose
// product is not num_gpus, ep not dividing dp, vpp without pp, or Megatron sequence parallelism
// with context parallelism (which the bundled sp strategy cannot combine yet).
std::string run_recipe_text(const MeasuredRun& run);

// The unlisted strategies the search may try (the recipe's [search] try_unlisted): {"sp"} when
// sequence_parallel is blank, tp > 1 and cp = 1; else none.
std::vector<std::string> unlisted_strategies_tried(const MeasuredRun& run);

// run_recipe_text, read as a search recipe. Throws InputError or PlanError (messages begin
// with run_recipe_name).
std::unique_ptr<Recipe> run_recipe(const MeasuredRun& run);

}  // namespace paraplan::host
