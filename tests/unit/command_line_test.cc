// Whole command lines, in-process: output, exit codes and one-line errors.
#include <nlohmann/json.hpp>

#include <set>
#include <sstream>

#include "host/cli/command.h"
#include "test_support.h"

namespace paraplan::host {
namespace {

using test::CommandRun;
CommandRun run(std::vector<std::string> arguments) { return test::run_command(std::move(arguments)); }

const std::string kRecipe = PARAPLAN_RECIPES_DIR "/llama2-7b-fsdp-64xh100.toml";

TEST(CommandLine, HelpTeachesEveryCommand) {
  CommandRun help = run({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  for (const Command& command : all_commands()) EXPECT_NE(help.out.find(command.name), std::string::npos);
  EXPECT_NE(help.out.find("Exit codes"), std::string::npos);
  CommandRun evaluate_help = run({"evaluate", "--help"});
  EXPECT_EQ(evaluate_help.exit_code, 0);
  EXPECT_NE(evaluate_help.out.find("--json"), std::string::npos);
}

TEST(CommandLine, UsageErrorsExitWithTwo) {
  CommandRun unknown = run({"evaluat"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("did you mean 'evaluate'?"), std::string::npos) << unknown.err;
  EXPECT_EQ(run({"evaluate", "--no-such-flag", kRecipe}).exit_code, 2);
  // A misspelt option gets the command's closest one.
  CommandRun misspelt = run({"evaluate", kRecipe, "--sett", "cluster.num_gpus=8"});
  EXPECT_EQ(misspelt.exit_code, 2);
  EXPECT_NE(misspelt.err.find("'--sett' (did you mean '--set'?)"), std::string::npos) << misspelt.err;
  EXPECT_EQ(run({"plugins", "frobnicate"}).exit_code, 2);
}

TEST(CommandLine, PluginsListAsJson) {
  CommandRun list = run({"plugins", "list", "--json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  auto report = nlohmann::json::parse(list.out);
  std::set<std::string> names;
  for (const auto& plugin : report["plugins"]) {
    names.insert(plugin["name"].get<std::string>());
    EXPECT_EQ(plugin["abi"], test::kHostAbi);
  }
  for (const char* expected : {"fsdp", "analytic", "toml", "h100-sxm", "a100-sxm-80g", "h200-sxm", "b200",
                               "gb200-nvl72", "mi300x"})
    EXPECT_TRUE(names.count(expected)) << expected;
}

TEST(CommandLine, DescribeShowsTheSchema) {
  CommandRun describe = run({"plugins", "describe", "fsdp"});
  ASSERT_EQ(describe.exit_code, 0) << describe.err;
  EXPECT_NE(describe.out.find("stage"), std::string::npos);
  EXPECT_NE(describe.out.find("int in [0, 3], default 0"), std::string::npos);
  CommandRun missing = run({"plugins", "describe", "fsdq"});
  EXPECT_EQ(missing.exit_code, 3);
  EXPECT_NE(missing.err.find("did you mean 'fsdp'?"), std::string::npos);
}

TEST(CommandLine, EvaluateJsonHasTheContractKeys) {
  CommandRun evaluate = run({"evaluate", kRecipe, "--json"});
  ASSERT_EQ(evaluate.exit_code, 0) << evaluate.err;
  auto report = nlohmann::json::parse(evaluate.out);
  for (const char* pointer :
       {"/plan/num_gpus", "/plan/mesh/dp", "/plan/micro_batch", "/plan/global_batch", "/plan/num_micro_batches",
        "/memory/per_gpu_bytes", "/memory/capacity_bytes", "/memory/fits", "/memory/parameters_bytes",
        "/memory/gradients_bytes", "/memory/optimizer_bytes", "/memory/activations_bytes", "/memory/other_bytes",
        "/comm/fsdp/bytes_per_gpu_per_step", "/time/step_s", "/time/compute_s", "/time/bubble_s",
        "/time/exposed_comm_s/fsdp", "/time/optimizer_s", "/pipeline/bubble_fraction", "/throughput/tokens_per_s",
        "/throughput/tokens_per_s_per_gpu", "/throughput/model_tflops_per_gpu", "/throughput/mfu"})
    EXPECT_TRUE(report.contains(nlohmann::json::json_pointer(pointer))) << pointer;
  // Throughput is the batch's tokens over the step time.
  double tokens = 512.0 * 4096;
  EXPECT_NEAR(report["throughput"]["tokens_per_s"].get<double>(), tokens / report["time"]["step_s"].get<double>(), 1e-6);
}

TEST(CommandLine, EvaluateTextReportIsReadable) {
  CommandRun evaluate = run({"evaluate", kRecipe});
  ASSERT_EQ(evaluate.exit_code, 0) << evaluate.err;
  for (const char* fragment : {"memory\n", "per_gpu_bytes", " GB", "time\n", "step_s", "throughput\n", "tokens/s"})
    EXPECT_NE(evaluate.out.find(fragment), std::string::npos) << fragment;
}

TEST(CommandLine, InputErrorsExitWithThree) {
  CommandRun missing = run({"evaluate", "/nonexistent.toml"});
  EXPECT_EQ(missing.exit_code, 3);
  EXPECT_EQ(missing.err, "paraplan: error: /nonexistent.toml: cannot open file (No such file or directory)\n");
}

// --sweep KEY=V1,V2: each value's report is the one --set KEY=V gives; a value without a plan is
// its row's error (exit 1), a key no value can set is the command's (exit 3), a malformed sweep a
// usage error (exit 2).
TEST(CommandLine, SweepIsEvaluateOncePerValue) {
  CommandRun sweep = run({"evaluate", "seed1-llama2-70b-4k-64xh100", "--sweep", "cluster.num_gpus=32, 128", "--json"});
  ASSERT_EQ(sweep.exit_code, 0) << sweep.err;
  const nlohmann::json points = nlohmann::json::parse(sweep.out)["sweep"]["points"];
  ASSERT_EQ(points.size(), 2u);
  for (const auto& [index, value] : {std::pair{0, "32"}, std::pair{1, "128"}}) {
    CommandRun single = run({"evaluate", "seed1-llama2-70b-4k-64xh100", "--set", std::string("cluster.num_gpus=") + value, "--json"});
    ASSERT_EQ(single.exit_code, 0) << single.err;
    EXPECT_EQ(points[index]["value"], value);
    EXPECT_EQ(points[index]["report"], nlohmann::json::parse(single.out));
  }
  CommandRun partial = run({"evaluate", "seed1-llama2-70b-4k-64xh100", "--sweep", "cluster.num_gpus=64,1000", "--json"});
  EXPECT_EQ(partial.exit_code, 1);
  const nlohmann::json partial_points = nlohmann::json::parse(partial.out)["sweep"]["points"];
  EXPECT_TRUE(partial_points[0].contains("report"));
  EXPECT_NE(partial_points[1]["error"].get<std::string>().find("do not divide cluster.num_gpus = 1000"), std::string::npos);
  EXPECT_EQ(run({"evaluate", "seed1-llama2-70b-4k-64xh100", "--sweep", "clster.num_gpus=64,128"}).exit_code, 3);
  for (const char* malformed : {"cluster.num_gpus", "=64", "cluster.num_gpus=", "cluster.num_gpus=64,,128"})
    EXPECT_EQ(run({"evaluate", "seed1-llama2-70b-4k-64xh100", "--sweep", malformed}).exit_code, 2) << malformed;
}

// Shipped recipes by name (host/recipe/shipped_files.h): its folder and name, or its name alone
// when no other recipe has it; two recipes of one name must be told apart, and a near miss is named.
TEST(CommandLine, ShippedRecipesAreTakenByName) {
  CommandRun by_stem = run({"evaluate", "seed1-llama2-70b-4k-64xh100", "--json"});
  ASSERT_EQ(by_stem.exit_code, 0) << by_stem.err;
  CommandRun by_name = run({"evaluate", "scenarios/seed1-llama2-70b-4k-64xh100.toml", "--json"});
  ASSERT_EQ(by_name.exit_code, 0) << by_name.err;
  EXPECT_EQ(nlohmann::json::parse(by_stem.out)["plan"]["recipe"], nlohmann::json::parse(by_name.out)["plan"]["recipe"]);
  EXPECT_TRUE(nlohmann::json::parse(by_stem.out)["plan"]["recipe"].get<std::string>().ends_with(
      "/recipes/scenarios/seed1-llama2-70b-4k-64xh100.toml"));

  // scenarios/ and search/ both hold deepseek-v3-2048xh800.toml.
  CommandRun ambiguous = run({"evaluate", "deepseek-v3-2048xh800"});
  EXPECT_EQ(ambiguous.exit_code, 3);
  EXPECT_NE(ambiguous.err.find("(scenarios/deepseek-v3-2048xh800, search/deepseek-v3-2048xh800)"), std::string::npos)
      << ambiguous.err;

  CommandRun typo = run({"evaluate", "seed1-llama2-70b-4k-64xh10"});
  EXPECT_EQ(typo.exit_code, 3);
  EXPECT_NE(typo.err.find("did you mean 'seed1-llama2-70b-4k-64xh100'?"), std::string::npos) << typo.err;

  // A model preset is TOML but no recipe: not listed, not taken.
  CommandRun listing = run({"recipes", "--json"});
  ASSERT_EQ(listing.exit_code, 0) << listing.err;
  const nlohmann::json listed = nlohmann::json::parse(listing.out);
  for (const auto& recipe : listed["recipes"])
    EXPECT_FALSE(recipe["name"].get<std::string>().starts_with("models/")) << recipe["name"];
  EXPECT_EQ(run({"evaluate", "llama2-70b"}).exit_code, 3);

  CommandRun data = run({"validate", "nemo-h100-fp8", "--json"});
  ASSERT_EQ(data.exit_code, 0) << data.err;
  EXPECT_TRUE(nlohmann::json::parse(data.out)["files"][0].get<std::string>().ends_with("/recipes/validation/nemo-h100-fp8.csv"));
}

}  // namespace
}  // namespace paraplan::host

namespace paraplan::host {
namespace {

TEST(CommandLine, EveryStrategyHasItsCommunicationKeys) {
  // seed1 has tp, sp (megatron: its collectives are tp's), pp and fsdp.
  CommandRun evaluate = run({"evaluate", PARAPLAN_RECIPES_DIR "/scenarios/seed1-llama2-70b-4k-64xh100.toml", "--json"});
  ASSERT_EQ(evaluate.exit_code, 0) << evaluate.err;
  auto report = nlohmann::json::parse(evaluate.out);
  for (const char* strategy : {"tp", "sp", "pp", "fsdp"}) {
    EXPECT_TRUE(report["comm"][strategy].contains("bytes_per_gpu_per_step")) << strategy;
    EXPECT_TRUE(report["time"]["exposed_comm_s"].contains(strategy)) << strategy;
  }
  EXPECT_EQ(report["comm"]["sp"]["bytes_per_gpu_per_step"], 0.0);
  EXPECT_GT(report["comm"]["tp"]["bytes_per_gpu_per_step"].get<double>(), 0.0);
  // The text report keeps each section together even for keys the host adds after the executor.
  CommandRun text = run({"evaluate", PARAPLAN_RECIPES_DIR "/scenarios/seed1-llama2-70b-4k-64xh100.toml"});
  size_t first = text.out.find("\ncomm\n");
  ASSERT_NE(first, std::string::npos);
  EXPECT_EQ(text.out.find("\ncomm\n", first + 1), std::string::npos);
  EXPECT_LT(text.out.find("sp.bytes_per_gpu_per_step"), text.out.find("\ntime\n"));
}

}  // namespace
}  // namespace paraplan::host
