// The megatron exporter (plugins/exporters/megatron): launch_megatron.sh for three recipes
// compared with golden files, every pretrain_gpt.py flag checked against Megatron-LM's own
// argument list, values checked against the recipes, and what Megatron-LM cannot express.
//
// Golden files: tests/data/export/megatron/<recipe>.sh. Regenerate them after an intended change:
//   PARAPLAN_UPDATE_GOLDEN=1 bin/paraplan_unit_tests --gtest_filter='ExportMegatron*'
// (the test then writes the files instead of comparing, and passes; review the diff).
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "host/export/exporting.h"
#include "test_support.h"

namespace paraplan::host {
namespace {

// Every flag the exporter may emit, each defined by group.add_argument in Megatron-LM's
// megatron/training/arguments.py (NVIDIA/Megatron-LM, as of core 0.14/0.15): the network size,
// regularization, training, mixed precision, distributed, data, tokenizer, moe and
// Transformer-Engine groups.
const std::set<std::string> kMegatronFlags = {
    // _add_network_size_args
    "--num-layers", "--hidden-size", "--ffn-hidden-size", "--num-attention-heads", "--attention-backend",
    "--kv-channels", "--group-query-attention", "--num-query-groups", "--max-position-embeddings",
    "--position-embedding-type", "--normalization", "--swiglu", "--untie-embeddings-and-output-weights",
    // _add_training_args
    "--micro-batch-size", "--global-batch-size", "--recompute-granularity", "--recompute-method", "--recompute-modules",
    "--recompute-num-layers", "--cpu-offloading-num-layers", "--tp-comm-overlap", "--cuda-graph-impl", "--cuda-graph-modules", "--train-iters", "--log-interval", "--disable-bias-linear",
    "--optimizer", "--sequence-parallel", "--no-gradient-accumulation-fusion", "--use-flash-attn",
    // _add_learning_rate_args
    "--lr",
    // _add_regularization_args (from 2026 generated from TransformerConfig's fields of these names)
    "--attention-dropout", "--hidden-dropout",
    // _add_mixed_precision_args
    "--fp16", "--bf16",
    // _add_transformer_engine_args
    "--fp8-format", "--fp8-recipe", "--fp4-format", "--fp4-recipe",
    // _add_distributed_args
    "--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--decoder-first-pipeline-num-layers",
    "--decoder-last-pipeline-num-layers", "--num-layers-per-virtual-pipeline-stage",
    "--num-virtual-stages-per-pipeline-rank", "--overlap-grad-reduce", "--overlap-param-gather",
    "--use-distributed-optimizer", "--num-distributed-optimizer-instances", "--use-torch-fsdp2",
    "--torch-fsdp2-no-reshard-after-forward", "--context-parallel-size", "--cp-comm-type",
    "--overlap-moe-expert-parallel-comm", "--ddp-bucket-size",
    // _add_validation_args
    "--eval-iters",
    // _add_tokenizer_args
    "--vocab-size", "--padded-vocab-size", "--tokenizer-type",
    // _add_data_args
    "--mock-data", "--seq-length",
    // _add_moe_args
    "--expert-model-parallel-size", "--expert-tensor-parallel-size", "--num-experts", "--moe-ffn-hidden-size",
    "--moe-shared-expert-intermediate-size", "--moe-router-topk", "--moe-token-dispatcher-type",
    "--moe-expert-capacity-factor", "--moe-pad-expert-input-to-capacity", "--moe-flex-dispatcher-backend",
    // TransformerConfig's fields, made flags by ArgumentGroupFactory ("--" + the field's name with
    // dashes, megatron/training/argument_utils.py; transformer_config.py at d98e8a6: lines 525, 1011)
    "--moe-router-num-groups", "--moe-router-group-topk", "--use-transformer-engine-op-fuser",
    "--moe-mlp-glu-interleave-size"};

struct Export {
  std::string script;  // launch_megatron.sh, the recipe path relative to the source tree
  std::vector<std::string> unexpressed;
};

Export finish(const Recipe& recipe) {
  std::unique_ptr<HardwareBinding> hardware = open_hardware(recipe, test::bundled_catalog());
  const ComposedPlan composed = compose_plan(recipe, test::bundled_catalog(), gpus_per_node(recipe, *hardware));
  ExportResult result = run_exporter("megatron", recipe, test::bundled_catalog(), composed, *hardware);
  EXPECT_EQ(result.files.size(), 1u);
  Export exported{result.files.empty() ? "" : result.files.front().data, result.unexpressed};
  if (!result.files.empty()) {
    EXPECT_EQ(result.files.front().name, "launch_megatron.sh");
    EXPECT_TRUE(result.files.front().text);
  }
  // The recipe's path as the command line in the source tree would print it.
  const std::string prefix = std::string(PARAPLAN_SOURCE_DIR) + "/";
  for (size_t at = exported.script.find(prefix); at != std::string::npos; at = exported.script.find(prefix))
    exported.script.erase(at, prefix.size());
  return exported;
}

// A recipe under the source tree ("recipes/..."), with --set overrides.
Export export_file(const std::string& relative, const std::vector<std::string>& overrides = {}) {
  RecipeReaderOptions options;
  options.overrides = overrides;
  return finish(*read_recipe(std::string(PARAPLAN_SOURCE_DIR) + "/" + relative, options));
}

Export export_text(const std::string& text) { return finish(*parse_recipe(text, "recipe.toml")); }

// The pretrain_gpt.py arguments: the lines of the script's bash arrays (NAME=( ... )), comments
// left out, each "--flag [value]".
std::vector<std::pair<std::string, std::string>> arguments(const std::string& script) {
  std::vector<std::pair<std::string, std::string>> result;
  std::istringstream lines(script);
  std::string line;
  bool inside = false;
  while (std::getline(lines, line)) {
    if (!inside && line.size() > 2 && line.ends_with("=(")) {
      inside = true;
      continue;
    }
    if (inside && line == ")") {
      inside = false;
      continue;
    }
    if (!inside) continue;
    std::istringstream words(line);
    std::string flag, value;
    words >> flag;
    if (flag.empty() || flag.front() == '#') continue;
    std::getline(words >> std::ws, value);
    result.emplace_back(flag, value);
  }
  return result;
}

// The value of a flag (absent: "<absent>"; a switch: "").
std::string value(const std::string& script, const std::string& flag) {
  for (const auto& [name, text] : arguments(script))
    if (name == flag) return text;
  return "<absent>";
}

bool has(const std::string& script, const std::string& flag) { return value(script, flag) != "<absent>"; }

bool mentions(const std::vector<std::string>& lines, const std::string& fragment) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& line) { return line.find(fragment) != std::string::npos; });
}

