// paraplan/host/search/search_space.h: what `paraplan search` may vary, from a recipe and the
// loaded strategy plugins.
//
// A slot is one decision: which option of a strategy to use (or none). An option is a plugin with
// one assignment of its parameters and the degrees it accepts. Where options come from:
//   - a strategy the recipe lists: its written keys (a scalar pins a value, an array is the set to
//     try), crossed with the plugin's search cases for the keys it leaves out; it is always used;
//   - a strategy the recipe does not list but whose plugin declares search cases (strategy.h): the
//     cases' options, or leaving it out (only those SearchChoices::unlisted_tried names, when set:
//     `paraplan validate` tries just what a measured run left unpublished);
//   - data parallelism: the strategies that take the remaining GPUs form one slot, exactly one of
//     them used (the recipe's, else every one with search cases, else the default one).
// Micro-batch sizes, recomputation and whether the mesh order is searched come from the recipe's
// [training] and [cluster] (recipe.h, SearchChoices).
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "host/plugin/plugin_catalog.h"
#include "host/recipe/recipe.h"

namespace paraplan::host {

struct StrategyOption {
  const LoadedPlugin* plugin = nullptr;  // null: the strategy is not used
  // The parameter values it sets (the rest keep their defaults): nodes of the recipe, which keep
  // their file position for messages, or of the plugin's search cases (kept alive in `owned`).
  std::vector<std::pair<std::string, const toml::node*>> values;
  std::vector<std::shared_ptr<const toml::node>> owned;
  std::string key_path;                  // for messages: "strategy[1]" or "search case 2 of 'pp'"
  std::vector<int64_t> degrees;          // the degrees it takes; empty: any within [min, max]
  int64_t min_degree = 1, max_degree = 0;
  std::string label;                     // "schedule=1f1b" (the keys that vary), for reports

  bool absent() const { return plugin == nullptr; }
  bool accepts(int64_t degree) const;
};

struct StrategySlot {
  std::string name;     // the strategy's name, or "data parallelism" for the remainder takers
  int32_t apply_order = 0;
  uint32_t flags = 0;   // PP_STRATEGY_* shared by every option of the slot
  std::vector<StrategyOption> options;
};

struct SearchSpace {
  std::vector<StrategySlot> slots;  // ascending apply order
  std::vector<int64_t> micro_batches;
  std::vector<pp_recompute> recomputes;
  // Full recomputation of only some layers is tried too (the fewest per chunk that fit): the
  // recipe searches recompute (absent, "auto" or a set with "full") and does not fix
  // training.recompute_num_layers.
  bool partial_recompute = false;
  bool search_mesh_order = true;
};

// Throws InputError for a recipe or plugin search case that names unknown keys or bad values.
SearchSpace build_search_space(const Recipe& recipe, const PluginCatalog& catalog);

// Micro-batch sizes tried when the recipe leaves them open: powers of two up to this that divide
// the global batch.
inline constexpr int64_t kLargestSearchedMicroBatch = 16;

// "1", "0.5", "true", "1f1b": a TOML scalar as a recipe would write it (strings unquoted).
std::string scalar_text(const toml::node& node);

}  // namespace paraplan::host
