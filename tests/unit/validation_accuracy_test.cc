// The cost model against measured training runs: the rows shipped in recipes/validation/
// (docs/validation.md), predicted as `paraplan validate` predicts them. These are the accuracy
// targets the project holds itself to; a change to the model or to a hardware profile that
// pushes the error past them fails here.
#include <string>
#include <vector>

#include "host/validate/measured_runs.h"
#include "host/validate/validation.h"
#include "host/validate/validation_statistics.h"
#include "test_support.h"

namespace paraplan::host {
namespace {

// Every row of recipes/validation/NAME is evaluated, there are `rows` of them, their mean absolute
// error is at most `max_mape_pct` and the ranking of their iteration times at least `min_spearman`.
void expect_accuracy(const std::string& name, size_t rows, double max_mape_pct, double min_spearman) {
  const std::vector<MeasuredRun> runs = read_measured_runs(PARAPLAN_RECIPES_DIR "/validation/" + name);
  const std::vector<Prediction> predictions = predict_runs(runs, test::bundled_catalog(), 0);
  for (const Prediction& prediction : predictions)
    EXPECT_TRUE(prediction.evaluated()) << prediction.run->id << ": " << prediction.reason;
  const ValidationSummary summary = summarize(predictions);
  EXPECT_EQ(summary.rows, rows);
  ASSERT_TRUE(summary.mape_pct.has_value());
  EXPECT_LE(*summary.mape_pct, max_mape_pct);
  ASSERT_TRUE(summary.spearman.has_value());
  EXPECT_GE(*summary.spearman, min_spearman);
}

// Narayanan et al. 2021, Korthikanti et al. 2022, the Megatron-LM README's H100 table and Llama 3
// 405B: at most 10 % mean absolute error (Calculon reaches 12.7 % on the 27 rows it can express).
TEST(ValidationAccuracy, PublishedRunsWithinTenPercent) {
  expect_accuracy("published.csv", 30, 10.0, 0.95);
}

// vTrain's 109 multi-node A100 runs, many parallel layouts of the same models: at most 15 %
// (vTrain's own profiling-based simulator: 14.73 %) and the plans ranked right, Spearman >= 0.8.
TEST(ValidationAccuracy, VtrainMultiNodeRunsWithinFifteenPercentAndRankedRight) {
  expect_accuracy("vtrain-multi-node.csv", 109, 15.0, 0.8);
}

// NeMo's FP8 pre-training runs on H100 (24.12 performance summary): the model's weakest
// precision (docs/validation.md): no target, only today's level kept from getting worse.
TEST(ValidationAccuracy, NemoFp8RunsNoWorseThanToday) {
  expect_accuracy("nemo-h100-fp8.csv", 9, 12.0, 0.9);
}

// MosaicML's MPT runs with PyTorch FSDP: another software stack (Triton attention, eager
// layers), predicted too fast (docs/validation.md): no target, only today's level kept.
TEST(ValidationAccuracy, MptFsdpRunsNoWorseThanToday) {
  expect_accuracy("mpt-h100-fsdp.csv", 22, 36.0, 0.9);
}

// vTrain's 1440 single-node runs of small models are launch-bound, which the analytic model does
// not price (docs/validation.md): no target, only today's level kept from getting worse.
TEST(ValidationAccuracy, VtrainSingleNodeRunsNoWorseThanToday) {
  expect_accuracy("vtrain-single-node.csv", 1440, 40.0, 0.75);
}

// modern.csv's 217 runs of 2024-2026 models (docs/validation.md): MoE layers are priced as
// dense ones until the MoE issue, so no target yet. Every row evaluates or names its reason (a
// vocabulary not published, expert parallelism beyond dp, memory the model overestimates), and
// today's level is kept from getting worse.
TEST(ValidationAccuracy, ModernRunsEvaluateOrSayWhyNoWorseThanToday) {
  const std::vector<MeasuredRun> runs = read_measured_runs(PARAPLAN_RECIPES_DIR "/validation/modern.csv");
  ASSERT_EQ(runs.size(), 217u);
  const std::vector<Prediction> predictions = predict_runs(runs, test::bundled_catalog(), 0);
  size_t evaluated = 0;
  for (const Prediction& prediction : predictions) {
    if (prediction.evaluated()) {
      ++evaluated;
    } else {
      EXPECT_FALSE(prediction.reason.empty()) << prediction.run->id;
    }
  }
  EXPECT_GE(evaluated, 190u);
  const ValidationSummary summary = summarize(predictions);
  ASSERT_TRUE(summary.mape_pct.has_value());
  EXPECT_LE(*summary.mape_pct, 37.5);
  ASSERT_TRUE(summary.spearman.has_value());
  EXPECT_GE(*summary.spearman, 0.93);
}

}  // namespace
}  // namespace paraplan::host