void expect_real_flags(const std::string& script) {
  const auto list = arguments(script);
  EXPECT_GT(list.size(), 20u);
  for (const auto& [flag, text] : list) {
    EXPECT_TRUE(flag.starts_with("--")) << flag;
    EXPECT_TRUE(kMegatronFlags.count(flag)) << flag << " is not a Megatron-LM flag (arguments.py)";
    // Values are single words: numbers, choices; a list (nargs='+' or '*') one word per item.
    if (flag != "--cuda-graph-modules" && flag != "--recompute-modules") {
      EXPECT_EQ(text.find(' '), std::string::npos) << flag << " " << text;
    }
  }
  // Every array reaches pretrain_gpt.py.
  std::istringstream lines(script);
  std::string line;
  while (std::getline(lines, line))
    if (line.ends_with("=(")) {
      const std::string array = line.substr(0, line.size() - 2);
      EXPECT_NE(script.find("\"${" + array + "[@]}\""), std::string::npos) << array;
    }
  const size_t launcher = script.find("torchrun");
  ASSERT_NE(launcher, std::string::npos);
  EXPECT_LT(launcher, script.find("pretrain_gpt.py", launcher));
  for (const char* option : {"--nnodes", "--nproc-per-node", "--node-rank", "--master-addr", "--master-port"})
    EXPECT_NE(script.find(option, launcher), std::string::npos) << option;
}

const char* const kGoldenRecipes[] = {"recipes/scenarios/seed1-llama2-70b-4k-64xh100.toml",
                                      "recipes/scenarios/seed6-mixtral-8x7b-ep8-8xh100.toml",
                                      "recipes/export/llama3-70b-32k-cp4-256xh100.toml"};

TEST(ExportMegatron, MatchesTheGoldenScripts) {
  const char* flag = std::getenv("PARAPLAN_UPDATE_GOLDEN");
  const bool update = flag && std::string(flag) == "1";
  for (const std::string recipe : kGoldenRecipes) {
    SCOPED_TRACE(recipe);
    const Export exported = export_file(recipe);
    const std::filesystem::path golden = std::filesystem::path(PARAPLAN_TEST_DATA_DIR) / "export" / "megatron" /
                                         (std::filesystem::path(recipe).stem().string() + ".sh");
    if (update) {
      std::ofstream(golden, std::ios::binary) << exported.script;
      continue;
    }
    std::ifstream in(golden, std::ios::binary);
    ASSERT_TRUE(in) << golden << " is missing: PARAPLAN_UPDATE_GOLDEN=1 writes it";
    std::stringstream expected;
    expected << in.rdbuf();
    EXPECT_EQ(exported.script, expected.str()) << "regenerate with PARAPLAN_UPDATE_GOLDEN=1 if the change is intended";
  }
}

TEST(ExportMegatron, EmitsOnlyMegatronFlags) {
  for (const std::string recipe : kGoldenRecipes) {
    SCOPED_TRACE(recipe);
    expect_real_flags(export_file(recipe).script);
  }
  expect_real_flags(export_file("recipes/scenarios/seed5-llama2-7b-fsdp3-scaling.toml").script);
  expect_real_flags(export_file("recipes/scenarios/seed1-llama2-70b-4k-64xh100.toml",
                                {"strategy.tp.overlap=true", "training.precision=fp8", "training.recompute=full"})
                        .script);
}

