// paraplan/host/search/search_engine.h: every candidate of a search space, evaluated and ranked.
//
// A candidate plan is one option per strategy slot with a degree for each, a micro-batch size and
// a recomputation mode (search_space.h); each plan is timed under every order of its mesh axes on
// the hardware tiers (its layouts) and ranks by its best one. The engine reaches a million
// evaluations a second per core by crossing the plugin boundary less, not differently:
//   - strategies are applied in order as a tree: the plan after the first k strategies is saved
//     and restored for every option of strategy k+1, so a prefix is applied once, not once per
//     plan below it;
//   - a plan's memory is asked for first (pp_executor_v1.evaluate with no layouts) and a plan
//     that does not fit is rejected before any layout is timed;
//   - all layouts of a plan are timed in one call, which prices computation once.
// Work is split by (degrees, micro-batch, recompute) over threads; results merge in enumeration
// order, so the ranking does not depend on the thread count.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "host/plan/composer.h"
#include "host/search/inapplicable_strategies.h"
#include "host/search/search_space.h"
#include "paraplan/executor.h"
#include "paraplan/hardware.h"

namespace paraplan::host {

enum class Objective { kThroughput, kMemory, kTimeToTrain };

struct SearchSettings {
  Objective objective = Objective::kThroughput;
  size_t top = 10;
  double memory_headroom = 0.10;  // a plan must fit in (1 - headroom) x the GPU's memory
  unsigned threads = 0;           // 0: every core
  std::string executor = "analytic";
  // Keep the Pareto front of step time against memory and a thinned cloud of every timed plan
  // (candidate_map.h), for the HTML page's scatter.
  bool map_candidates = false;
  // Called from the calling thread about ten times a second: plans done, plans in all.
  std::function<void(uint64_t done, uint64_t total)> progress;
};

// A plan the search kept, with what it takes to build it again.
struct RankedPlan {
  pp_plan_figures figures{};
  uint64_t index = 0;                 // enumeration order; ties rank by it
  std::vector<int64_t> degrees;       // per slot; 0: the strategy is not used
  std::vector<uint32_t> options;      // per slot: index into StrategySlot::options
  std::vector<std::string> axes;      // per slot: the mesh axis its degree spans, where named otherwise (Plan::axis_named_otherwise)
  int64_t micro_batch = 1;
  pp_recompute recompute = PP_RECOMPUTE_NONE;
  int64_t recompute_num_layers = 0;     // full recomputation of each chunk's first N layers; 0: all
  std::vector<std::string> mesh_order;  // top-level axes innermost first
  uint32_t layouts = 0;                 // layouts timed for this plan
};

// One cell of the map of timed plans (candidate_map.h).
struct MappedCell {
  RankedPlan plan;     // the cell's first plan in enumeration order
  uint64_t plans = 0;  // timed plans in the cell
};

struct Rejection {
  uint64_t plans = 0;
  std::string example;  // the first such rejection in enumeration order
  uint64_t example_index = UINT64_MAX;
};

struct SearchResult {
  SearchSpace space;
  std::vector<RankedPlan> top;  // best first
  // With SearchSettings::map_candidates: the Pareto front of step time against memory (least
  // memory first) and one plan per cell of a log grid over the two, with its cell's count.
  std::vector<RankedPlan> front;
  std::vector<MappedCell> cells;
  uint64_t plans = 0;           // every candidate plan
  uint64_t valid_plans = 0;     // fit in memory and were timed
  uint64_t priced_plans = 0;    // reached the executor: its memory check, then timed or over memory
  uint64_t layouts = 0;         // (plan, layout) evaluations timed
  std::map<std::string, Rejection> rejected;  // by reason: "memory", "batch", "mesh" or a strategy's name
  std::vector<SkippedStrategy> skipped;       // unlisted strategies that can be in no plan, left out
  double smallest_rejected_memory_bytes = 0;  // among plans rejected for memory
  double usable_memory_bytes = 0;             // capacity x (1 - headroom)
  pp_hardware_profile hardware_profile{};      // the recipe's hardware as described
  int64_t gpus_per_node = 0;                   // as the plans were laid out
  double seconds = 0;
  unsigned threads = 1;
};

SearchResult run_search(const Recipe& recipe, const PluginCatalog& catalog, const SearchSettings& settings);

// A ranked plan composed again, for its full evaluate report (execution.h).
ComposedPlan compose_ranked(const Recipe& recipe, const PluginCatalog& catalog, const SearchResult& result,
                            const RankedPlan& plan, bool wants_schedule);

// "tp=8 pp=8 (schedule=1f1b) fsdp=8 (stage=1)".
std::string describe_strategies(const SearchSpace& space, const RankedPlan& plan);
// The strategies, then "; micro_batch 1, recompute selective, mesh tp-pp-fsdp".
std::string ranked_plan_text(const SearchSpace& space, const RankedPlan& plan);
const char* recompute_name(pp_recompute recompute);
// "none", "selective", "full" or "full, first 3 layers of each chunk".
std::string recompute_text(const RankedPlan& plan);

}  // namespace paraplan::host
