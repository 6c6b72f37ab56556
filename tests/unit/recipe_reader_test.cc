// Recipes: parsing, presets, and errors that name file:line:column and the key path.
#include <filesystem>
#include <fstream>

#include "host/recipe/recipe_overrides.h"
#include "host/recipe/recipe_reader.h"

#include "test_support.h"

namespace paraplan::host {
namespace {

const char* kValid = R"(
description = "a small test recipe"
[model]
preset = "llama2-7b"
seq_len = 2048            # overrides the preset's 4096

[training]
global_batch = 64
micro_batch = 2
recompute = "selective"

[cluster]
hardware = "h100-sxm"
num_gpus = 16

[[strategy]]
name = "fsdp"
stage = 3

[[strategy]]
name = "test_good"
degree = 2
)";

std::unique_ptr<Recipe> parse(const std::string& text) { return parse_recipe(text, "recipe.toml"); }

TEST(RecipeReader, ReadsPresetAndOverrides) {
  auto recipe = parse(kValid);
  const pp_model& model = recipe->model.shape;
  EXPECT_EQ(recipe->model.name, "llama2-7b");
  EXPECT_STREQ(model.name, "llama2-7b");
  // Llama 2 7B (Touvron et al. 2023, Table 1 / config.json).
  EXPECT_EQ(model.layers, 32);
  EXPECT_EQ(model.hidden, 4096);
  EXPECT_EQ(model.heads, 32);
  EXPECT_EQ(model.kv_heads, 32);
  EXPECT_EQ(model.head_dim, 128);  // hidden / heads when not given
  EXPECT_EQ(model.ffn_hidden, 11008);
  EXPECT_EQ(model.ffn_type, PP_FFN_SWIGLU);
  EXPECT_EQ(model.seq_len, 2048);  // the recipe's value wins
  EXPECT_EQ(recipe->training.global_batch, 64);
  EXPECT_EQ(recipe->training.micro_batch, 2);
  EXPECT_EQ(recipe->training.recompute, PP_RECOMPUTE_SELECTIVE);
  EXPECT_EQ(recipe->training.precision, PP_PRECISION_BF16);
  EXPECT_EQ(recipe->cluster.hardware, "h100-sxm");
  EXPECT_EQ(recipe->cluster.num_gpus, 16);
  EXPECT_FALSE(recipe->cluster.gpus_per_node.has_value());
  EXPECT_EQ(recipe->cluster.mesh_order, default_mesh_order());
  ASSERT_EQ(recipe->strategies.size(), 2u);
  EXPECT_EQ(recipe->strategies[0].name, "fsdp");
  EXPECT_FALSE(recipe->strategies[0].degree.has_value());
  EXPECT_EQ(recipe->strategies[1].degree, 2);
  EXPECT_EQ(recipe->strategies[1].key_path, "strategy[1]");
}

TEST(RecipeReader, ExplicitModelNeedsNoPreset) {
  auto recipe = parse(R"(
[model]
layers = 2
hidden = 256
heads = 8
kv_heads = 2
vocab = 1000
seq_len = 128
[training]
global_batch = 8
[cluster]
hardware = "h100-sxm"
num_gpus = 1
)");
  EXPECT_EQ(recipe->model.name, "custom");
  EXPECT_EQ(recipe->model.shape.ffn_hidden, 1024);  // 4h default for GELU
  EXPECT_EQ(recipe->model.shape.ffn_type, PP_FFN_GELU);
  EXPECT_EQ(recipe->training.micro_batch, 1);
}

// Sizes as people write them (issue 21): "8K" tokens, "4M" tokens per step, "16K" GPUs, powers
// of 1024, and the batch in tokens, divided by the sequence length by hand no more.
std::string sized_recipe(const std::string& seq_len, const std::string& batch, const std::string& gpus = "16") {
  return "[model]\npreset = \"llama2-7b\"\nseq_len = " + seq_len + "\n[training]\n" + batch +
         "\nmicro_batch = 1\n[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = " + gpus + "\n";
}

TEST(RecipeReader, SizesTakeBinarySuffixesAndTheBatchMayBeGivenInTokens) {
  auto recipe = parse(sized_recipe("\"8K\"", "global_batch_tokens = \"4M\"", "\"2k\""));
  EXPECT_EQ(recipe->model.shape.seq_len, 8192);
  EXPECT_EQ(recipe->training.global_batch, 4194304 / 8192);  // 512 sequences, as Llama 3 ran 4M tokens at 8K
  EXPECT_EQ(recipe->cluster.num_gpus, 2048);
  EXPECT_EQ(parse(sized_recipe("\"1.5K\"", "global_batch = 3"))->model.shape.seq_len, 1536);
  EXPECT_EQ(parse(sized_recipe("4096", "global_batch_tokens = 1048576"))->training.global_batch, 256);
  test::expect_error<InputError>([&] { parse(sized_recipe("\"4X\"", "global_batch = 8")); },
                                 {"recipe.toml:3:11: model.seq_len", "a size such as \"8K\"", "got \"4X\""});
  test::expect_error<InputError>([&] { parse(sized_recipe("4096", "global_batch_tokens = \"4.1M\"")); },
                                 {"training.global_batch_tokens", "\"4.1M\" is 4299161.6, not a whole number"});
  test::expect_error<InputError>([&] { parse(sized_recipe("3000", "global_batch_tokens = \"4M\"")); },
                                 {"training.global_batch_tokens", "not a whole number of sequences of model.seq_len = 3000"});
  test::expect_error<InputError>([&] { parse(sized_recipe("4096", "global_batch_tokens = \"4M\"\nglobal_batch = 8")); },
                                 {"give the batch once"});
  test::expect_error<InputError>([&] { parse(sized_recipe("4096", "")); }, {"training.global_batch: is required", "global_batch_tokens"});
}

// torchtitan's op policy is a policy of its own, on the layers whose matmul order it knows.
TEST(RecipeReader, TorchtitansOpPolicyStandsAloneOnDenseAttentionLayers) {
  auto recipe_with = [](const std::string& preset, const std::string& modules) {
    return "[model]\npreset = \"" + preset + "\"\n[training]\nglobal_batch = 8\nmicro_batch = 1\n"
           "recompute = \"selective\"\nrecompute_modules = " + modules + "\n"
           "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 8\n";
  };
  EXPECT_EQ(parse(recipe_with("llama3-8b", "[\"torchtitan_op\"]"))->training.recompute_modules,
            uint32_t{PP_RECOMPUTE_TORCHTITAN_OP});
  test::expect_error<InputError>([&] { parse(recipe_with("llama3-8b", "[\"torchtitan_op\", \"layernorm\"]")); },
                                 {"recipe.toml:7:", "training.recompute_modules", "name it alone"});
  test::expect_error<InputError>([&] { parse(recipe_with("mixtral-8x7b", "[\"torchtitan_op\"]")); },
                                 {"training.recompute_modules", "attention layers with a dense MLP", "moe"});
}

TEST(RecipeReader, MalformedTomlReportsLineAndColumn) {
  test::expect_error<InputError>([] { parse("[model]\nlayers = 2\nhidden = = 3\n"); }, {"recipe.toml:3:"});
}

TEST(RecipeReader, UnknownKeySuggestsTheClosest) {
  std::string text = kValid;
  text.replace(text.find("micro_batch = 2"), 15, "micro_bach = 2");
  test::expect_error<InputError>([&] { parse(text); },
                                 {"recipe.toml:9:1", "training.micro_bach: unknown key", "did you mean 'micro_batch'?"});
}

TEST(RecipeReader, UnknownTopLevelTable) {
  test::expect_error<InputError>([] { parse(std::string(kValid) + "\n[clusterr]\nx = 1\n"); },
                                 {"clusterr: unknown key", "did you mean 'cluster'?"});
}

TEST(RecipeReader, UnknownPresetSuggestsTheClosest) {
  std::string text = kValid;
  text.replace(text.find("llama2-7b"), 9, "llama2-7c");
  test::expect_error<InputError>([&] { parse(text); },
                                 {"recipe.toml:4:10", "model.preset", "no model preset 'llama2-7c'", "did you mean 'llama2-7b'?"});
}

TEST(RecipeReader, StrategyDegreeErrorsNameTheStrategyIndex) {
  std::string text = std::string(kValid) + "\n[[strategy]]\nname = \"tp\"\ndegree = 0\n";
  test::expect_error<InputError>([&] { parse(text); }, {"recipe.toml:26:10", "strategy[2].degree: must be >= 1, got 0"});
  text = std::string(kValid) + "\n[[strategy]]\nname = \"tp\"\ndegree = \"eight\"\n";
  test::expect_error<InputError>([&] { parse(text); }, {"strategy[2].degree: expected an integer, got a string"});
}

TEST(RecipeReader, StrategyNeedsAUniqueName) {
  test::expect_error<InputError>([] { parse(std::string(kValid) + "\n[[strategy]]\ndegree = 2\n"); },
                                 {"strategy[2].name: is required"});
  test::expect_error<InputError>([] { parse(std::string(kValid) + "\n[[strategy]]\nname = \"fsdp\"\n"); },
                                 {"strategy[2].name", "appears twice (also strategy[0])"});
}

TEST(RecipeReader, ModelConstraints) {
  std::string text = kValid;
  text.replace(text.find("seq_len = 2048"), 14, "kv_heads = 5");
  test::expect_error<InputError>([&] { parse(text); }, {"model.kv_heads", "5 must divide heads = 32"});
}

TEST(RecipeReader, ModelErrorsPointAtTheRecipeOrThePreset) {
  std::string text = kValid;
  text.replace(text.find("seq_len = 2048"), 14, "layers = 0");
  test::expect_error<InputError>([&] { parse(text); }, {"recipe.toml:5:10", "model.layers: must be >= 1, got 0"});
  // A constraint broken by a recipe key over a preset value names the recipe's line.
  text = kValid;
  text.replace(text.find("seq_len = 2048"), 14, "heads = 16");
  test::expect_error<InputError>([&] { parse(text); }, {"llama2-7b.toml:", "model.kv_heads", "32 must divide heads = 16"});
}

TEST(RecipeReader, HeadDimMustBeGivenWhenHeadsDoNotDivideHidden) {
  test::expect_error<InputError>(
      [] { parse("[model]\nlayers = 2\nhidden = 100\nheads = 3\nvocab = 10\nseq_len = 8\n[training]\nglobal_batch = 1\n"
                 "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 1\n"); },
      {"model.head_dim: is required when heads = 3 does not divide hidden = 100"});
}

TEST(RecipeReader, MissingRequiredKeysAndTables) {
  test::expect_error<InputError>([] { parse("[training]\nglobal_batch = 1\n"); }, {"[model]", "no [model] table"});
  std::string text = kValid;
  text.replace(text.find("num_gpus = 16"), 13, "");
  test::expect_error<InputError>([&] { parse(text); }, {"cluster.num_gpus: is required"});
}

TEST(RecipeReader, GlobalBatchMustBeAMultipleOfMicroBatch) {
  std::string text = kValid;
  text.replace(text.find("global_batch = 64"), 17, "global_batch = 63");
  test::expect_error<InputError>([&] { parse(text); }, {"training.global_batch", "not a multiple of micro_batch = 2"});
}

TEST(RecipeReader, HardwareProfileFileMustExist) {
  std::string text = kValid;
  text.replace(text.find("\"h100-sxm\""), 10, "\"profiles/none.toml\"");
  test::expect_error<InputError>([&] { parse(text); }, {"cluster.hardware", "none.toml does not exist"});
}

TEST(RecipeReader, MissingFileIsAnInputError) {
  test::expect_error<InputError>([] { read_recipe("/nonexistent/recipe.toml"); },
                                 {"/nonexistent/recipe.toml: cannot open file"});
}

TEST(RecipeReader, EveryShippedRecipeParses) {
  for (const auto& entry : std::filesystem::recursive_directory_iterator(PARAPLAN_RECIPES_DIR)) {
    if (entry.path().extension() != ".toml" || entry.path().parent_path().filename() == "models" ||
        entry.path().parent_path().filename() == "validation" ||  // presets and hardware profiles
        entry.path().parent_path().filename() == "profiles")
      continue;
    SCOPED_TRACE(entry.path().string());
    EXPECT_NO_THROW(read_recipe(entry.path()));
  }
}

}  // namespace
}  // namespace paraplan::host

