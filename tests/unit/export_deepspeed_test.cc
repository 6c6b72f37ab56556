// The DeepSpeed exporter (plugins/exporters/deepspeed): golden files for three recipes (dense 3D,
// MoE with expert parallelism, long context with ring attention and an interleaved pipeline), the
// ds_config.json parsed back with nlohmann::json and checked against the recipe's own numbers
// (train_batch_size = micro x gradient_accumulation_steps x dp), and the unexpressed lines.
//
// Regenerate the golden files (tests/data/export/deepspeed/<recipe>/) after an intended change:
//   PARAPLAN_UPDATE_GOLDEN=1 paraplan_unit_tests --gtest_filter='ExportDeepspeed*'
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "host/export/exporting.h"
#include "host/plan/hardware_binding.h"
#include "host/recipe/recipe_reader.h"
#include "export_test_support.h"
#include "host/core/joined.h"

namespace paraplan::host {
namespace {

const std::string& kDense = test::kDenseRecipe;
const std::string& kMoe = test::kMoeRecipe;
const std::string& kLongContext = test::kLongContextRecipe;

ExportResult export_recipe(const std::string& file) { return test::export_recipe(file, "deepspeed"); }

void check_golden(const std::string& recipe, const ExportResult& result) { test::check_golden("deepspeed", recipe, result); }

nlohmann::json config_of(const ExportResult& result) {
  return nlohmann::json::parse(test::file_named(result, "ds_config.json").data);
}

const std::string& script_of(const ExportResult& result) { return test::file_named(result, "run_deepspeed.sh").data; }

using test::RecipeFacts;

bool mentions(const std::vector<std::string>& lines, const std::string& fragment) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& line) { return line.find(fragment) != std::string::npos; });
}

void check_against_recipe(const std::string& file, const nlohmann::json& config) {
  const RecipeFacts recipe = test::recipe_facts(file);
  const int64_t micro = config.at("train_micro_batch_size_per_gpu").get<int64_t>();
  const int64_t accumulation = config.at("gradient_accumulation_steps").get<int64_t>();
  EXPECT_EQ(config.at("train_batch_size").get<int64_t>(), recipe.global_batch);
  EXPECT_EQ(micro, recipe.micro_batch);
  EXPECT_EQ(accumulation, recipe.global_batch / (recipe.micro_batch * recipe.dp()));
  // DeepSpeed's own batch assertion.
  EXPECT_EQ(config.at("train_batch_size").get<int64_t>(), micro * accumulation * recipe.dp());
  EXPECT_TRUE(config.at("bf16").at("enabled").get<bool>());
  if (recipe.pp > 1) {
    EXPECT_EQ(config.at("pipeline").at("stages").get<int64_t>(), recipe.pp);
  } else {
    EXPECT_FALSE(config.contains("pipeline"));
  }
  if (recipe.tp > 1) {
    EXPECT_EQ(config.at("tensor_parallel").at("autotp_size").get<int64_t>(), recipe.tp);
  }
  EXPECT_EQ(config.contains("activation_checkpointing"), recipe.recompute == "full");
}

TEST(ExportDeepspeed, Dense3DMatchesTheGoldenFilesAndTheRecipe) {
  const ExportResult result = export_recipe(kDense);
  check_golden("seed1-llama2-70b-4k-64xh100", result);
  const nlohmann::json config = config_of(result);
  check_against_recipe(kDense, config);
  EXPECT_EQ(config.at("gradient_accumulation_steps").get<int64_t>(), 256);  // 1024 / (1 x 4)
  EXPECT_EQ(config.at("zero_optimization").at("stage").get<int64_t>(), 1);
  EXPECT_TRUE(config.at("zero_optimization").at("overlap_comm").get<bool>());
  EXPECT_EQ(config.at("pipeline").at("activation_checkpoint_interval").get<int64_t>(), 0);
  EXPECT_TRUE(mentions(result.unexpressed, "tp 8: DeepSpeed's engine has tensor parallelism only as AutoTP"));
  EXPECT_TRUE(mentions(result.unexpressed, "sp megatron"));
  EXPECT_TRUE(mentions(result.unexpressed, "recompute selective"));
  EXPECT_EQ(result.unexpressed.size(), 3u) << joined(result.unexpressed, "\n");
  const std::string& script = script_of(result);
  EXPECT_NE(script.find("--num_nodes 8 --num_gpus 8"), std::string::npos) << script;
  EXPECT_NE(script.find("--deepspeed_config \"$HERE/ds_config.json\""), std::string::npos) << script;
  EXPECT_NE(script.find("num_stages=2"), std::string::npos) << script;
}

TEST(ExportDeepspeed, MoeWithExpertParallelismMatchesTheGoldenFilesAndTheRecipe) {
  const ExportResult result = export_recipe(kMoe);
  check_golden("seed6-mixtral-8x7b-ep8-8xh100", result);
  const nlohmann::json config = config_of(result);
  check_against_recipe(kMoe, config);
  EXPECT_EQ(config.at("gradient_accumulation_steps").get<int64_t>(), 4);  // 32 / (1 x 8)
  EXPECT_EQ(config.at("zero_optimization").at("stage").get<int64_t>(), 3);
  EXPECT_FALSE(config.at("zero_optimization").contains("reduce_scatter"));  // a ZeRO-1/2 option
  EXPECT_TRUE(mentions(result.unexpressed, "ep 8: DeepSpeed-MoE takes expert parallelism in the model code"));
  EXPECT_TRUE(mentions(result.unexpressed, "ep_size=8"));
  // ZeRO-3: DeepSpeed gathers submodule by submodule, the plan one layer at a time.
  EXPECT_TRUE(mentions(result.unexpressed, "ZeRO-3 weight gathers"));
  EXPECT_EQ(result.unexpressed.size(), 2u) << joined(result.unexpressed, "\n");
  EXPECT_NE(script_of(result).find("deepspeed --num_nodes 1 --num_gpus 8"), std::string::npos) << script_of(result);
}