// Llama 2 70B on 64 H100: TP 8 x PP 2 x DP 4, Megatron sequence parallelism, ZeRO-1.
TEST(ExportMegatron, DenseThreeDimensionalPlan) {
  const Export exported = export_file("recipes/scenarios/seed1-llama2-70b-4k-64xh100.toml");
  const std::string& script = exported.script;
  EXPECT_TRUE(exported.unexpressed.empty());
  EXPECT_EQ(value(script, "--num-layers"), "80");
  EXPECT_EQ(value(script, "--hidden-size"), "8192");
  EXPECT_EQ(value(script, "--num-attention-heads"), "64");
  EXPECT_TRUE(has(script, "--group-query-attention"));
  EXPECT_EQ(value(script, "--num-query-groups"), "8");
  EXPECT_EQ(value(script, "--seq-length"), "4096");
  EXPECT_TRUE(has(script, "--swiglu"));
  EXPECT_EQ(value(script, "--tensor-model-parallel-size"), "8");
  EXPECT_EQ(value(script, "--pipeline-model-parallel-size"), "2");
  EXPECT_FALSE(has(script, "--num-layers-per-virtual-pipeline-stage"));
  EXPECT_FALSE(has(script, "--context-parallel-size"));
  EXPECT_TRUE(has(script, "--sequence-parallel"));
  EXPECT_TRUE(has(script, "--use-distributed-optimizer"));
  EXPECT_TRUE(has(script, "--overlap-grad-reduce"));
  EXPECT_TRUE(has(script, "--overlap-param-gather"));
  EXPECT_EQ(value(script, "--micro-batch-size"), "1");
  EXPECT_EQ(value(script, "--global-batch-size"), "1024");
  EXPECT_TRUE(has(script, "--bf16"));
  EXPECT_EQ(value(script, "--recompute-granularity"), "selective");
  EXPECT_FALSE(has(script, "--recompute-method"));  // Megatron-LM refuses a method with selective
  EXPECT_FALSE(has(script, "--num-experts"));
  EXPECT_EQ(value(script, "--train-iters"), "100");
  EXPECT_TRUE(has(script, "--mock-data"));
  EXPECT_EQ(value(script, "--tokenizer-type"), "NullTokenizer");
  EXPECT_EQ(value(script, "--padded-vocab-size"), "32000");
  EXPECT_NE(script.find("NNODES=\"${NNODES:-8}\""), std::string::npos);
  EXPECT_NE(script.find("GPUS_PER_NODE=\"${GPUS_PER_NODE:-8}\""), std::string::npos);
  EXPECT_NE(script.find("MEGATRON_PATH=\"${MEGATRON_PATH:-/workspace/Megatron-LM}\""), std::string::npos);
  EXPECT_NE(script.find("export CUDA_DEVICE_MAX_CONNECTIONS=1"), std::string::npos);
  EXPECT_NE(script.find("recipes/scenarios/seed1-llama2-70b-4k-64xh100.toml"), std::string::npos);
}

// cuda_graph_modules as TransformerConfig's cuda_graph_impl and cuda_graph_modules: the whole
// iteration, or Transformer Engine's per-layer graphs of the named modules (one word each).
TEST(ExportMegatron, CudaGraphsAsMegatronCapturesThem) {
  const std::string recipe = "recipes/scenarios/seed6-mixtral-8x7b-ep8-8xh100.toml";
  const Export modules = export_file(recipe, {"training.cuda_graph_modules=[\"attn\", \"moe_router\"]"});
  EXPECT_EQ(value(modules.script, "--cuda-graph-impl"), "transformer_engine");
  EXPECT_EQ(value(modules.script, "--cuda-graph-modules"), "attn moe_router");
  expect_real_flags(modules.script);
  const Export full = export_file(recipe, {"training.cuda_graph_modules=[\"full_iteration\"]"});
  EXPECT_EQ(value(full.script, "--cuda-graph-impl"), "full_iteration");
  EXPECT_FALSE(has(full.script, "--cuda-graph-modules"));
  EXPECT_FALSE(has(export_file(recipe).script, "--cuda-graph-impl"));
}

