// The torchtitan exporter (plugins/exporters/torchtitan): golden files for three recipes (dense 3D,
// MoE with expert parallelism, long context with ring attention and an interleaved pipeline), the
// job config parsed back with toml++ and checked against the recipe's own numbers, and the lines
// reported as unexpressed.
//
// Regenerate the golden files (tests/data/export/torchtitan/<recipe>/) after an intended change:
//   PARAPLAN_UPDATE_GOLDEN=1 paraplan_unit_tests --gtest_filter='ExportTorchtitan*'
#include <gtest/gtest.h>
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

ExportResult export_recipe(const std::string& file) { return test::export_recipe(file, "torchtitan"); }

void check_golden(const std::string& recipe, const ExportResult& result) { test::check_golden("torchtitan", recipe, result); }

using test::file_named;
using test::RecipeFacts;

int64_t integer(const toml::table& config, const char* section, const char* key) {
  std::optional<int64_t> value = config[section][key].value<int64_t>();
  if (!value) ADD_FAILURE() << section << "." << key << " is missing";
  return value.value_or(-1);
}

std::string text(const toml::table& config, const char* section, const char* key) {
  std::optional<std::string> value = config[section][key].value<std::string>();
  if (!value) ADD_FAILURE() << section << "." << key << " is missing";
  return value.value_or("");
}

bool mentions(const std::vector<std::string>& lines, const std::string& fragment) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& line) { return line.find(fragment) != std::string::npos; });
}

// The degrees and batch sizes every recipe must carry into the job config.
void check_against_recipe(const std::string& file, const toml::table& config) {
  const RecipeFacts recipe = test::recipe_facts(file);
  EXPECT_EQ(integer(config, "parallelism", "tensor_parallel_degree"), recipe.tp);
  EXPECT_EQ(integer(config, "parallelism", "context_parallel_degree"), recipe.cp);
  EXPECT_EQ(integer(config, "parallelism", "pipeline_parallel_degree"), recipe.pp);
  EXPECT_EQ(integer(config, "parallelism", "expert_parallel_degree"), recipe.ep);
  EXPECT_EQ(integer(config, "parallelism", "data_parallel_replicate_degree") *
                integer(config, "parallelism", "data_parallel_shard_degree"),
            recipe.dp());
  EXPECT_EQ(integer(config, "training", "global_batch_size"), recipe.global_batch);
  if (recipe.seq_len > 0) {
    EXPECT_EQ(integer(config, "training", "seq_len"), recipe.seq_len);
  }
  // torchtitan accumulates gradients global / (local x dp) times; with a pipeline that is 1 and the
  // pipeline runs local / microbatch_size micro-batches: either way global / (micro x dp) micro-batches.
  const int64_t local = integer(config, "training", "local_batch_size");
  const int64_t accumulation = recipe.global_batch / (local * recipe.dp());
  const int64_t per_pass = recipe.pp > 1 ? local / integer(config, "parallelism", "pipeline_parallel_microbatch_size")
                                         : local / recipe.micro_batch;
  EXPECT_EQ(accumulation * per_pass, recipe.global_batch / (recipe.micro_batch * recipe.dp()));
  EXPECT_EQ(local * accumulation * recipe.dp(), recipe.global_batch);
  EXPECT_EQ(text(config, "activation_checkpoint", "mode"), recipe.recompute);
}