TEST(ExportDeepspeed, LongContextMatchesTheGoldenFilesAndTheRecipe) {
  const ExportResult result = export_recipe(kLongContext);
  check_golden("llama3-70b-32k-cp4-256xh100", result);
  const nlohmann::json config = config_of(result);
  check_against_recipe(kLongContext, config);
  EXPECT_EQ(config.at("gradient_accumulation_steps").get<int64_t>(), 32);  // 64 / (1 x dp 2)
  EXPECT_FALSE(config.contains("sequence_parallel_size"));                 // ring attention is not Ulysses
  EXPECT_TRUE(mentions(result.unexpressed, "sp mode ring (context parallelism 4)"));
  EXPECT_TRUE(mentions(result.unexpressed, "pp schedule interleaved-1f1b (2 virtual stages)"));
}

// DeepSpeed checkpoints every layer (activation_checkpoint_interval k: every k-th), never a
// stage's first N: partial recomputation is reported.
TEST(ExportDeepspeed, PartialRecomputationIsReported) {
  const ExportResult every = test::export_recipe(kDense, "deepspeed", {"training.recompute=full"});
  EXPECT_FALSE(mentions(every.unexpressed, "recompute_num_layers"));
  const ExportResult some =
      test::export_recipe(kDense, "deepspeed", {"training.recompute=full", "training.recompute_num_layers=5"});
  EXPECT_TRUE(mentions(some.unexpressed, "recompute_num_layers = 5"));
}

// DeepSpeed's cpu_checkpointing moves only recomputed layers' checkpoints: offloaded activations
// are reported.
TEST(ExportDeepspeed, ActivationOffloadIsReported) {
  const ExportResult offloaded = test::export_recipe(
      kMoe, "deepspeed", {"training.recompute=none", "training.cpu_offloading_num_layers=4"});
  EXPECT_TRUE(mentions(offloaded.unexpressed, "cpu_offloading_num_layers = 4"));
}

// DeepSpeed's pipeline engine takes ZeRO 0-1. ZeRO-2 under pp is priced as ZeRO-1 already
// (gradients whole, reduced once per step: docs/cost-model.md), so its ZeRO-1 export runs the
// evaluated plan and says nothing; ZeRO-3's weights, gathered once and held, are another plan.
TEST(ExportDeepspeed, PipelinedZero2IsZero1AndZero3IsReported) {
  const ExportResult stage2 = test::export_recipe(kDense, "deepspeed", {"strategy.fsdp.stage=2"});
  EXPECT_EQ(config_of(stage2).at("zero_optimization").at("stage").get<int64_t>(), 1);
  EXPECT_FALSE(mentions(stage2.unexpressed, "with pipeline parallelism")) << joined(stage2.unexpressed, "\n");
  const ExportResult stage3 = test::export_recipe(kDense, "deepspeed", {"strategy.fsdp.stage=3"});
  EXPECT_EQ(config_of(stage3).at("zero_optimization").at("stage").get<int64_t>(), 1);
  EXPECT_TRUE(mentions(stage3.unexpressed, "ZeRO-3 with pipeline parallelism"));
}

// Buckets in elements (deepspeed/runtime/zero/config.py): the plan's bucket_parameters, or one
// layer's parameters where the plan reduces one collective per layer; ZeRO-3 prefetches
// `prefetch` layers' parameters. Llama 2 7B's layer by hand: attention 4·4096², SwiGLU
// 3·4096·11008, two norms 2·4096 = 202,383,360 parameters.
TEST(ExportDeepspeed, BucketsAndPrefetchAsDeepSpeedSizesThem) {
  const std::string seed5 = PARAPLAN_RECIPES_DIR "/scenarios/seed5-llama2-7b-fsdp3-scaling.toml";
  const double layer = 4.0 * 4096 * 4096 + 3.0 * 4096 * 11008 + 2 * 4096;
  const nlohmann::json per_layer = config_of(test::export_recipe(seed5, "deepspeed")).at("zero_optimization");
  EXPECT_EQ(per_layer.at("reduce_bucket_size").get<double>(), layer);
  EXPECT_EQ(per_layer.at("stage3_prefetch_bucket_size").get<double>(), layer);
  const nlohmann::json deeper =
      config_of(test::export_recipe(seed5, "deepspeed", {"strategy.fsdp.bucket_parameters=5e8", "strategy.fsdp.prefetch=2"}))
          .at("zero_optimization");
  EXPECT_EQ(deeper.at("reduce_bucket_size").get<double>(), 5e8);
  EXPECT_EQ(deeper.at("stage3_prefetch_bucket_size").get<double>(), 2 * layer);
  const nlohmann::json stage1 =
      config_of(test::export_recipe(seed5, "deepspeed", {"strategy.fsdp.stage=1", "strategy.fsdp.bucket_parameters=4e7"}))
          .at("zero_optimization");
  EXPECT_EQ(stage1.at("reduce_bucket_size").get<double>(), 4e7);
  EXPECT_EQ(stage1.at("allgather_bucket_size").get<double>(), 4e7);
  EXPECT_FALSE(stage1.contains("stage3_prefetch_bucket_size"));
}

}  // namespace
}  // namespace paraplan::host