// Selective recomputation of the modules the recipe names, as Megatron-LM's --recompute-modules
// (nargs='*', default core_attn, which is therefore left implicit).
TEST(ExportMegatron, RecomputedModulesAsMegatronNamesThem) {
  const std::string recipe = "recipes/scenarios/seed6-mixtral-8x7b-ep8-8xh100.toml";
  const Export named = export_file(recipe, {"training.recompute=selective",
                                            "training.recompute_modules=[\"moe_act\", \"layernorm\"]"});
  EXPECT_EQ(value(named.script, "--recompute-granularity"), "selective");
  EXPECT_EQ(value(named.script, "--recompute-modules"), "layernorm moe_act");  // in bit order
  expect_real_flags(named.script);
  const Export core = export_file(recipe, {"training.recompute=selective"});
  EXPECT_EQ(value(core.script, "--recompute-granularity"), "selective");
  EXPECT_FALSE(has(core.script, "--recompute-modules"));
  // torchtitan's per-op policy has no Megatron-LM module: the default selective, reported.
  const Export op_policy = export_file("recipes/scenarios/seed1-llama2-70b-4k-64xh100.toml",
                                       {"training.recompute_modules=[\"torchtitan_op\"]"});
  EXPECT_EQ(value(op_policy.script, "--recompute-granularity"), "selective");
  EXPECT_FALSE(has(op_policy.script, "--recompute-modules"));
  ASSERT_EQ(op_policy.unexpressed.size(), 1u);
  EXPECT_NE(op_policy.unexpressed[0].find("recompute_modules = [\"torchtitan_op\"]"), std::string::npos);
}

// Full recomputation of every layer is Megatron-LM's uniform method in units of one layer; of
// each chunk's first N layers, its block method (megatron/core/recompute.py: layers at indices
// below recompute_num_layers are checkpointed, the rest run without).
TEST(ExportMegatron, PartialRecomputationAsTheBlockMethod) {
  const std::string recipe = "recipes/scenarios/seed1-llama2-70b-4k-64xh100.toml";
  const Export every = export_file(recipe, {"training.recompute=full"});
  EXPECT_EQ(value(every.script, "--recompute-granularity"), "full");
  EXPECT_EQ(value(every.script, "--recompute-method"), "uniform");
  EXPECT_EQ(value(every.script, "--recompute-num-layers"), "1");
  const Export some = export_file(recipe, {"training.recompute=full", "training.recompute_num_layers=7"});
  EXPECT_EQ(value(some.script, "--recompute-granularity"), "full");
  EXPECT_EQ(value(some.script, "--recompute-method"), "block");
  EXPECT_EQ(value(some.script, "--recompute-num-layers"), "7");
  EXPECT_TRUE(some.unexpressed.empty());
  expect_real_flags(some.script);
}

// Activation offloading as Megatron-LM's --cpu-offloading-num-layers (arguments.py turns
// cpu_offloading on when it is set).
TEST(ExportMegatron, ActivationOffloadAsCpuOffloadingLayers) {
  const Export offloaded = export_file("recipes/scenarios/seed5-llama2-7b-fsdp3-scaling.toml",
                                       {"training.recompute=none", "training.cpu_offloading_num_layers=8"});
  EXPECT_EQ(value(offloaded.script, "--cpu-offloading-num-layers"), "8");
  EXPECT_FALSE(has(offloaded.script, "--recompute-granularity"));
  EXPECT_TRUE(offloaded.unexpressed.empty());
  expect_real_flags(offloaded.script);
  EXPECT_FALSE(has(export_file("recipes/scenarios/seed5-llama2-7b-fsdp3-scaling.toml").script, "--cpu-offloading-num-layers"));
}

// The attention kernel as Megatron-LM's --attention-backend (AttnBackend): the tuned kernel is
// `auto` (Transformer Engine prefers cuDNN's fused attention on Hopper and later, FlashAttention on
// Ampere), FlashAttention-2 is `flash`, unfused attention `unfused`.
TEST(ExportMegatron, AttentionKernelAsTheAttentionBackend) {
  const std::string recipe = "recipes/scenarios/seed1-llama2-70b-4k-64xh100.toml";
  EXPECT_EQ(value(export_file(recipe).script, "--attention-backend"), "auto");
  EXPECT_EQ(value(export_file(recipe, {"training.attention_kernel=\"flash2\""}).script, "--attention-backend"), "flash");
  EXPECT_EQ(value(export_file(recipe, {"training.flash_attention=false"}).script, "--attention-backend"), "unfused");
  // No Triton FlashAttention in Megatron-LM: the nearest backend, and the difference reported.
  const Export triton = export_file(recipe, {"training.attention_kernel=\"triton\""});
  EXPECT_EQ(value(triton.script, "--attention-backend"), "flash");
  ASSERT_EQ(triton.unexpressed.size(), 1u);
  EXPECT_NE(triton.unexpressed[0].find("training.attention_kernel = \"triton\""), std::string::npos);
  EXPECT_TRUE(export_file(recipe, {"training.attention_kernel=\"flash2\""}).unexpressed.empty());
  // Megatron-LM's norms, rotary and GLU are fused kernels: a plan priced with eager ones, reported.
  const Export eager = export_file(recipe, {"training.elementwise_kernels=\"eager\""});
  ASSERT_EQ(eager.unexpressed.size(), 1u);
  EXPECT_NE(eager.unexpressed[0].find("training.elementwise_kernels = \"eager\""), std::string::npos);
}

