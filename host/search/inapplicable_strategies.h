// paraplan/host/search/inapplicable_strategies.h: strategies a search leaves out because their
// own constraints refuse them whatever the plan (expert parallelism on a dense model).
//
// A strategy the recipe does not list is optional in the search. When its validate() refuses
// every option of it at every degree it could take, under every micro-batch and recomputation
// the search tries, it can never be part of a plan: it is dropped from the space before plans
// are counted, and reported once with its reason instead of once per candidate plan. A strategy
// the recipe lists is never dropped (its refusal is the recipe's error), nor the data-parallel
// slot.
#pragma once

#include <string>
#include <vector>

#include "host/recipe/recipe.h"
#include "host/search/search_space.h"

namespace paraplan::host {

struct SkippedStrategy {
  std::string name;
  std::string reason;  // the strategy's own message, at its smallest degree
};

std::vector<SkippedStrategy> drop_inapplicable_strategies(SearchSpace& space, const Recipe& recipe, int64_t gpus_per_node);

}  // namespace paraplan::host
