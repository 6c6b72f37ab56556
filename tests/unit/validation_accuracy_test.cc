// The cost model against measured training runs: the rows shipped in recipes/validation/
// (docs/validation.md), predicted as `paraplan validate` predicts them. These are the accuracy
// targets the project holds itself to; a change to the model or to a hardware profile that
// pushes the error past them fails here.
#include <cmath>
#include <map>
#include <set>
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
// 405B: at most the 8 % mean absolute error (6.7 % since ZeRO-2 under pipelining syncs once per step; Calculon
// reaches 12.7 % on the 27 rows it can express).
TEST(ValidationAccuracy, PublishedRunsWithinEightPercent) {
  expect_accuracy("published.csv", 30, 8.0, 0.95);
}

// A guard per source of published.csv: each at most today's figure plus 1.5 points (2026-12-05),
// so a change that helps the H100 rows cannot hide a loss on the A100 papers' (docs/validation.md
// gives each source's figure with the GEMM plateau fitted without it, out of fold).
TEST(ValidationAccuracy, PublishedSourcesNoWorseThanToday) {
  const std::vector<MeasuredRun> runs = read_measured_runs(PARAPLAN_RECIPES_DIR "/validation/published.csv");
  const ValidationSummary summary = summarize(predict_runs(runs, test::bundled_catalog(), 0));
  // After NCCL's collectives and the slowest GPU's pace (Narayanan 4.2, Korthikanti 5.1, the
  // Megatron README 8.2, Llama 3 23.9 before them).
  const std::map<std::string, double> today = {{"Narayanan et al. 2021", 3.4},
                                               {"Korthikanti et al. 2022", 5.6},
                                               {"Megatron-LM README", 8.1},
                                               {"The Llama 3 Herd of Models", 16.3}};  // 24.6 before ZeRO-2 under pp synced per step
  size_t guarded = 0;
  for (const SourceAccuracy& source : summary.sources)
    for (const auto& [prefix, mape] : today)
      if (source.source.starts_with(prefix)) {
        ASSERT_TRUE(source.mape_pct.has_value()) << source.source;
        EXPECT_LE(*source.mape_pct, mape + 1.5) << source.source;
        ++guarded;
      }
  EXPECT_EQ(guarded, today.size());
}

// vTrain's 109 multi-node A100 runs, many parallel layouts of the same models: at most the issue's
// 10 % (9.2 % since the node's all-reduce is vTrain's measured one; vTrain's own profiling-based
// simulator: 14.73 %) and the plans ranked right, Spearman >= 0.8.
TEST(ValidationAccuracy, VtrainMultiNodeRunsWithinTenPercentAndRankedRight) {
  expect_accuracy("vtrain-multi-node.csv", 109, 10.0, 0.8);
}

// Ranking within one model on one GPU count is the search's job: the Spearman correlation of
// predicted and measured iteration time over each such group of vTrain's multi-node runs (3.6B on
// 64 GPUs, 18.4B on 256, 39.1B and 175B on 512), weighted by the group's rows, as `paraplan
// validate` reports it (`within_model_spearman`). Today 0.769; the 0.85 is not reached
// (docs/validation.md), so this guards against falling back.
TEST(ValidationAccuracy, VtrainPlansOfOneModelRankedNoWorseThanToday) {
  const std::vector<MeasuredRun> runs = read_measured_runs(PARAPLAN_RECIPES_DIR "/validation/vtrain-multi-node.csv");
  const ValidationSummary summary = summarize(predict_runs(runs, test::bundled_catalog(), 0));
  ASSERT_EQ(summary.rankings.size(), 4u);
  ASSERT_TRUE(summary.within_model_spearman.has_value());
  EXPECT_GE(*summary.within_model_spearman, 0.76);
}

// NeMo's FP8 pre-training runs on H100 (24.12 performance summary): the model's weakest
// precision (docs/validation.md): no target, only today's level kept from getting worse.
TEST(ValidationAccuracy, NemoFp8RunsNoWorseThanToday) {
  expect_accuracy("nemo-h100-fp8.csv", 9, 7.0, 0.9);  // 5.3 % (8.9 % before the runs' TP overlap was stated, 10.4 before partial recomputation)
}