// The fused expert MLP as Megatron-Core's use_transformer_engine_op_fuser with the GLU's halves
// interleaved by 32 (Megatron-Bridge's cutedsl_fused_grouped_mlp sets both: scripts/performance/
// utils/overrides.py); FP8 attention has no flag (arguments.py leaves fp8_dot_product_attention
// off the command line): reported.
TEST(ExportMegatron, FusedExpertMlpAsTheOpFuserAndFp8AttentionReported) {
  const std::string recipe = "recipes/scenarios/seed6-mixtral-8x7b-ep8-8xh100.toml";
  const std::vector<std::string> blackwell = {"cluster.hardware=\"b200\"", "training.precision=\"mxfp8\""};
  std::vector<std::string> fused = blackwell;
  fused.push_back("training.moe_fused_mlp=true");
  const Export mlp = export_file(recipe, fused);
  EXPECT_TRUE(has(mlp.script, "--use-transformer-engine-op-fuser"));
  EXPECT_EQ(value(mlp.script, "--moe-mlp-glu-interleave-size"), "32");
  EXPECT_FALSE(has(export_file(recipe, blackwell).script, "--use-transformer-engine-op-fuser"));
  expect_real_flags(mlp.script);
  fused.push_back("training.fp8_attention=true");
  bool reported = false;
  for (const std::string& line : export_file(recipe, fused).unexpressed)
    reported = reported || line.find("training.fp8_attention") != std::string::npos;
  EXPECT_TRUE(reported);
}

// Group-limited routing as TransformerConfig's moe_router_num_groups and moe_router_group_topk
// (Megatron-Core's group_limited_topk); a model without groups writes neither.
TEST(ExportMegatron, RouterGroupsAsMegatronLimitsThem) {
  const std::string recipe = "recipes/scenarios/seed6-mixtral-8x7b-ep8-8xh100.toml";
  const Export grouped = export_file(recipe, {"model.moe_router_groups=4", "model.moe_router_group_topk=2"});
  EXPECT_EQ(value(grouped.script, "--moe-router-num-groups"), "4");
  EXPECT_EQ(value(grouped.script, "--moe-router-group-topk"), "2");
  expect_real_flags(grouped.script);
  EXPECT_FALSE(has(export_file(recipe).script, "--moe-router-num-groups"));
}

// Mixtral 8x7B, EP 8 on 8 GPUs, capacity factor 1 with padded buffers, full recompute, FSDP-3.
TEST(ExportMegatron, ExpertParallelPlan) {
  const Export exported = export_file("recipes/scenarios/seed6-mixtral-8x7b-ep8-8xh100.toml");
  const std::string& script = exported.script;
  EXPECT_EQ(value(script, "--num-experts"), "8");
  EXPECT_EQ(value(script, "--moe-router-topk"), "2");
  EXPECT_EQ(value(script, "--moe-ffn-hidden-size"), "14336");
  EXPECT_EQ(value(script, "--expert-model-parallel-size"), "8");
  EXPECT_EQ(value(script, "--expert-tensor-parallel-size"), "1");
  EXPECT_EQ(value(script, "--moe-token-dispatcher-type"), "alltoall");
  EXPECT_EQ(value(script, "--moe-expert-capacity-factor"), "1.0");
  EXPECT_TRUE(has(script, "--moe-pad-expert-input-to-capacity"));
  EXPECT_EQ(value(script, "--global-batch-size"), "32");
  EXPECT_EQ(value(script, "--recompute-granularity"), "full");
  EXPECT_EQ(value(script, "--recompute-method"), "uniform");
  EXPECT_EQ(value(script, "--recompute-num-layers"), "1");
  EXPECT_NE(script.find("NNODES=\"${NNODES:-1}\""), std::string::npos);
  // ZeRO-3 with expert parallelism: torch FSDP2 refuses EP, the distributed optimizer stands in.
  EXPECT_TRUE(has(script, "--use-distributed-optimizer"));
  EXPECT_FALSE(has(script, "--use-torch-fsdp2"));
  ASSERT_EQ(exported.unexpressed.size(), 1u);
  EXPECT_TRUE(mentions(exported.unexpressed, "fsdp stage 3"));
  EXPECT_NE(script.find("#   - fsdp stage 3"), std::string::npos);  // repeated in the header
  // Dropless routing: no capacity flags.
  const Export dropless = export_file("recipes/scenarios/seed6-mixtral-8x7b-ep8-8xh100.toml",
                                      {"strategy.ep.capacity_factor=0", "strategy.ep.dispatcher=allgather"});
  EXPECT_FALSE(has(dropless.script, "--moe-expert-capacity-factor"));
  EXPECT_FALSE(has(dropless.script, "--moe-pad-expert-input-to-capacity"));
  EXPECT_EQ(value(dropless.script, "--moe-token-dispatcher-type"), "allgather");
  // DeepEP's dispatcher and the batch-level overlap of the all-to-alls (pp = 1: Megatron-LM's
  // combined 1F1B accepts it; with the allgather dispatcher it would not, and says so).
  const Export flex = export_file("recipes/scenarios/seed6-mixtral-8x7b-ep8-8xh100.toml",
                                  {"strategy.ep.dispatcher=flex", "strategy.ep.overlap=true",
                                   "training.recompute=selective"});
  EXPECT_EQ(value(flex.script, "--moe-token-dispatcher-type"), "flex");
  EXPECT_EQ(value(flex.script, "--moe-flex-dispatcher-backend"), "deepep");
  EXPECT_TRUE(has(flex.script, "--overlap-moe-expert-parallel-comm"));
  EXPECT_FALSE(mentions(flex.unexpressed, "ep overlap"));
  const Export gathered = export_file("recipes/scenarios/seed6-mixtral-8x7b-ep8-8xh100.toml",
                                      {"strategy.ep.dispatcher=allgather", "strategy.ep.overlap=true",
                                       "training.recompute=selective"});
  EXPECT_TRUE(mentions(gathered.unexpressed, "ep overlap with the allgather dispatcher"));
  EXPECT_FALSE(has(gathered.script, "--moe-flex-dispatcher-backend"));
  // Whole experts beside tp = 2 (etp = 1): EP 8 carved out of tp x dp.
  const Export whole = export_text(
      "[model]\npreset = \"mixtral-8x7b\"\nseq_len = 4096\n[training]\nglobal_batch = 8\nmicro_batch = 1\n"
      "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 8\n[[strategy]]\nname = \"tp\"\ndegree = 2\n"
      "[[strategy]]\nname = \"sp\"\nmode = \"megatron\"\n[[strategy]]\nname = \"ep\"\ndegree = 8\netp = 1\n");
  EXPECT_EQ(value(whole.script, "--tensor-model-parallel-size"), "2");
  EXPECT_EQ(value(whole.script, "--expert-model-parallel-size"), "8");
  EXPECT_EQ(value(whole.script, "--expert-tensor-parallel-size"), "1");
}