TEST(ExportTorchtitan, Dense3DMatchesTheGoldenFilesAndTheRecipe) {
  const ExportResult result = export_recipe(kDense);
  check_golden("seed1-llama2-70b-4k-64xh100", result);
  const toml::table config = toml::parse(file_named(result, "torchtitan_job.toml").data);
  check_against_recipe(kDense, config);
  EXPECT_EQ(text(config, "parallelism", "pipeline_parallel_schedule"), "1F1B");
  EXPECT_EQ(integer(config, "parallelism", "pipeline_parallel_microbatch_size"), 1);
  // 1024 sequences over dp 4: one step pushes 256 micro-batches of 1 through the pipeline.
  EXPECT_EQ(integer(config, "training", "local_batch_size"), 256);
  EXPECT_EQ(integer(config, "parallelism", "pipeline_parallel_layers_per_stage"), 40);  // 80 layers / 2 stages
  // ZeRO-1 has no torchtitan form: FSDP2 over the 4 data-parallel ranks, reported.
  EXPECT_EQ(integer(config, "parallelism", "data_parallel_shard_degree"), 4);
  EXPECT_EQ(text(config, "parallelism", "fsdp_reshard_after_forward"), "never");
  EXPECT_TRUE(mentions(result.unexpressed, "fsdp stage 1 (ZeRO-1)"));
  EXPECT_TRUE(mentions(result.unexpressed, "model 'llama2-70b'"));
  // The recipe's bf16 weights with an fp32 copy are not how FSDP2 keeps them.
  EXPECT_TRUE(mentions(result.unexpressed, "training.master_weights = \"separate\""));
  // Megatron-LM's selective recompute has no torchtitan form: its per-op policy, reported; the
  // recipe that names that policy exports it as evaluated, with nothing to report about it.
  EXPECT_TRUE(mentions(result.unexpressed, "recompute selective (Megatron-LM's modules)"));
  EXPECT_EQ(result.unexpressed.size(), 4u) << joined(result.unexpressed, "\n");
  const ExportResult op_policy =
      test::export_recipe(kDense, "torchtitan", {"training.recompute_modules=[\"torchtitan_op\"]"});
  const toml::table op_config = toml::parse(file_named(op_policy, "torchtitan_job.toml").data);
  EXPECT_EQ(text(op_config, "activation_checkpoint", "mode"), "selective");
  EXPECT_EQ(text(op_config, "activation_checkpoint", "selective_ac_option"), "op");
  EXPECT_FALSE(mentions(op_policy.unexpressed, "recompute"));
  // Fused elementwise kernels are torch.compile's; eager ones run without it, as evaluated.
  EXPECT_EQ(config["training"]["compile"].value<bool>(), true);
  const ExportResult eager = test::export_recipe(kDense, "torchtitan", {"training.elementwise_kernels=\"eager\""});
  EXPECT_EQ(toml::parse(file_named(eager, "torchtitan_job.toml").data)["training"]["compile"].value<bool>(), false);
  EXPECT_FALSE(mentions(eager.unexpressed, "elementwise_kernels"));
  // Async TP needs torch.compile, which fuses them: reported.
  const ExportResult async_eager = test::export_recipe(
      kDense, "torchtitan", {"training.elementwise_kernels=\"eager\"", "strategy.tp.overlap=true"});
  EXPECT_TRUE(mentions(async_eager.unexpressed, "elementwise_kernels = \"eager\""));
  // torchtitan's async TP is PyTorch's micro-pipelined TP: exact for overlap_method =
  // "micro_pipeline", reported for userbuffers (they also hide the backward pass's collectives).
  const toml::table async_config = toml::parse(file_named(async_eager, "torchtitan_job.toml").data);
  EXPECT_EQ(async_config["parallelism"]["enable_async_tensor_parallel"].value<bool>(), true);
  EXPECT_TRUE(mentions(async_eager.unexpressed, "tp overlap_method userbuffers"));
  const ExportResult micro = test::export_recipe(
      kDense, "torchtitan", {"strategy.tp.overlap=true", "strategy.tp.overlap_method=\"micro_pipeline\""});
  EXPECT_EQ(toml::parse(file_named(micro, "torchtitan_job.toml").data)["parallelism"]["enable_async_tensor_parallel"]
                .value<bool>(),
            true);
  EXPECT_FALSE(mentions(micro.unexpressed, "tp overlap"));
  // The overrides say the same as the file.
  const std::string& overrides = file_named(result, "torchtitan_overrides.txt").data;
  EXPECT_NE(overrides.find("--parallelism.tensor_parallel_degree 8\n"), std::string::npos) << overrides;
  EXPECT_NE(overrides.find("--parallelism.pipeline_parallel_schedule 1F1B\n"), std::string::npos) << overrides;
  const std::string& script = file_named(result, "run_torchtitan.sh").data;
  EXPECT_NE(script.find("NNODES=\"${NNODES:-8}\""), std::string::npos) << script;
  EXPECT_NE(script.find("-m torchtitan.train --job.config_file"), std::string::npos) << script;
}