// MosaicML's MPT runs with PyTorch FSDP: another software stack (its attention priced as
// FlashAttention-2's class, 34.0 -> 21.2 %; FSDP's overlapped gathers slowing the compute, 16.7 %;
// then as the Triton FlashAttention its harness ran, the FlashAttention-2 paper's 1.8x below
// FlashAttention-2, not fitted: 13.1 %; docs/validation.md). The 15 %.
TEST(ValidationAccuracy, MptFsdpRunsWithinFifteenPercent) {
  expect_accuracy("mpt-h100-fsdp.csv", 22, 15.0, 0.97);
}

// vTrain's 1440 single-node runs of small models are launch-bound: the host's issue time
// (host_issue.hpp, 85 us per op, fitted on these rows; either half of them alone gives the same
// figure, docs/validation.md) took them from 36.6 % to 8.6 % and the ranking from 0.79 to 0.985.
TEST(ValidationAccuracy, VtrainSingleNodeRunsWithinTenPercentAndRankedRight) {
  expect_accuracy("vtrain-single-node.csv", 1440, 10.0, 0.97);
}

// modern.csv's 217 runs of 2024-2026 models (docs/validation.md): the MoE issue's targets are
// not met yet. Every row evaluates or names its reason (memory the model overestimates), and
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
  // Every row: the 11 NeMo GPT-3 and Nemotron rows with their models' vocabularies, the three
  // torchtitan rows that fit under its op policy (2026-12-06).
  EXPECT_EQ(evaluated, 217u);
  const ValidationSummary summary = summarize(predictions);
  ASSERT_TRUE(summary.mape_pct.has_value());
  EXPECT_LE(*summary.mape_pct, 14.5);  // 12.6 % (2026-12-06, 217 rows; 13.9 before the GB300's FP8 plateau, 13.1 before the fused kernels)
  ASSERT_TRUE(summary.spearman.has_value());
  EXPECT_GE(*summary.spearman, 0.97);  // 0.981
}

