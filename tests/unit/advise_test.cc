// The rule-of-thumb ladder of `paraplan advise` (search/advice_ladder.h) and the command's gap.
//
// The expected rungs come from the rules themselves (FSDP-1 up to 128 GPUs, ...) and from the
// activation memory of Korthikanti et al. 2022 with flash attention: 34·s·b·h bytes per layer,
// divided by t under tensor + sequence parallelism, a lower bound on what a GPU holds.
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include "host/cli/command.h"
#include "host/recipe/recipe_reader.h"
#include "host/search/advice_ladder.h"
#include "test_support.h"

namespace paraplan::host {
namespace {

constexpr double kUsableH100Bytes = 0.9 * 80e9;  // the default 10 % headroom on 80 GB

std::string dense_recipe(const std::string& model, const std::string& training, int64_t gpus) {
  return "[model]\n" + model + "[training]\n" + training + "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = " +
         std::to_string(gpus) + "\n";
}

// A GPT-style model (4h GELU MLP) whose 32K sequence needs TP to fit without recomputation.
const std::string kLongGelu = "layers = 32\nhidden = 4096\nheads = 32\nvocab = 32000\nseq_len = 32768\n";
// The same but deeper, with 12 heads: tp = 8 cannot divide them.
const std::string kTwelveHeads = "layers = 96\nhidden = 3072\nheads = 12\nvocab = 32000\nseq_len = 32768\n";

LadderResult climb(const std::string& text, const PluginCatalog& catalog = test::bundled_catalog()) {
  std::unique_ptr<Recipe> recipe = parse_recipe(text, "recipe.toml");
  return climb_ladder(*recipe, catalog, LadderSettings{});
}

const ResultValue& value(const ResultTree& report, const std::string& key) {
  const ResultValue* found = report.find(key);
  if (!found) throw std::runtime_error("no key " + key);
  return *found;
}

double number(const ResultTree& report, const std::string& key) { return std::get<double>(value(report, key)); }

TEST(AdviseLadder, ContextParallelDegreeIsTheChunkCountRoundedUpToAPowerOfTwo) {
  EXPECT_EQ(ladder_context_parallel_degree(4096), 1);
  EXPECT_EQ(ladder_context_parallel_degree(131072), 1);     // 128K exactly: no SP rule
  EXPECT_EQ(ladder_context_parallel_degree(131073), 2);     // just over one chunk
  EXPECT_EQ(ladder_context_parallel_degree(300000), 4);     // 2.29 chunks -> 3 -> 4
  EXPECT_EQ(ladder_context_parallel_degree(524288), 4);     // 4 chunks exactly
  EXPECT_EQ(ladder_context_parallel_degree(1048576 + 1), 16);  // 8 chunks and a token -> 9 -> 16
}

TEST(AdviseLadder, TheFirstRungPicksTheDataParallelStrategyByGpuCount) {
  // FSDP-1 up to 128 GPUs, FSDP-2 up to 256, FSDP-3 up to 512, hybrid sharding beyond.
  const std::vector<std::tuple<int64_t, std::string, int64_t>> expected = {
      {64, "fsdp", 1}, {128, "fsdp", 1}, {256, "fsdp", 2}, {512, "fsdp", 3}, {1024, "hsdp", 3}};
  for (const auto& [gpus, strategy, stage] : expected) {
    LadderResult ladder = climb(dense_recipe("preset = \"llama2-7b\"\n", "global_batch = 1024\n", gpus));
    ASSERT_FALSE(ladder.steps.empty());
    const LadderStep& first = ladder.steps.front();
    EXPECT_EQ(first.rule, "size") << gpus;
    EXPECT_EQ(first.plan.data_parallel, strategy) << gpus;
    EXPECT_EQ(first.plan.stage, stage) << gpus;
    EXPECT_EQ(first.plan.data_parallel_degree, gpus);
    EXPECT_EQ(first.plan.tp * first.plan.pp * first.plan.cp, 1);
  }
}

TEST(AdviseLadder, StopsOnTheFirstRungThatFitsAtEightyPercentEfficiency) {
  // Llama 2 7B on 64 GPUs: FSDP-1 by size. Whether it stops there is checked against the
  // rung's own evaluate report, by the rule's definition of efficiency.
  LadderResult ladder = climb(dense_recipe("preset = \"llama2-7b\"\n", "global_batch = 512\n", 64));
  ASSERT_TRUE(ladder.final_step.has_value());
  const ResultTree& report = ladder.final_report;
  const double compute = number(report, "time.compute_s");
  const double efficiency = compute / (compute + number(report, "time.exposed_comm_s.fsdp"));
  const bool fits = number(report, "memory.per_gpu_bytes") <= kUsableH100Bytes;
  ASSERT_EQ(*ladder.final_step, 0u) << ladder.outcome;
  EXPECT_TRUE(fits);
  EXPECT_GE(efficiency, 0.80);
  EXPECT_TRUE(ladder.reached_target);
  EXPECT_NE(std::get<std::string>(value(report, "plan.strategies.fsdp")).find("stage=1"), std::string::npos);
  EXPECT_DOUBLE_EQ(ladder.steps[0].figures.efficiency(), efficiency);
  EXPECT_DOUBLE_EQ(ladder.steps[0].figures.step_s, number(report, "time.step_s"));
}

TEST(AdviseLadder, MemoryForcesTensorParallelism) {
  // recompute = "none" is written, so the ladder may not recompute: the activations alone,
  // 34·s·b·h·L / t, rule out t = 1 (146 GB) and t = 2 (73.0 GB) against 72 GB; t = 4 (36.5 GB)
  // leaves room for the model state, and its rung is the advice.
  LadderResult ladder =
      climb(dense_recipe(kLongGelu, "global_batch = 32\nrecompute = \"none\"\n", 16));
  const double s = 32768, b = 1, h = 4096, layers = 32;
  auto activations = [&](double t) { return 34 * s * b * h * layers / t; };
  ASSERT_GT(activations(2), kUsableH100Bytes);
  ASSERT_LT(activations(4), kUsableH100Bytes);
  ASSERT_TRUE(ladder.final_step.has_value());
  for (const LadderStep& step : ladder.steps) {
    EXPECT_EQ(step.plan.recompute, PP_RECOMPUTE_NONE) << step.reason;
    if (step.plan.tp >= 4) continue;
    ASSERT_TRUE(step.composed) << step.skipped;
    EXPECT_GE(step.figures.memory_per_gpu_bytes, activations(static_cast<double>(step.plan.tp)));
    EXPECT_FALSE(step.fits);
  }
  const LadderStep& advice = ladder.steps[*ladder.final_step];
  EXPECT_EQ(advice.rule, "tp");
  EXPECT_EQ(advice.plan.tp, 4);
  EXPECT_EQ(advice.plan.pp, 1);
  EXPECT_EQ(advice.plan.data_parallel_degree, 4);
  EXPECT_EQ(advice.plan.stage, 1);  // 4 data-parallel GPUs <= 128
  EXPECT_TRUE(advice.fits);
  EXPECT_DOUBLE_EQ(number(ladder.final_report, "plan.mesh.tp"), 4);
  EXPECT_NE(std::get<std::string>(value(ladder.final_report, "plan.strategies.sp")).find("mode=megatron"),
            std::string::npos);
}

TEST(AdviseLadder, LongSequenceAddsRingContextParallelismOnEveryRung) {
  // 300000 tokens: ceil(300000 / 131072) = 3 chunks, rounded up to cp = 4.
  LadderResult ladder =
      climb(dense_recipe("preset = \"llama3-8b\"\nseq_len = 300000\n", "global_batch = 16\n", 16));
  ASSERT_FALSE(ladder.steps.empty());
  for (const LadderStep& step : ladder.steps) EXPECT_EQ(step.plan.cp, 4) << step.reason;
  EXPECT_NE(ladder.steps.front().reason.find("300000 > 131072"), std::string::npos) << ladder.steps.front().reason;
  ASSERT_TRUE(ladder.final_step.has_value());
  EXPECT_DOUBLE_EQ(number(ladder.final_report, "plan.mesh.cp"), 4);
  EXPECT_NE(std::get<std::string>(value(ladder.final_report, "plan.strategies.sp")).find("mode=ring"),
            std::string::npos);
  const LadderPlan& plan = ladder.steps[*ladder.final_step].plan;
  EXPECT_EQ(plan.tp * plan.pp * plan.cp * plan.data_parallel_degree, 16);
}

TEST(AdviseLadder, SkipsARungThatDoesNotComposeAndPipelinesTheLargestTensorDegree) {
  // 12 heads: tp = 8 is skipped with the tp plugin's reason, and PP builds on tp = 4. The
  // activations, 34·s·b·h·L / 4 = 82 GB, do not fit at any rung (1F1B keeps them all in
  // flight on the first stage), so the advice is the last rung evaluated.
  LadderResult ladder = climb(dense_recipe(kTwelveHeads, "global_batch = 16\nrecompute = \"none\"\n", 16));
  auto skipped = std::find_if(ladder.steps.begin(), ladder.steps.end(), [](const LadderStep& step) { return !step.composed; });
  ASSERT_NE(skipped, ladder.steps.end());
  EXPECT_EQ(skipped->plan.tp, 8);
  EXPECT_NE(skipped->skipped.find("must divide the attention heads = 12"), std::string::npos) << skipped->skipped;
  EXPECT_EQ(skipped->skipped.find("recipe.toml:"), std::string::npos) << "generated-recipe lines leak: " << skipped->skipped;
  auto next = skipped + 1;
  ASSERT_NE(next, ladder.steps.end());
  EXPECT_EQ(next->rule, "pp");
  EXPECT_EQ(next->plan.tp, 4);
  EXPECT_EQ(next->plan.pp, 2);
  ASSERT_TRUE(ladder.final_step.has_value());
  EXPECT_EQ(*ladder.final_step, ladder.steps.size() - 1);
  EXPECT_FALSE(ladder.steps.back().fits);
  EXPECT_FALSE(ladder.reached_target);
}

TEST(AdviseLadder, NamesAStrategyPluginItNeedsThatIsNotLoaded) {
  // A catalog with data parallelism but no tensor parallelism: the memory case reaches TP.
  std::filesystem::path directory =
      std::filesystem::temp_directory_path() / ("paraplan_advise_" + std::to_string(getpid()));
  std::filesystem::remove_all(directory);
  std::filesystem::create_directories(directory);
  for (const char* name : {"paraplan_strategy_fsdp", "paraplan_executor_analytic", "paraplan_hw_h100_sxm"})
    std::filesystem::create_symlink(std::filesystem::path(PARAPLAN_BUNDLED_PLUGIN_DIR) / (std::string(name) + ".so"),
                                    directory / (std::string(name) + ".so"));
  PluginCatalog catalog = PluginCatalog::scan({directory});
  test::expect_error<InputError>(
      [&] { climb(dense_recipe(kLongGelu, "global_batch = 32\nrecompute = \"none\"\n", 16), catalog); },
      {"strategy plugin 'tp'", "not loaded"});
  std::filesystem::remove_all(directory);
}

// The command, in-process, on a recipe written to a file.
using test::CommandRun;

CommandRun advise(const std::string& recipe_text, std::vector<std::string> extra) {
  std::filesystem::path file = std::filesystem::temp_directory_path() /
                               ("paraplan_advise_" + std::to_string(getpid()) + "_" + std::to_string(recipe_text.size()) + ".toml");
  std::ofstream(file) << recipe_text;
  std::vector<std::string> arguments = {"advise", file.string(), "--threads=2"};
  arguments.insert(arguments.end(), extra.begin(), extra.end());
  CommandRun run = test::run_command(arguments);
  std::filesystem::remove(file);
  return run;
}

TEST(AdviseCommand, GapIsTheLadderStepOverTheOptimumStep) {
  // No [[strategy]] list, micro_batch 1 and recompute "none" are in the search's sets and
  // the ladder plan fits: it is one of the plans searched, so the optimum is no slower.
  CommandRun run = advise(dense_recipe(kLongGelu, "global_batch = 32\nrecompute = \"none\"\n", 16), {"--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  nlohmann::json report = nlohmann::json::parse(run.out);
  const double ladder_step = report["ladder"]["final"]["figures"]["step_s"].get<double>();
  const double optimum_step = report["optimum"]["step_s"].get<double>();
  ASSERT_GT(optimum_step, 0);
  EXPECT_TRUE(report["ladder"]["final"]["fits"].get<bool>());
  EXPECT_DOUBLE_EQ(ladder_step, report["ladder"]["final"]["report"]["time"]["step_s"].get<double>());
  const double gap = report["gap"]["step_time_pct"].get<double>();
  EXPECT_NEAR(gap, (ladder_step / optimum_step - 1.0) * 100.0, 1e-9);
  EXPECT_GE(gap, -1e-9);  // both price the same plan alike up to rounding
  EXPECT_DOUBLE_EQ(report["gap"]["ladder_mfu"].get<double>(), report["ladder"]["final"]["figures"]["mfu"].get<double>());
  EXPECT_DOUBLE_EQ(report["gap"]["optimum_mfu"].get<double>(), report["optimum"]["mfu"].get<double>());
  EXPECT_EQ(report["ladder"]["final"]["plan"]["tp"].get<int64_t>(), 4);
}

TEST(AdviseCommand, TextShowsTheLadderTheOptimumAndTheGap) {
  CommandRun run = advise(dense_recipe("preset = \"llama2-7b\"\n", "global_batch = 64\n", 8), {});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  for (const char* fragment : {"rule-of-thumb ladder", "Ladder plan (step", "Searched optimum", "Gap: ", "[[strategy]]"})
    EXPECT_NE(run.out.find(fragment), std::string::npos) << fragment << "\n" << run.out;
}

TEST(AdviseCommand, APlanThatDoesNotFitPrintsAndExitsWithOne) {
  CommandRun run = advise(dense_recipe(kTwelveHeads, "global_batch = 16\nrecompute = \"none\"\n", 16), {});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.out.find("(does not fit)"), std::string::npos) << run.out;
  EXPECT_NE(run.err.find("does not fit"), std::string::npos) << run.err;
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
}

TEST(AdviseCommand, HelpSaysTheStrategyListIsIgnored) {
  std::ostringstream out, err;
  std::streambuf* saved = std::cout.rdbuf(out.rdbuf());
  int code = run_command_line({"advise", "--help"}, err);
  std::cout.rdbuf(saved);
  EXPECT_EQ(code, 0);
  EXPECT_NE(out.str().find("[[strategy]] list is\nignored"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("--headroom"), std::string::npos);
  EXPECT_EQ(run_command_line({"advise", "x.toml", "--headroom=1.5"}, err), 2);
}

}  // namespace
}  // namespace paraplan::host