// Llama 3 70B at 32K on 256 GPUs: TP 8 x CP 4 (ring) x PP 4 (interleaved, 2 chunks) x DP 2.
TEST(ExportMegatron, LongContextPlan) {
  const Export exported = export_file("recipes/export/llama3-70b-32k-cp4-256xh100.toml");
  const std::string& script = exported.script;
  EXPECT_TRUE(exported.unexpressed.empty());
  EXPECT_EQ(value(script, "--tensor-model-parallel-size"), "8");
  EXPECT_EQ(value(script, "--context-parallel-size"), "4");
  EXPECT_EQ(value(script, "--cp-comm-type"), "p2p");
  EXPECT_TRUE(has(script, "--sequence-parallel"));  // megatron_sp = true
  EXPECT_EQ(value(script, "--pipeline-model-parallel-size"), "4");
  EXPECT_EQ(value(script, "--num-layers-per-virtual-pipeline-stage"), std::to_string(80 / (4 * 2)));
  EXPECT_EQ(value(script, "--seq-length"), "32768");
  EXPECT_EQ(value(script, "--max-position-embeddings"), "32768");
  EXPECT_EQ(value(script, "--global-batch-size"), "64");
  EXPECT_EQ(value(script, "--padded-vocab-size"), "128256");
  EXPECT_NE(script.find("NNODES=\"${NNODES:-32}\""), std::string::npos);
  // Ulysses is Megatron-LM's all-to-all context parallelism (cp divides the KV heads per tp rank).
  const Export ulysses = export_file("recipes/export/llama3-70b-32k-cp4-256xh100.toml",
                                     {"strategy.sp.mode=ulysses", "strategy.tp.degree=2"});
  EXPECT_EQ(value(ulysses.script, "--cp-comm-type"), "a2a");
  EXPECT_EQ(value(ulysses.script, "--context-parallel-size"), "4");
}