namespace paraplan::host {
namespace {

TEST(RecipeOverrides, SetKeysBeforeReading) {
  RecipeReaderOptions options;
  options.overrides = {"cluster.num_gpus=64", "training.recompute=full", "strategy.fsdp.stage=1",
                       "strategy.tp.degree=8", "cluster.mesh_order=[\"tp\", \"dp\", \"pp\"]"};
  auto recipe = parse_recipe(kValid, "recipe.toml", options);
  EXPECT_EQ(recipe->cluster.num_gpus, 64);
  EXPECT_EQ(recipe->training.recompute, PP_RECOMPUTE_FULL);  // a bare word is a string
  ASSERT_EQ(recipe->strategies.size(), 3u);                   // tp appended after fsdp and test_good
  EXPECT_EQ(recipe->strategies[2].name, "tp");
  EXPECT_EQ(recipe->strategies[2].degree, 8);
  EXPECT_EQ(recipe->strategies[0].table->get("stage")->value<int64_t>(), 1);
  EXPECT_EQ(recipe->cluster.mesh_order, (std::vector<std::string>{"tp", "dp", "pp"}));
}

TEST(RecipeOverrides, AProfilePathOnTheCommandLineIsTheShells) {
  // The same relative path: from the recipe's directory when the recipe says it, from the
  // current directory when --set says it (a profile calibrate just wrote here).
  const std::filesystem::path directory = std::filesystem::temp_directory_path() / "paraplan_override_path_test";
  std::filesystem::remove_all(directory);
  std::filesystem::create_directories(directory / "recipes");
  std::ofstream(directory / "machine.toml") << "# written by the test\n";
  struct InDirectory {  // back where it was, whatever the test throws
    std::filesystem::path before = std::filesystem::current_path();
    explicit InDirectory(const std::filesystem::path& directory) { std::filesystem::current_path(directory); }
    ~InDirectory() { std::filesystem::current_path(before); }
  } in_directory(directory);
  std::string text = kValid;
  text.replace(text.find("\"h100-sxm\""), 10, "\"machine.toml\"");
  test::expect_error<InputError>([&] { parse_recipe(text, (directory / "recipes" / "r.toml").string()); },
                                 {(directory / "recipes" / "machine.toml").string() + " does not exist"});
  RecipeReaderOptions options;
  options.overrides = {"cluster.hardware=machine.toml"};
  auto recipe = parse_recipe(kValid, (directory / "recipes" / "r.toml").string(), options);
  EXPECT_EQ(recipe->cluster.hardware_file, (directory / "machine.toml").string());
}

TEST(RecipeOverrides, MalformedOverridesAreUsageErrors) {
  RecipeReaderOptions options;
  options.overrides = {"cluster.num_gpus"};
  test::expect_error<UsageError>([&] { parse_recipe(kValid, "recipe.toml", options); }, {"expected KEY=VALUE"});
  options.overrides = {"strategy.tp=8"};
  test::expect_error<UsageError>([&] { parse_recipe(kValid, "recipe.toml", options); }, {"strategy.NAME.KEY=VALUE"});
  options.overrides = {"cluster.num_gpus.x=8"};
  test::expect_error<UsageError>([&] { parse_recipe(kValid, "recipe.toml", options); }, {"'num_gpus' is not a table"});
}

TEST(RecipeOverrides, ErrorsMentionTheOverride) {
  EXPECT_EQ(mention_overrides("f: training.recompute: bad", {"training.recompute=x", "cluster.num_gpus=2"}),
            "f: training.recompute: bad (from --set training.recompute=x)");
}

}  // namespace
}  // namespace paraplan::host

namespace paraplan::host {
namespace {

TEST(RecipeReader, AKeyInTheWrongTableSaysWhereItBelongs) {
  std::string text = kValid;
  text.replace(text.find("seq_len = 2048"), 14, "micro_batch = 2");
  test::expect_error<InputError>([&] { parse(text); }, {"model.micro_batch: unknown key (it belongs in [training])"});
  text = kValid;
  text.replace(text.find("num_gpus = 16"), 13, "num_gpus = 16\nschedule = \"1f1b\"");
  test::expect_error<InputError>([&] { parse(text); }, {"cluster.schedule: unknown key", "[[strategy]] table"});
}

}  // namespace
}  // namespace paraplan::host
