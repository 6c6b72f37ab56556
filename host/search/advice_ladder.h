// paraplan/host/search/advice_ladder.h: the practitioners' rule-of-thumb ladder, climbed rung by
// rung through the ordinary evaluate path, for `paraplan advise`.
//
// The seed article's rules of thumb: start with FSDP-3; add TP when FSDP communication efficiency
// drops below 80 %; add PP when TP would exceed 8 GPUs; add SP when the sequence exceeds 128K;
// FSDP-1 up to 128 GPUs, FSDP-2 up to 256, FSDP-3 up to 512, hybrid sharding or 3D beyond.
// As climbed here (every rung is a recipe of the bundled strategies fsdp, hsdp, tp, sp and pp,
// composed and evaluated exactly as `paraplan evaluate` would):
//   0. sequence: seq_len > 131072 adds sp mode "ring" (context parallelism) of degree
//      ceil(seq_len / 131072) rounded up to a power of two, on every rung;
//   1. data parallelism by the GPUs it spans, d: d <= 128 fsdp stage 1, <= 256 stage 2, <= 512
//      stage 3, beyond that hsdp stage 3 (hybrid sharding). A plan that does not fit raises the
//      stage up to 3 ("start with FSDP-3"); one that still does not fit takes recomputation
//      (selective, then full) unless the recipe writes training.recompute;
//   2. a plan that fits with FSDP communication efficiency
//          time.compute_s / (time.compute_s + time.exposed_comm_s.<fsdp or hsdp>) >= 0.80
//      ends the ladder. Otherwise TP is added within a node, 2, 4, 8 (at most the node's GPUs),
//      with sp mode "megatron" alongside (when the sp entry is not taken by ring attention);
//      each TP degree settles its data-parallel stage and recomputation as in 1;
//   3. still not there at the largest TP: PP of degree 2, 4, 8, ... (schedule 1f1b, trim_ends
//      so any layer count works) on top of it, settled the same way;
//   4. no rung both fits and reaches 80 %: the last rung that fits is the advice; none fits: the
//      last rung evaluated, marked as not fitting.
// A rung whose plan does not compose (a plugin constraint, a batch that does not divide) is
// skipped with its reason. micro_batch is the recipe's (1 when absent); the recipe's [[strategy]]
// list is not used.
//
// Example:
//   LadderResult ladder = climb_ladder(*recipe, catalog, LadderSettings{});
//   const LadderStep& advice = ladder.steps[*ladder.final_step];
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "host/plugin/plugin_catalog.h"
#include "host/recipe/recipe.h"
#include "host/report/result_tree.h"

namespace paraplan::host {

// The numbers the rules name.
inline constexpr double kLadderEfficiencyTarget = 0.80;
inline constexpr int64_t kLadderTensorParallelLimit = 8;
inline constexpr int64_t kLadderContextChunk = 131072;  // "128K" tokens per context-parallel rank
inline constexpr int64_t kLadderStage1Gpus = 128, kLadderStage2Gpus = 256, kLadderStage3Gpus = 512;

struct LadderSettings {
  double memory_headroom = 0.10;  // a plan fits in (1 - headroom) x the GPU's memory, as in search
  std::string executor = "analytic";
  std::vector<std::filesystem::path> model_directories;  // as RecipeReaderOptions
};

// One rung's composition; the data-parallel degree is what the others leave.
struct LadderPlan {
  std::string data_parallel = "fsdp";  // "fsdp" or "hsdp"
  int64_t stage = 1;
  int64_t tp = 1, pp = 1, cp = 1;
  int64_t data_parallel_degree = 1;
  int64_t micro_batch = 1;
  pp_recompute recompute = PP_RECOMPUTE_NONE;

  // "fsdp=64 (stage 1)", "tp=8 sp (megatron) pp=2 (1f1b) fsdp=4 (stage 1)"; recompute after "; ".
  std::string describe() const;
  // Its [[strategy]] tables, as a recipe would write them.
  std::string strategy_tables() const;
};

struct LadderFigures {
  double step_s = 0, compute_s = 0, exposed_data_parallel_comm_s = 0;
  double memory_per_gpu_bytes = 0, mfu = 0, tokens_per_s_per_gpu = 0;

  // compute / (compute + the data-parallel strategy's exposed communication).
  double efficiency() const;
};

struct LadderStep {
  std::string rule;    // the rule that chose this rung: "size", "stage", "recompute", "tp", "pp"
  std::string reason;  // why, with the figures it turned on
  LadderPlan plan;
  bool composed = false;
  std::string skipped;  // why it did not compose, when it did not
  LadderFigures figures;
  bool fits = false;
  bool efficient = false;  // fits and reaches kLadderEfficiencyTarget
};

struct LadderResult {
  std::vector<LadderStep> steps;
  std::optional<size_t> final_step;  // the advice; none when no rung composed
  bool reached_target = false;       // the advice fits and reaches the efficiency target
  std::string outcome;               // one line: why the ladder stopped where it did
  ResultTree final_report;           // the advice's full evaluate report
  double usable_memory_bytes = 0;    // capacity x (1 - headroom)
};

// Throws InputError when a strategy plugin a rung needs is not loaded, and for recipe problems.
LadderResult climb_ladder(const Recipe& recipe, const PluginCatalog& catalog, const LadderSettings& settings);

// The degree rule 0 gives context parallelism: 1 up to kLadderContextChunk tokens.
int64_t ladder_context_parallel_degree(int64_t seq_len);

}  // namespace paraplan::host
