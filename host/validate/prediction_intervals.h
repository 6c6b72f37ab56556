// paraplan/host/validate/prediction_intervals.h: how far off a prediction may be, from how far off
// the cost model was on comparable measured runs.
//
// Each evaluated row of `paraplan validate` leaves a residual: measured step time / predicted step
// time (a tokens/s row: predicted / measured tokens/s). Runs are compared by four traits of the
// plan (ComparableClass): dense or MoE, the tensor-core generation of the GPU (from the formats its
// profile runs, not its name), 16-bit or 8-bit-and-below GEMMs, and scale (one node, up to 512
// GPUs, more). An interval is the 5th-95th percentile of the residuals of the most specific class
// with at least `min_runs` runs from `min_sources` sources, every source weighing the same; short
// of that, one trait is dropped at a time (scale, then precision, then generation, then dense/MoE).
// It claims 80 %: that share of a source's runs fall inside the intervals of the other sources. The table ships as recipes/validation/prediction_intervals.json
// (written by `paraplan validate ... --write-intervals`, compiled in) and a team can build its own
// from its own runs (`--intervals FILE.json` on evaluate, simulate and search).
//
// Whether ~80 % of unseen runs fall inside is checked out of fold: each source's rows against a
// table built without that source (leave_one_source_out; docs/validation.md reports it).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/recipe/recipe.h"

namespace paraplan::host {
class HardwareBinding;
}
#include "paraplan/hardware.h"

namespace paraplan::host {

// One trait each; "" = any (a class a trait was dropped from).
struct ComparableClass {
  std::string family;      // dense | moe
  std::string generation;  // ampere-class (no FP8) | hopper-class (FP8) | blackwell-class (MXFP8/NVFP4)
  std::string precision;   // bf16 (16-bit GEMMs) | fp8 (fp8, mxfp8, nvfp4)
  std::string scale;       // one-node | up-to-512 | over-512 (GPUs)

  bool operator==(const ComparableClass&) const = default;
  // Every trait given here equals `run`'s.
  bool covers(const ComparableClass& run) const;
};

// The class of a recipe's plan on its hardware; `gpus_per_node` as the plan runs it.
ComparableClass comparable_class(const Recipe& recipe, const pp_hardware_profile& profile, int64_t gpus_per_node);
// The same, the hardware opened (its gpus_per_node as the recipe's cluster gives it).
ComparableClass comparable_class(const Recipe& recipe, const HardwareBinding& hardware);

// "moe, hopper-class, fp8, over-512"; "any" for a class with no trait.
std::string describe_class(const ComparableClass& of);

// One measured run's deviation from its prediction.
struct Residual {
  ComparableClass of;
  double step_ratio = 1;                // measured / predicted step time
  std::optional<double> memory_ratio;   // measured / predicted peak memory per GPU, where published
  std::string source, file;             // the row's source and data set, for the out-of-fold check
};

struct IntervalClass {
  ComparableClass of;
  size_t runs = 0;
  double low = 1, high = 1;  // step-ratio quantiles: the step lies in [predicted x low, predicted x high]
};

struct IntervalTable {
  std::string executor = "analytic";  // the executor whose predictions the residuals are of
  // The share of unseen runs the interval claims to hold, and the in-sample quantiles that give it
  // out of fold: the 10th-90th percentiles held 74.5 % of each left-out source's shipped runs, the
  // 5th-95th 79.0 % (docs/validation.md), since a new source differs more than the ones seen.
  double coverage = 0.8;
  double low_quantile = 0.05, high_quantile = 0.95;
  size_t min_runs = 20;
  // A class seen by few sources says little of the next source's error: each left-out source's
  // runs against classes of 2 or 3 other sources held 60.1 % out of fold (2026-12-06, once
  // torchtitan's A100 rows were priced as they ran, the A100 class's three other sources agreeing
  // within a few per cent and vTrain's scatter not), against classes of 4 or more 93.7 %
  // (docs/validation.md). A table built from fewer sources (a team's own runs) needs all it has.
  size_t min_sources = 4;
  std::vector<IntervalClass> classes;  // every class (at every level) with at least min_runs runs
  std::vector<double> memory_ratios;   // sorted; measured / predicted peak memory
  size_t runs = 0;                     // residuals the table was built from

  // The most specific class covering `run` (dropping scale, precision, generation, family in
  // turn); null when even the class of every run has fewer than min_runs. It points into the
  // table, so a temporary table has none to give (deleted overload).
  const IntervalClass* comparable(const ComparableClass& run) const&;
  const IntervalClass* comparable(const ComparableClass& run) const&& = delete;
};

// The table the residuals give: per class, the quantiles of its runs' step ratios, every source
// weighing the same (one source's 1440 rows do not stand for all).
IntervalTable build_interval_table(const std::vector<Residual>& residuals, const std::string& executor);

nlohmann::ordered_json interval_table_json(const IntervalTable& table);
// InputError naming `file` and the key for a malformed table.
IntervalTable parse_interval_table(std::string_view text, const std::string& file);
IntervalTable read_interval_table(const std::string& file);
// recipes/validation/prediction_intervals.json as this build compiled it in.
const IntervalTable& shipped_interval_table();

// A prediction's interval: the step, throughput and MFU bounds of its comparable class.
struct PredictionInterval {
  const IntervalClass* of = nullptr;  // null: no comparable class (no interval)
  double step_low = 0, step_high = 0;
  double tokens_low = 0, tokens_high = 0;  // per GPU
  double mfu_low = 0, mfu_high = 0;
};
PredictionInterval prediction_interval(const IntervalTable& table, const ComparableClass& run, double step_s,
                                       double tokens_per_s_per_gpu, double mfu);

// The share of the table's measured/predicted memory ratios under which `predicted_bytes` would
// exceed `capacity_bytes`; empty without memory residuals.
std::optional<double> out_of_memory_risk(const IntervalTable& table, double predicted_bytes, double capacity_bytes);

// The out-of-fold check: each source's residuals against the table built from every other
// source's. Counts per data set file (in first-seen order) and in all.
struct CoverageCount {
  std::string name;
  size_t runs = 0, inside = 0, below = 0, above = 0;  // below/above: faster/slower than the interval
  size_t without_interval = 0;                        // no comparable class once the source is out
};
struct CoverageCheck {
  double coverage = 0;  // what the intervals claim (IntervalTable::coverage)
  CoverageCount all;
  std::vector<CoverageCount> files;
};
CoverageCheck leave_one_source_out(const std::vector<Residual>& residuals);

}  // namespace paraplan::host