TEST(ExportTorchtitan, MoeWithExpertParallelismMatchesTheGoldenFilesAndTheRecipe) {
  const ExportResult result = export_recipe(kMoe);
  check_golden("seed6-mixtral-8x7b-ep8-8xh100", result);
  const toml::table config = toml::parse(file_named(result, "torchtitan_job.toml").data);
  check_against_recipe(kMoe, config);
  EXPECT_EQ(integer(config, "parallelism", "data_parallel_shard_degree"), 8);  // ZeRO-3 = FSDP2
  EXPECT_EQ(integer(config, "training", "local_batch_size"), 1);               // accumulates 32 / 8 = 4 times
  EXPECT_FALSE(config["parallelism"]["pipeline_parallel_schedule"]);
  EXPECT_TRUE(mentions(result.unexpressed, "ep capacity_factor = 1"));
  EXPECT_TRUE(mentions(result.unexpressed, "model 'mixtral-8x7b'"));
  EXPECT_FALSE(mentions(result.unexpressed, "fsdp stage"));
  // DeepEP's one copy per rank and the batch-level overlap have no torchtitan form: reported.
  const ExportResult flex =
      test::export_recipe(kMoe, "torchtitan", {"strategy.ep.dispatcher=flex", "strategy.ep.overlap=true",
                                   "training.recompute=selective"});
  EXPECT_TRUE(mentions(flex.unexpressed, "ep dispatcher flex"));
  EXPECT_TRUE(mentions(flex.unexpressed, "ep overlap"));
  EXPECT_FALSE(mentions(result.unexpressed, "ep overlap"));
}

// torchtitan checkpoints every layer or every k-th one, never a stage's first N: a plan that
// recomputes only some layers per chunk is reported, not silently exported as full.
TEST(ExportTorchtitan, PartialRecomputationIsReported) {
  const ExportResult every = test::export_recipe(kMoe, "torchtitan", {"training.recompute=full"});
  EXPECT_FALSE(mentions(every.unexpressed, "recompute_num_layers"));
  const ExportResult some =
      test::export_recipe(kMoe, "torchtitan", {"training.recompute=full", "training.recompute_num_layers=3"});
  EXPECT_TRUE(mentions(some.unexpressed, "recompute_num_layers = 3"));
  // Nor does it offload activations to host memory.
  const ExportResult offloaded =
      test::export_recipe(kMoe, "torchtitan", {"training.recompute=none", "training.cpu_offloading_num_layers=4"});
  EXPECT_TRUE(mentions(offloaded.unexpressed, "cpu_offloading_num_layers = 4"));
}

// torchtitan's SDPA tries cuDNN's fused attention first and has no key to prefer
// FlashAttention-2: a plan priced with FlashAttention-2 is reported, the tuned kernel is not.
TEST(ExportTorchtitan, FlashAttention2IsReported) {
  const std::string reported = "training.attention_kernel = \"flash2\"";
  EXPECT_TRUE(mentions(test::export_recipe(kDense, "torchtitan", {"training.attention_kernel=\"flash2\""}).unexpressed, reported));
  EXPECT_FALSE(mentions(export_recipe(kDense).unexpressed, reported));
  EXPECT_TRUE(mentions(test::export_recipe(kDense, "torchtitan", {"training.attention_kernel=\"triton\""}).unexpressed,
                       "training.attention_kernel = \"triton\""));
}

// torchtitan's models have no dropout: a plan that charged it is reported, one without is not.
TEST(ExportTorchtitan, DropoutIsReported) {
  EXPECT_FALSE(mentions(test::export_recipe(kDense, "torchtitan").unexpressed, "dropout"));
  EXPECT_TRUE(mentions(test::export_recipe(kDense, "torchtitan", {"model.dropout=0.1"}).unexpressed, "model.dropout = 0.1"));
}

