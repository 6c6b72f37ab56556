// plan_figures.h: the search's figures (pp_plan_figures) for one plan under many mesh layouts.
//
// The same model as run() (stage_cost.h, analytic.cc), reorganised for the search's inner loop:
// one pass over the ops sums each scope's phase costs, so a stage is a weighted sum of four
// scopes (not a walk over every op); stages of the same shape are priced once; everything but
// communication is priced once per plan, and only collectives and sends are re-priced per layout.
// tests/unit/search_figures_test.cc checks it against run() on every shipped recipe.
#pragma once

#include <cstdint>
#include <span>

#include "paraplan/executor.h"
#include "paraplan/sdk.hpp"

namespace analytic {

// `overhead_bytes`: the runtime overhead every GPU loses (the executor's runtime_overhead_gib).
void plan_figures(const paraplan::PlanView& plan, const pp_hardware_binding_v1& hardware, double overhead_bytes,
                  std::span<const int64_t> strides, uint32_t layouts, pp_plan_figures* figures);

}  // namespace analytic