TEST(ExportMegatron, ReportsWhatMegatronCannotExpress) {
  // HSDP with ZeRO-3 inside the groups: Megatron-LM's hybrid form shards only optimizer state.
  const Export hybrid = export_text(
      "[model]\npreset = \"llama2-7b\"\n[training]\nglobal_batch = 64\nmicro_batch = 1\n"
      "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 64\n[[strategy]]\nname = \"hsdp\"\nstage = 3\n");
  EXPECT_TRUE(mentions(hybrid.unexpressed, "hsdp stage 3"));
  EXPECT_TRUE(has(hybrid.script, "--use-distributed-optimizer"));
  EXPECT_EQ(value(hybrid.script, "--num-distributed-optimizer-instances"), "8");

  // Schedules Megatron-LM lacks.
  for (const char* schedule : {"gpipe", "zero-bubble"}) {
    const Export exported = export_file("recipes/scenarios/seed1-llama2-70b-4k-64xh100.toml",
                                        {std::string("strategy.pp.schedule=") + schedule});
    EXPECT_TRUE(mentions(exported.unexpressed, std::string("pp schedule '") + schedule + "'")) << schedule;
  }

  // A third-party strategy (the test plugin test_good) is reported by name.
  const Export third_party = export_text(
      "[model]\npreset = \"llama2-7b\"\n[training]\nglobal_batch = 16\nmicro_batch = 1\n"
      "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 16\n[[strategy]]\nname = \"test_good\"\n"
      "[[strategy]]\nname = \"fsdp\"\n");
  EXPECT_TRUE(mentions(third_party.unexpressed, "strategy 'test_good'"));
  expect_real_flags(third_party.script);

  // Tensor-parallel overlap needs sequence parallelism in Megatron-LM.
  const Export without_sp = export_file("recipes/export/llama3-70b-32k-cp4-256xh100.toml",
                                        {"strategy.tp.overlap=true", "strategy.sp.megatron_sp=false"});
  EXPECT_TRUE(mentions(without_sp.unexpressed, "tp overlap"));
  EXPECT_FALSE(has(without_sp.script, "--tp-comm-overlap"));
  EXPECT_FALSE(has(without_sp.script, "--sequence-parallel"));
  const Export with_sp =
      export_file("recipes/scenarios/seed1-llama2-70b-4k-64xh100.toml", {"strategy.tp.overlap=true"});
  EXPECT_TRUE(with_sp.unexpressed.empty());
  // PyTorch's micro-pipelined async TP hides the forward passes only; Megatron-LM's userbuffers
  // also hide the backward's: the flag is written and the difference reported.
  const Export micro = export_file("recipes/scenarios/seed1-llama2-70b-4k-64xh100.toml",
                                   {"strategy.tp.overlap=true", "strategy.tp.overlap_method=\"micro_pipeline\""});
  EXPECT_TRUE(has(micro.script, "--tp-comm-overlap"));
  EXPECT_TRUE(mentions(micro.unexpressed, "tp overlap_method micro_pipeline"));
  EXPECT_TRUE(has(with_sp.script, "--tp-comm-overlap"));
}

TEST(ExportMegatron, FullShardingWithoutPipelineRunsTorchFsdp2) {
  const Export exported = export_file("recipes/scenarios/seed5-llama2-7b-fsdp3-scaling.toml");
  EXPECT_TRUE(exported.unexpressed.empty());
  EXPECT_TRUE(has(exported.script, "--use-torch-fsdp2"));
  EXPECT_TRUE(has(exported.script, "--no-gradient-accumulation-fusion"));
  EXPECT_FALSE(has(exported.script, "--use-distributed-optimizer"));
  EXPECT_FALSE(has(exported.script, "--torch-fsdp2-no-reshard-after-forward"));
  EXPECT_EQ(exported.script.find("CUDA_DEVICE_MAX_CONNECTIONS"), std::string::npos);  // FSDP2 refuses 1
  const Export stage2 =
      export_file("recipes/scenarios/seed5-llama2-7b-fsdp3-scaling.toml", {"strategy.fsdp.stage=2"});
  EXPECT_TRUE(has(stage2.script, "--torch-fsdp2-no-reshard-after-forward"));
}

// Megatron-LM drops out 0.1 of the hidden states and attention unless told otherwise
// (TransformerConfig's defaults): the exported script always states the model's dropout, none for
// the Llama presets.
TEST(ExportMegatron, StatesTheModelsDropout) {
  const Export llama = export_file("recipes/scenarios/seed1-llama2-70b-4k-64xh100.toml");
  EXPECT_EQ(value(llama.script, "--hidden-dropout"), "0.0");
  EXPECT_EQ(value(llama.script, "--attention-dropout"), "0.0");
  const Export gpt = export_file("recipes/scenarios/seed1-llama2-70b-4k-64xh100.toml", {"model.dropout=0.1"});
  EXPECT_EQ(value(gpt.script, "--hidden-dropout"), "0.1");
  EXPECT_EQ(value(gpt.script, "--attention-dropout"), "0.1");
}

// FSDP2 runs without pipeline parallelism only. ZeRO-2 under pp is priced as the distributed
// optimizer already (docs/cost-model.md), so that export is exact and says nothing; ZeRO-3's
// held weights are reported.
TEST(ExportMegatron, PipelinedZero2IsTheDistributedOptimizerAndZero3IsReported) {
  const Export stage2 = export_file("recipes/scenarios/seed1-llama2-70b-4k-64xh100.toml", {"strategy.fsdp.stage=2"});
  EXPECT_TRUE(has(stage2.script, "--use-distributed-optimizer"));
  EXPECT_FALSE(has(stage2.script, "--use-torch-fsdp2"));
  EXPECT_TRUE(stage2.unexpressed.empty());
  const Export stage3 = export_file("recipes/scenarios/seed1-llama2-70b-4k-64xh100.toml", {"strategy.fsdp.stage=3"});
  EXPECT_TRUE(has(stage3.script, "--use-distributed-optimizer"));
  ASSERT_EQ(stage3.unexpressed.size(), 1u);
  EXPECT_NE(stage3.unexpressed[0].find("fsdp stage 3"), std::string::npos);
}