// Group-limited routing is in none of torchtitan's job-config keys the export writes (a model's
// flavour carries it in code): refused, not dropped; DeepSpeed the same.
TEST(ExportTorchtitan, RouterGroupsAreRefused) {
  for (const char* exporter : {"torchtitan", "deepspeed"}) {
    try {
      test::export_recipe(kMoe, exporter, {"model.moe_router_groups=4", "model.moe_router_group_topk=2"});
      ADD_FAILURE() << exporter << " accepted";
    } catch (const std::exception& error) {
      EXPECT_NE(std::string(error.what()).find("group-limited routing"), std::string::npos) << error.what();
    }
  }
}

// FP8 attention and the fused expert MLP (SDK 1.8) are in neither torchtitan's job config nor
// DeepSpeed's: each reported, the files written.
TEST(ExportTorchtitan, FusedKernelsAreReported) {
  const std::vector<std::string> fused = {"cluster.hardware=\"b200\"", "training.precision=\"mxfp8\"",
                                          "training.fp8_attention=true", "training.moe_fused_mlp=true"};
  for (const char* exporter : {"torchtitan", "deepspeed"}) {
    const ExportResult result = test::export_recipe(kMoe, exporter, fused);
    EXPECT_TRUE(mentions(result.unexpressed, "training.fp8_attention")) << exporter;
    EXPECT_TRUE(mentions(result.unexpressed, "training.moe_fused_mlp")) << exporter;
    EXPECT_FALSE(mentions(test::export_recipe(kMoe, exporter, {"cluster.hardware=\"b200\"", "training.precision=\"mxfp8\""})
                              .unexpressed,
                          "fused")) << exporter;
  }
}

TEST(ExportTorchtitan, LongContextMatchesTheGoldenFilesAndTheRecipe) {
  const ExportResult result = export_recipe(kLongContext);
  check_golden("llama3-70b-32k-cp4-256xh100", result);
  const toml::table config = toml::parse(file_named(result, "torchtitan_job.toml").data);
  check_against_recipe(kLongContext, config);
  EXPECT_EQ(text(config, "model", "name"), "llama3");
  EXPECT_EQ(text(config, "model", "flavor"), "70B");
  EXPECT_EQ(text(config, "parallelism", "pipeline_parallel_schedule"), "Interleaved1F1B");
  // 80 layers on 4 ranks x 2 chunks.
  EXPECT_EQ(integer(config, "parallelism", "pipeline_parallel_layers_per_stage"), 10);
  EXPECT_EQ(integer(config, "parallelism", "pipeline_parallel_first_stage_less_layers"), 0);
  EXPECT_EQ(text(config, "parallelism", "context_parallel_rotate_method"), "alltoall");
  EXPECT_EQ(integer(config, "training", "local_batch_size"), 32);  // 64 / dp 2
  EXPECT_EQ(result.unexpressed.size(), 3u) << joined(result.unexpressed, "\n");
  EXPECT_TRUE(mentions(result.unexpressed, "recompute selective (Megatron-LM's modules)"));
  EXPECT_TRUE(mentions(result.unexpressed, "fsdp stage 1"));
  EXPECT_TRUE(mentions(result.unexpressed, "training.master_weights = \"separate\""));
}

