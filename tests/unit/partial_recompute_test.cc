// Full recomputation of only some layers (training.recompute_num_layers; Megatron-LM's
// --recompute-method block): each pipeline chunk's first N layers keep only their input and re-run
// their forward in backward, the others keep every activation and recompute nothing
// (megatron/core/recompute.py). Checked against that rule applied by hand to the plans of no and
// of full recomputation, in the analytic model, the simulator and the search.
#include <gtest/gtest.h>

#include <string>

#include "host/search/search_engine.h"
#include "paraplan/sdk.hpp"
#include "test_support.h"

namespace paraplan::host {
namespace {

// Llama 2 70B on 64 H100 as TP 8 x PP 2 x DP 4: 40 identical layers on each stage.
const std::string kSeed1 = PARAPLAN_RECIPES_DIR "/scenarios/seed1-llama2-70b-4k-64xh100.toml";
constexpr double kLayersPerStage = 40;

test::Evaluated seed1(const std::string& executor, const std::vector<std::string>& recompute) {
  return test::evaluate_file(kSeed1, executor, recompute);
}

double hardware_flops(const test::Evaluated& run) {
  return run.number("throughput.hardware_tflops_per_gpu") * 1e12 * run.number("time.step_s") * 64.0;
}

// Activations and recomputed FLOPs are each layer's, so N of a stage's 40 layers recomputed holds
// N fortieths of full recomputation's activations and 40 - N fortieths of none's, and runs N
// fortieths of full recomputation's extra FLOPs.
TEST(PartialRecompute, ActivationsAndFlopsAreEachLayersShare) {
  const test::Evaluated none = seed1("analytic", {"training.recompute=none"});
  const test::Evaluated full = seed1("analytic", {"training.recompute=full"});
  for (int layers : {1, 7, 39}) {
    SCOPED_TRACE(layers);
    const test::Evaluated some =
        seed1("analytic", {"training.recompute=full", "training.recompute_num_layers=" + std::to_string(layers)});
    const double share = layers / kLayersPerStage;
    EXPECT_NEAR(some.number("memory.activations_bytes"),
                share * full.number("memory.activations_bytes") + (1 - share) * none.number("memory.activations_bytes"),
                1e-9 * none.number("memory.activations_bytes"));
    EXPECT_NEAR(hardware_flops(some) - hardware_flops(none), share * (hardware_flops(full) - hardware_flops(none)),
                1e-6 * hardware_flops(none));
    EXPECT_GT(some.number("time.step_s"), none.number("time.step_s"));
    EXPECT_LT(some.number("time.step_s"), full.number("time.step_s"));
  }
  // As many layers as a stage holds, or more, is full recomputation (Megatron-LM's block loop
  // simply checkpoints every layer).
  const test::Evaluated all = seed1("analytic", {"training.recompute=full", "training.recompute_num_layers=40"});
  EXPECT_DOUBLE_EQ(all.number("memory.per_gpu_bytes"), full.number("memory.per_gpu_bytes"));
  EXPECT_DOUBLE_EQ(all.number("time.step_s"), full.number("time.step_s"));
}

// The simulator walks each layer: it recomputes the chunk's first N and holds the same memory.
TEST(PartialRecompute, TheSimulatorRecomputesTheSameLayers) {
  const std::vector<std::string> some = {"training.recompute=full", "training.recompute_num_layers=7"};
  const test::Evaluated analytic = seed1("analytic", some), simulated = seed1("simulate", some);
  EXPECT_NEAR(simulated.number("memory.per_gpu_bytes"), analytic.number("memory.per_gpu_bytes"),
              1e-9 * analytic.number("memory.per_gpu_bytes"));
  EXPECT_NEAR(simulated.number("time.step_s"), analytic.number("time.step_s"), 0.02 * analytic.number("time.step_s"));
  const test::Evaluated none = seed1("simulate", {"training.recompute=none"});
  const test::Evaluated full = seed1("simulate", {"training.recompute=full"});
  EXPECT_GT(simulated.number("time.step_s"), none.number("time.step_s"));
  EXPECT_LT(simulated.number("time.step_s"), full.number("time.step_s"));
}

// Which kinds of layer are recomputed follows the model's order within each chunk: DeepSeek-V3's
// 3 dense layers open chunk 0, so its first 4 layers are 3 dense and 1 MoE.
TEST(PartialRecompute, AChunksFirstLayersInTheModelsOrder) {
  auto recipe = [](int layers) {
    return "[model]\npreset = \"deepseek-v3\"\n[training]\nglobal_batch = 512\nrecompute = \"full\"\n"
           "recompute_num_layers = " + std::to_string(layers) +
           "\n[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 32\n"
           "[[strategy]]\nname = \"pp\"\ndegree = 4\nschedule = \"1f1b\"\nlayout = \"Et*4|t*20|t*20|t*17,m,L\"\n"
           "[[strategy]]\nname = \"fsdp\"\nstage = 1\n";
  };
  const test::Evaluated four = test::evaluate_recipe(recipe(4)), three = test::evaluate_recipe(recipe(3));
  const pp_plan_view_v1 raw_four = four.composed.plan->view(), raw_three = three.composed.plan->view();
  const paraplan::PlanView by_four(raw_four), by_three(raw_three);
  uint32_t dense = 0, moe = 0, mtp = 0;
  for (uint32_t i = 0; i < raw_four.layer_kind_count; ++i) {
    const std::string name = by_four.layer_kinds()[i].name;
    (name == "mla+dense" ? dense : name == "mla+moe" ? moe : mtp) = i;
  }
  using paraplan::LayerShare;
  EXPECT_EQ(by_four.layers_on_chunk(0, 0, dense, LayerShare::kFirst), 3);
  EXPECT_EQ(by_four.layers_on_chunk(0, 0, moe, LayerShare::kFirst), 1);
  EXPECT_EQ(by_four.layers_on_chunk(0, 0, moe, LayerShare::kRest), 0);
  EXPECT_EQ(by_three.layers_on_chunk(0, 0, dense, LayerShare::kFirst), 3);
  EXPECT_EQ(by_three.layers_on_chunk(0, 0, moe, LayerShare::kFirst), 0);
  EXPECT_EQ(by_three.layers_on_chunk(0, 0, moe, LayerShare::kRest), 1);
  // Stage 1 holds 20 MoE layers; stage 3 holds 17 and the MTP module last, which is kept.
  EXPECT_EQ(by_three.layers_on_chunk(1, 0, moe, LayerShare::kFirst), 3);
  EXPECT_EQ(by_three.layers_on_chunk(1, 0, moe, LayerShare::kRest), 17);
  EXPECT_EQ(by_three.layers_on_chunk(3, 0, moe, LayerShare::kFirst), 3);
  EXPECT_EQ(by_three.layers_on_chunk(3, 0, mtp, LayerShare::kFirst), 0);
  EXPECT_EQ(by_three.layers_on_chunk(3, 0, mtp, LayerShare::kRest), 1);
}

TEST(PartialRecompute, ARecipeMustRecomputeFullyAndNameALayer) {
  const std::string base = "[model]\npreset = \"llama2-7b\"\n[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 8\n"
                           "[training]\nglobal_batch = 8\n";
  test::expect_error<InputError>([&] { parse_recipe(base + "recompute = \"selective\"\nrecompute_num_layers = 2\n", "r.toml"); },
                                 {"r.toml", "training.recompute_num_layers", "needs recompute = \"full\""});
  test::expect_error<InputError>([&] { parse_recipe(base + "recompute = \"full\"\nrecompute_num_layers = 0\n", "r.toml"); },
                                 {"r.toml", "training.recompute_num_layers"});
  test::expect_error<InputError>([&] { parse_recipe(base + "recompute = \"full\"\nrecompute_num_layers = \"2\"\n", "r.toml"); },
                                 {"r.toml", "training.recompute_num_layers", "expected an integer"});
}

// Llama 2 70B with micro-batches of 4 cannot keep every activation (TP 8 x PP 2 x DP 4 on 80 GB):
// a search over no and full recomputation also tries the fewest recomputed layers per stage that
// fit, which is faster than recomputing all 40; one layer fewer would not fit.
TEST(PartialRecompute, TheSearchTakesTheFewestLayersThatFit) {
  const std::string recipe_text =
      "[model]\npreset = \"llama2-70b\"\n[training]\nglobal_batch = 1024\nmicro_batch = 4\n"
      "recompute = [\"none\", \"full\"]\n[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 64\nmesh_order = [\"tp\", \"dp\", \"pp\"]\n"
      "[[strategy]]\nname = \"tp\"\ndegree = 8\n[[strategy]]\nname = \"sp\"\nmode = \"megatron\"\n"
      "[[strategy]]\nname = \"pp\"\ndegree = 2\nschedule = \"1f1b\"\n[[strategy]]\nname = \"fsdp\"\nstage = 1\n";
  RecipeReaderOptions options;
  options.search = true;
  auto recipe = parse_recipe(recipe_text, "search.toml", options);
  SearchSettings settings;
  settings.threads = 1;
  const SearchResult result = run_search(*recipe, test::bundled_catalog(), settings);
  ASSERT_EQ(result.top.size(), 2u);  // none does not fit; full of every layer and of some do
  const RankedPlan& winner = result.top.front();
  ASSERT_EQ(winner.recompute, PP_RECOMPUTE_FULL);
  ASSERT_GT(winner.recompute_num_layers, 1);
  ASSERT_LT(winner.recompute_num_layers, 40);
  EXPECT_EQ(result.top[1].recompute_num_layers, 0);
  EXPECT_LT(winner.figures.step_s, result.top[1].figures.step_s);
  EXPECT_EQ(recompute_text(winner), "full, first " + std::to_string(winner.recompute_num_layers) + " layers of each chunk");

  const std::string fixed = PARAPLAN_RECIPES_DIR "/scenarios/seed1-llama2-70b-4k-64xh100.toml";
  auto memory = [&](int64_t layers) {
    return test::evaluate_file(fixed, "analytic",
                               {"training.micro_batch=4", "training.recompute=full",
                                "training.recompute_num_layers=" + std::to_string(layers)})
        .number("memory.per_gpu_bytes");
  };
  EXPECT_LE(memory(winner.recompute_num_layers), result.usable_memory_bytes);
  EXPECT_GT(memory(winner.recompute_num_layers - 1), result.usable_memory_bytes);
  EXPECT_DOUBLE_EQ(memory(winner.recompute_num_layers), winner.figures.memory_per_gpu_bytes);
}

}  // namespace
}  // namespace paraplan::host