// A guard per slice of modern.csv, by model and by hardware: each slice's MAPE at most today's
// plus 2 points (2026-12-04, with the MoE block's passes, the exchange once per node, the runs' bf16
// gradients, the output layer in bf16, the models' own passes, the distributed optimizer over dp x cp, and
// torchtitan's fp32 weights held in place, which let one more torchtitan Llama 3 8B row fit, 32K context
// on CP 4, at +88 %: its slices' figures rose with it; docs/validation.md; 2026-12-05, the attention
// kernel torchtitan ran and narrower heads' rate: Llama 3 8B 25.9 -> 14.2, GPT-OSS 31.2 -> 29.1; then
// overlapped communication slowing compute: Llama 3 8B 13.2, GPT-OSS 28.4, A100 15.0; then partial
// recomputation searched, the forced full recompute gone: Llama 3 70B 15.8 -> 12.6, DeepSeek-V3 11.3 -> 8.4,
// GPT-OSS 28.4 -> 29.3, its B200 row now less recomputed and further too fast; then the GB200 FSDP
// rows' activation offload: Llama 3 70B 12.6 -> 11.3), so a change that
// helps one family cannot hide a loss on another. The MoE families are split in two halves by
// model (docs/validation.md): what is tuned is tuned on the first (paraplan::moe::
// kUnfusedMoePasses), and the second says how it does on models it never saw.
TEST(ValidationAccuracy, ModernSlicesNoWorseThanToday) {
  const std::vector<MeasuredRun> runs = read_measured_runs(PARAPLAN_RECIPES_DIR "/validation/modern.csv");
  const std::vector<Prediction> predictions = predict_runs(runs, test::bundled_catalog(), 0);
  const ValidationSummary summary = summarize(predictions);
  const std::map<std::string, double> today = {
      // by model
      // (after NCCL's collectives and the slowest GPU's pace, 2026-12-05)
      {"llama2-7b", 21.9}, {"llama2-13b", 1.8}, {"llama2-70b", 5.7}, {"llama3-8b", 10.8}, {"llama3-70b", 9.3},
      {"llama3.1-405b", 4.8}, {"mixtral-8x7b", 19.0}, {"deepseek-v3", 8.8}, {"gpt-oss-120b", 28.1},
      {"nemotron-3-nano", 14.0}, {"qwen3-235b-a22b", 17.2}, {"qwen3-30b-a3b", 21.6},
      {"gpt3-5b", 6.6}, {"gpt3-20b", 0.2}, {"gpt3-175b", 8.4}, {"nemotron3-8b", 10.1}, {"nemotron3-22b", 3.4},
      {"nemotron4-15b", 10.7},  // (evaluated since 2026-12-05: the models' vocabularies)
      // (2026-12-05, the dense rows' TP overlap as each release ran it, modern.csv's tp_comm_overlap:
      // torchtitan's async TP, priced as userbuffers, gains twice what it measured: Llama 3 8B 12.8 -> 15.7,
      // its 500 W H100 20.3 -> 27.0; then torchtitan's layer checkpointing as the half of the layers
      // it recomputes: Llama 2 13B 14.2 -> 10.8, Llama 3 8B 15.4, A100 15.2 -> 11.2)
      // (2026-12-06, torchtitan's selective op policy, SDK 1.8: Llama 2 13B 10.8 -> 8.3, Llama 3 8B
      // 15.4 -> 14.5 over 35 rows, its 500 W H100 27.0 -> 23.9, A100 11.2 -> 9.7; Llama 2 70B 2.1 -> 6.6,
      // the op-checkpointed row on 64 A100 now fitting, +15.6 %; H200 1.7 -> 2.2; then eager PyTorch
      // kernels for torchtitan's runs without torch.compile: Llama 2 13B 8.3 -> 1.8, Llama 2 70B
      // 6.6 -> 5.7, Llama 3 8B 14.5 -> 13.0, its 500 W H100 23.9 -> 21.7, A100 9.7 -> 4.0; then
      // torchtitan's async TP as PyTorch's micro-pipeline, forward passes only: Llama 3 8B 13.0 -> 11.4,
      // its 500 W H100 21.7 -> 18.2; then the GB300's FP8 plateau fitted to its Llama 3.1 405B runs:
      // Llama 3 8B 11.4 -> 10.8, Llama 3.1 405B 8.5 -> 4.8, GB300 13.2 -> 3.4; then FP8 attention and the
      // fused expert MLP where six GB200 Qwen3 runs had them: Qwen3-30B-A3B 24.0 -> 21.6,
      // Qwen3-235B-A22B 19.4 -> 17.2, GB200 10.5 -> 9.1)
      // by hardware
      {"h100-sxm", 16.3}, {"b200", 15.0}, {"gb200-nvl72", 9.1}, {"h100-sxm-hbm2e-96gb-500w", 18.2},
      {"h200-sxm", 2.2}, {"a100-sxm-80g", 4.0}, {"b300", 22.0}, {"gb300-nvl72", 3.4}};
  size_t guarded = 0;
  for (const std::vector<SliceAccuracy>* slices : {&summary.models, &summary.hardware})
    for (const SliceAccuracy& slice : *slices) {
      auto ceiling = today.find(slice.name);
      if (ceiling == today.end()) {
        EXPECT_FALSE(slice.mape_pct.has_value()) << slice.name << " has no guard but evaluates";
        continue;
      }
      ASSERT_TRUE(slice.mape_pct.has_value()) << slice.name;
      EXPECT_LE(*slice.mape_pct, ceiling->second + 2.0) << slice.name;
      ++guarded;
    }
  EXPECT_EQ(guarded, today.size());

  auto half_mape = [&](const std::set<std::string>& models) {
    double sum = 0;
    size_t rows = 0;
    for (const Prediction& prediction : predictions)
      if (prediction.evaluated() && models.count(prediction.run->model)) sum += std::abs(prediction.error_pct), ++rows;
    return rows ? sum / static_cast<double>(rows) : NAN;
  };
  EXPECT_LE(half_mape({"deepseek-v3", "qwen3-30b-a3b", "mixtral-8x7b"}), 17.1 + 2.0);       // the tuning half
  EXPECT_LE(half_mape({"qwen3-235b-a22b", "gpt-oss-120b", "nemotron-3-nano"}), 19.7 + 2.0);  // held out
}

