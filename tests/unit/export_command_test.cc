// `paraplan export` and the exporter plugin kind, through the test exporters (tests/plugins):
// what an exporter is given (the strategies' settings, the mesh), where its files go, and every
// way the command refuses (unknown exporter, a file outside the output directory, --strict).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "host/export/exporting.h"
#include "test_support.h"

namespace paraplan::host {
namespace {

const std::string kSeed1 = PARAPLAN_RECIPES_DIR "/scenarios/seed1-llama2-70b-4k-64xh100.toml";

test::CommandRun run(std::vector<std::string> arguments) {
  arguments.push_back("--plugin-path=" PARAPLAN_TEST_PLUGINS_GOOD_DIR);
  return test::run_command(std::move(arguments));
}

std::string read(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ExportCommand, TheExporterGetsEveryStrategysSettingsAndTheMesh) {
  std::unique_ptr<Recipe> recipe = read_recipe(kSeed1);
  std::unique_ptr<HardwareBinding> hardware = open_hardware(*recipe, test::bundled_catalog());
  ComposedPlan composed = compose_plan(*recipe, test::bundled_catalog(), gpus_per_node(*recipe, *hardware));
  const ExportResult result = run_exporter("test_good_exporter", *recipe, test::bundled_catalog(), composed, *hardware);
  ASSERT_EQ(result.files.size(), 2u);
  EXPECT_EQ(result.files[0].name, "strategies.txt");
  // seed1: tp 8, sp (megatron, no degree of its own), pp 2 1F1B, fsdp 4 at ZeRO-1, in apply order.
  EXPECT_EQ(result.files[0].data,
            "plan llama2-70b\n"
            "tp 8 overlap=false overlap_method=userbuffers\n"
            "sp 1 mode=megatron megatron_sp=false\n"
            "pp 2 schedule=1f1b virtual_stages=1 first_stage_layers=0 last_stage_layers=0 trim_ends=false layout=\n"
            "fsdp 4 stage=1 overlap=true bucket_parameters=0 prefetch=1\n");
  // Megatron-LM's mesh order: tp innermost (stride 1), dp next (stride 8), pp outermost (stride 32).
  EXPECT_EQ(result.files[1].data, "tp 8 1\npp 2 32\ndp 4 8\n");
  EXPECT_EQ(result.unexpressed, std::vector<std::string>{"test_good_exporter has no pipelines"});
}

TEST(ExportCommand, PrintsTextFilesOrWritesThemToTheDirectory) {
  const test::CommandRun printed = run({"export", kSeed1, "--to", "test_good_exporter"});
  EXPECT_EQ(printed.exit_code, 0) << printed.err;
  EXPECT_NE(printed.out.find("# ==> strategies.txt <==\nplan llama2-70b\ntp 8 overlap=false overlap_method=userbuffers\n"), std::string::npos)
      << printed.out;
  EXPECT_NE(printed.out.find("# ==> axes.txt <==\ntp 8 1\n"), std::string::npos) << printed.out;
  EXPECT_NE(printed.err.find("paraplan: warning: test_good_exporter cannot express: test_good_exporter has no pipelines"),
            std::string::npos)
      << printed.err;

  const std::filesystem::path directory = std::filesystem::temp_directory_path() / "paraplan_export_test";
  std::filesystem::remove_all(directory);
  const test::CommandRun written = run({"export", kSeed1, "--to", "test_good_exporter", "--out",
                                        (directory / "nested").string(), "--set", "export.test_good_exporter.title=ours"});
  EXPECT_EQ(written.exit_code, 0) << written.err;
  EXPECT_EQ(read(directory / "nested" / "axes.txt"), "tp 8 1\npp 2 32\ndp 4 8\n");
  EXPECT_EQ(read(directory / "nested" / "strategies.txt").substr(0, 16), "ours llama2-70b\n");
  EXPECT_NE(written.out.find("wrote " + (directory / "nested" / "axes.txt").string() + " (22 bytes)"), std::string::npos)
      << written.out;

  const test::CommandRun json = run({"export", kSeed1, "--to", "test_good_exporter", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json report = nlohmann::json::parse(json.out);
  EXPECT_EQ(report["files"][1]["content"], "tp 8 1\npp 2 32\ndp 4 8\n");
  EXPECT_EQ(report["unexpressed"].size(), 1u);
  std::filesystem::remove_all(directory);
}

TEST(ExportCommand, RefusesWithOneLineAndItsExitCode) {
  // --strict: what the target cannot express fails the command after the export.
  const test::CommandRun strict = run({"export", kSeed1, "--to", "test_good_exporter", "--strict"});
  EXPECT_EQ(strict.exit_code, 1);
  EXPECT_NE(strict.err.find("test_good_exporter cannot express 1 part(s) of the plan (--strict"), std::string::npos)
      << strict.err;
  // No plan without a pipeline has anything it cannot express.
  EXPECT_EQ(run({"export", PARAPLAN_RECIPES_DIR "/llama2-7b-fsdp-64xh100.toml", "--to", "test_good_exporter", "--strict"})
                .exit_code,
            0);
  const test::CommandRun unknown = run({"export", kSeed1, "--to", "test_good_exporte"});
  EXPECT_EQ(unknown.exit_code, 3);
  EXPECT_NE(unknown.err.find("no exporter plugin named 'test_good_exporte'"), std::string::npos) << unknown.err;
  EXPECT_NE(unknown.err.find("did you mean 'test_good_exporter'"), std::string::npos) << unknown.err;
  EXPECT_EQ(run({"export", kSeed1}).exit_code, 2);  // no --to
  const test::CommandRun key = run({"export", kSeed1, "--to", "test_good_exporter", "--set", "export.test_good_exporter.titel=x"});
  EXPECT_EQ(key.exit_code, 3);
  EXPECT_NE(key.err.find("export.test_good_exporter.titel: unknown key"), std::string::npos) << key.err;

  test::CommandRun hostile = run({"export", kSeed1, "--to", "test_hostile_exporter", "--out",
                                  (std::filesystem::temp_directory_path() / "paraplan_hostile").string(),
                                  "--plugin-path=" PARAPLAN_TEST_PLUGINS_HOSTILE_EXPORTER_DIR});
  EXPECT_EQ(hostile.exit_code, 3);
  EXPECT_NE(hostile.err.find("exporter 'test_hostile_exporter' wrote a file named '../outside.txt' outside the output "
                             "directory"),
            std::string::npos)
      << hostile.err;
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::temp_directory_path() / "outside.txt"));
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::temp_directory_path() / "paraplan_hostile" / "fine.txt"));
}

}  // namespace
}  // namespace paraplan::host