// DualPipe-V is torch.distributed.pipelining's ScheduleDualPipeV, whose stages
// torchtitan places in a V (pipeline_parallel.py: rank r runs stages r and 2p -
// 1 - r), as the plan does.
TEST(ExportTorchtitan, DualPipeVIsTorchsSchedule) {
  const ExportResult untrimmed = test::export_recipe(kLongContext, "torchtitan",
                                                     {"strategy.pp.schedule=dualpipe-v", "strategy.pp.virtual_stages=1"});
  const toml::table config = toml::parse(file_named(untrimmed, "torchtitan_job.toml").data);
  EXPECT_EQ(text(config, "parallelism", "pipeline_parallel_schedule"), "DualPipeV");
  EXPECT_FALSE(mentions(untrimmed.unexpressed, "pp schedule"));
  // The model parts in the model's order, every layer once, the embedding first and the head
  // last (both of them on rank 0 once torchtitan folds the parts into a V). The ranks' pairs are
  // balanced (pp_test: DualPipeVBalancesTheRanksPairs): a Llama 3 70B layer at 32K is
  // 2h(q + 2kv) + 2qh + 6hf + 4s·a·d = 2,785 MFLOPs a token, the head 2hV = 2,101 (0.754 of a
  // layer), 80.754 units, 20.19 a rank. Rank 0: 19 layers and the head, 10 + 9 the most even pair;
  // ranks 1 and 2: 20 of the 20.33 and 20.5 left a rank, 10 + 10; rank 3 the middle 21, 11 + 10.
  const std::vector<size_t> layers_per_part{10, 10, 10, 11, 10, 10, 10, 9};
  auto parts_of = [](const toml::table& job) {
    std::vector<std::vector<std::string>> parts;
    const toml::array* array = job["parallelism"]["module_fqns_per_model_part"].as_array();
    if (!array) return parts;
    for (const toml::node& part : *array) {
      parts.emplace_back();
      for (const toml::node& name : *part.as_array()) parts.back().push_back(name.value<std::string>().value_or(""));
    }
    return parts;
  };
  const std::vector<std::vector<std::string>> balanced = parts_of(config);
  ASSERT_EQ(balanced.size(), 8u);
  for (size_t part = 0; part < 8; ++part) {
    const size_t extra = part == 0 ? 1 : part == 7 ? 2 : 0;  // tok_embeddings; norm and output
    EXPECT_EQ(balanced[part].size(), layers_per_part[part] + extra) << part;
  }
  // Ends trimmed: the embedding weighs a mean layer too.
  const ExportResult trimmed = test::export_recipe(
      kLongContext, "torchtitan",
      {"strategy.pp.schedule=dualpipe-v", "strategy.pp.virtual_stages=1", "strategy.pp.trim_ends=true"});
  const std::vector<std::vector<std::string>> parts = parts_of(toml::parse(file_named(trimmed, "torchtitan_job.toml").data));
  ASSERT_EQ(parts.size(), 8u);
  std::vector<std::string> names;
  for (const std::vector<std::string>& part : parts) names.insert(names.end(), part.begin(), part.end());
  ASSERT_EQ(names.size(), 80u + 3);
  EXPECT_EQ(names.front(), "tok_embeddings");
  EXPECT_EQ(names.back(), "output");
  for (int layer = 0; layer < 80; ++layer)
    EXPECT_EQ(names[static_cast<size_t>(layer) + 1], "layers." + std::to_string(layer));
  // Megatron-LM has no DualPipe: its script runs 1F1B, and says so.
  const ExportResult megatron = test::export_recipe(
      kLongContext, "megatron", {"strategy.pp.schedule=dualpipe-v", "strategy.pp.virtual_stages=1"});
  EXPECT_TRUE(mentions(megatron.unexpressed, "pp schedule 'dualpipe-v'"));
}

// FSDP2 reduces and gathers one TransformerBlock at a time, one prefetched: a plan priced with
// gradient buckets or another prefetch depth is reported, the defaults are not.
TEST(ExportTorchtitan, BucketsAndPrefetchDepthOtherThanFsdp2sAreReported) {
  const std::string seed5 = PARAPLAN_RECIPES_DIR "/scenarios/seed5-llama2-7b-fsdp3-scaling.toml";
  const ExportResult plain = test::export_recipe(seed5, "torchtitan");
  EXPECT_FALSE(mentions(plain.unexpressed, "bucket_parameters"));
  EXPECT_FALSE(mentions(plain.unexpressed, "prefetch"));
  const ExportResult other =
      test::export_recipe(seed5, "torchtitan", {"strategy.fsdp.bucket_parameters=5e8", "strategy.fsdp.prefetch=2"});
  EXPECT_TRUE(mentions(other.unexpressed, "fsdp bucket_parameters = 5e+08: FSDP2 reduces each TransformerBlock's"));
  EXPECT_TRUE(mentions(other.unexpressed, "fsdp prefetch = 2: torchtitan's FSDP2 prefetches one TransformerBlock ahead"));
}

}  // namespace
}  // namespace paraplan::host