// Issue 18's target for the dense rows of modern.csv: at most 10 % (8.8 %, 2026-12-06; 10.1 before
// the GB300's FP8 plateau, fitted on its Llama 3.1 405B rows, with its Llama 3 8B rows held out at
// 1.9 %: docs/validation.md).
TEST(ValidationAccuracy, ModernDenseRowsWithinTenPercent) {
  const std::vector<MeasuredRun> runs = read_measured_runs(PARAPLAN_RECIPES_DIR "/validation/modern.csv");
  const std::vector<Prediction> predictions = predict_runs(runs, test::bundled_catalog(), 0);
  double sum = 0;
  size_t rows = 0;
  for (const Prediction& prediction : predictions)
    if (prediction.evaluated() && prediction.run->moe_experts.value_or(0) == 0)
      sum += std::abs(prediction.error_pct), ++rows;
  EXPECT_EQ(rows, 131u);
  EXPECT_LE(sum / static_cast<double>(rows), 10.0);
}

// Families ranked as measured (issue 18): where a source measured FSDP and 3D parallelism on the
// same model and GPUs, the faster one is predicted faster. The shipped data's comparison: Llama 3
// 70B on 64 GB200, Megatron FSDP against TP 2 x PP 4, in six containers (docs/validation.md).
TEST(ValidationAccuracy, FsdpAgainst3dRankedAsMeasured) {
  const std::vector<MeasuredRun> runs = read_measured_runs(PARAPLAN_RECIPES_DIR "/validation/modern.csv");
  const std::vector<Prediction> predictions = predict_runs(runs, test::bundled_catalog(), 0);
  auto find = [&](const std::string& id) -> const Prediction* {
    for (const Prediction& prediction : predictions)
      if (prediction.run->id == id) return &prediction;
    return nullptr;
  };
  size_t pairs = 0;
  for (const std::string release : {"nemo2507", "bridge2509", "bridge2602", "bridge260201", "bridge2604", "bridge260401"}) {
    const Prediction* fsdp = find(release + "-gb200-llama3-70b-64-fp8");
    const Prediction* three_d = find(release + "-gb200-llama3-70b-64-mxfp8");
    ASSERT_TRUE(fsdp && three_d) << release;
    ASSERT_TRUE(fsdp->evaluated() && three_d->evaluated()) << release;
    // tokens/s/GPU: higher is faster.
    EXPECT_EQ(fsdp->run->value > three_d->run->value, *fsdp->predicted > *three_d->predicted) << release;
    ++pairs;
  }
  EXPECT_EQ(pairs, 6u);
}

// The same over vTrain's multi-node runs: where one model on one GPU count was measured both with
// data parallelism alone and with tensor or pipeline parallelism (the 3.6B GPT on 64 A100: three
// data-parallel runs, 23 with TP or PP), every pair is ordered as measured.
TEST(ValidationAccuracy, DataParallelAgainst3dRankedAsMeasuredOnVtrain) {
  const std::vector<MeasuredRun> runs = read_measured_runs(PARAPLAN_RECIPES_DIR "/validation/vtrain-multi-node.csv");
  const std::vector<Prediction> predictions = predict_runs(runs, test::bundled_catalog(), 0);
  std::map<std::pair<int64_t, int64_t>, std::vector<const Prediction*>> data_parallel, three_d;
  for (const Prediction& prediction : predictions) {
    ASSERT_TRUE(prediction.evaluated()) << prediction.run->id;
    const MeasuredRun& run = *prediction.run;
    auto& side = run.tp == 1 && run.pp == 1 ? data_parallel : three_d;
    side[{run.hidden, run.num_gpus}].push_back(&prediction);
  }
  size_t pairs = 0;
  for (const auto& [group, plain] : data_parallel)
    for (const Prediction* a : plain)
      for (const Prediction* b : three_d[group]) {
        // iteration_s: lower is faster.
        EXPECT_EQ(a->run->value < b->run->value, *a->predicted < *b->predicted) << a->run->id << " vs " << b->run->id;
        ++pairs;
      }
  EXPECT_EQ(pairs, 3u * 23u);
}

}  // namespace
}  // namespace paraplan::host