// The gradient buckets the plan was priced with: --ddp-bucket-size in parameters. With none set
// the plan reduces one collective per layer, which Megatron-LM runs with a bucket of one layer:
// Llama 2 70B at tp 8 holds (8192·(8192 + 2·1024) + 8192² + 3·8192·28672) / 8 = 106,954,752
// weight parameters of a layer, + its two norms' 2·8192 split over the 8 sequence-parallel ranks.
// Without overlap Megatron-LM reduces everything in one bucket: reported. FSDP2 reduces and
// gathers per layer with one prefetched: other settings reported.
TEST(ExportMegatron, GradientBucketsAsMegatronSizesThem) {
  const std::string seed1 = "recipes/scenarios/seed1-llama2-70b-4k-64xh100.toml";
  const Export per_layer = export_file(seed1);
  EXPECT_EQ(value(per_layer.script, "--ddp-bucket-size"), std::to_string(106954752 + 2 * 8192 / 8));
  EXPECT_TRUE(per_layer.unexpressed.empty());
  const Export bucketed = export_file(seed1, {"strategy.fsdp.bucket_parameters=4e7"});
  EXPECT_EQ(value(bucketed.script, "--ddp-bucket-size"), "40000000");
  EXPECT_TRUE(bucketed.unexpressed.empty());
  const Export one_bucket = export_file(seed1, {"strategy.fsdp.overlap=false"});
  EXPECT_FALSE(has(one_bucket.script, "--ddp-bucket-size"));
  ASSERT_EQ(one_bucket.unexpressed.size(), 1u);
  EXPECT_NE(one_bucket.unexpressed[0].find("fsdp overlap = false: Megatron-LM reduces all gradients in one bucket"),
            std::string::npos);
  const std::string seed5 = "recipes/scenarios/seed5-llama2-7b-fsdp3-scaling.toml";
  const Export fsdp2 = export_file(seed5, {"strategy.fsdp.bucket_parameters=4e7", "strategy.fsdp.prefetch=2"});
  EXPECT_TRUE(has(fsdp2.script, "--use-torch-fsdp2"));
  EXPECT_FALSE(has(fsdp2.script, "--ddp-bucket-size"));
  EXPECT_TRUE(mentions(fsdp2.unexpressed, "fsdp bucket_parameters = 4e+07: torch FSDP2"));
  EXPECT_TRUE(mentions(fsdp2.unexpressed, "fsdp prefetch = 2: torch FSDP2 (--use-torch-fsdp2) prefetches one layer"));
}

TEST(ExportMegatron, ExporterParametersAndPrecision) {
  const Export exported = export_file("recipes/scenarios/seed1-llama2-70b-4k-64xh100.toml",
                                      {"export.megatron.train_iters=7", "export.megatron.megatron_path=/opt/mlm",
                                       "training.precision=fp8", "training.recompute=none"});
  EXPECT_EQ(value(exported.script, "--train-iters"), "7");
  EXPECT_NE(exported.script.find("MEGATRON_PATH=\"${MEGATRON_PATH:-/opt/mlm}\""), std::string::npos);
  EXPECT_TRUE(has(exported.script, "--bf16"));
  EXPECT_EQ(value(exported.script, "--fp8-format"), "hybrid");
  EXPECT_FALSE(has(exported.script, "--recompute-granularity"));
}

// Megatron-LM's block-scaled recipes (arguments.py, _add_transformer_engine_args): MXFP8 takes
// E4M3 elements (--fp8-recipe mxfp8), NVFP4 its own switch (--fp4-format e2m1, --fp4-recipe nvfp4).
TEST(ExportMegatron, BlockScaledPrecisions) {
  const Export mxfp8 = export_file("recipes/scenarios/seed7-llama3-405b-256xb200.toml", {"training.precision=mxfp8"});
  EXPECT_TRUE(has(mxfp8.script, "--bf16"));
  EXPECT_EQ(value(mxfp8.script, "--fp8-format"), "e4m3");
  EXPECT_EQ(value(mxfp8.script, "--fp8-recipe"), "mxfp8");
  EXPECT_FALSE(has(mxfp8.script, "--fp4-format"));
  const Export nvfp4 = export_file("recipes/scenarios/seed7-llama3-405b-256xb200.toml", {"training.precision=nvfp4"});
  EXPECT_EQ(value(nvfp4.script, "--fp4-format"), "e2m1");
  EXPECT_EQ(value(nvfp4.script, "--fp4-recipe"), "nvfp4");
  EXPECT_FALSE(has(nvfp4.script, "--fp8-format"));
}

}  // namespace
}  // namespace paraplan::host
