// `paraplan hardware show` and profiles that start from another (`base = "NAME"`): every bundled
// profile, written as TOML (host/plan/profile_toml.h) and read back by the `toml` plugin, is the
// same profile, field for field and double for double, and prices a plan the same; a base profile
// with a few keys of its own changes only those; a bad base is refused at its line.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "host/plan/hardware_binding.h"
#include "host/plan/profile_toml.h"
#include "paraplan/sdk.hpp"
#include "test_support.h"

namespace paraplan::host {
namespace {

class TemporaryDirectory {
 public:
  TemporaryDirectory() : path_(std::filesystem::temp_directory_path() / ("paraplan_hardware_" + std::to_string(getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TemporaryDirectory() { std::filesystem::remove_all(path_); }
  std::string write(const std::string& name, const std::string& text) const {
    const std::filesystem::path file = path_ / name;
    std::ofstream(file) << text;
    return file.string();
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

std::unique_ptr<HardwareBinding> open_named(const std::string& name, const PluginCatalog& catalog = test::bundled_catalog()) {
  return open_hardware(name, "", "hardware '" + name + "'", catalog);
}
std::unique_ptr<HardwareBinding> open_file(const std::string& file, const PluginCatalog& catalog = test::bundled_catalog()) {
  return open_hardware("", file, "hardware '" + file + "'", catalog);
}

// Every field, exactly (the writer's digits read back to the same doubles).
void expect_same_profile(const pp_hardware_profile& a, const pp_hardware_profile& b) {
  EXPECT_STREQ(a.name, b.name);
  for (int dtype = 0; dtype < PP_DTYPE_COUNT; ++dtype) EXPECT_EQ(a.peak_flops[dtype], b.peak_flops[dtype]) << dtype;
  EXPECT_EQ(a.peak_flops_mxfp8, b.peak_flops_mxfp8);
  EXPECT_EQ(a.peak_flops_nvfp4, b.peak_flops_nvfp4);
  EXPECT_EQ(a.memory_bytes, b.memory_bytes);
  EXPECT_EQ(a.memory_bandwidth_bytes_per_s, b.memory_bandwidth_bytes_per_s);
  EXPECT_EQ(a.memory_efficiency, b.memory_efficiency);
  EXPECT_EQ(a.gpus_per_node, b.gpus_per_node);
  EXPECT_EQ(a.gemm_efficiency_max, b.gemm_efficiency_max);
  EXPECT_EQ(a.gemm_half_efficiency_flops, b.gemm_half_efficiency_flops);
  EXPECT_EQ(a.gemm_efficiency_max_fp8, b.gemm_efficiency_max_fp8);
  EXPECT_EQ(a.gemm_efficiency_max_fp4, b.gemm_efficiency_max_fp4);
  EXPECT_EQ(a.attention_efficiency, b.attention_efficiency);
  EXPECT_EQ(a.attention_efficiency_flash2, b.attention_efficiency_flash2);
  EXPECT_EQ(a.host_link_bandwidth_bytes_per_s, b.host_link_bandwidth_bytes_per_s);
  EXPECT_EQ(a.host_op_overhead_s, b.host_op_overhead_s);
  EXPECT_EQ(a.overlap_compute_slowdown, b.overlap_compute_slowdown);
  EXPECT_EQ(a.speed_variation, b.speed_variation);
  ASSERT_EQ(a.tier_count, b.tier_count);
  for (uint32_t i = 0; i < a.tier_count; ++i) {
    EXPECT_STREQ(a.tiers[i].name, b.tiers[i].name);
    EXPECT_EQ(a.tiers[i].domain_size, b.tiers[i].domain_size);
    EXPECT_EQ(a.tiers[i].bandwidth_bytes_per_s, b.tiers[i].bandwidth_bytes_per_s);
    EXPECT_EQ(a.tiers[i].latency_s, b.tiers[i].latency_s);
    EXPECT_EQ(a.tiers[i].efficiency, b.tiers[i].efficiency);
  }
}

TEST(HardwareShow, EveryBundledProfileReadsBackAsTheSameProfile) {
  const TemporaryDirectory directory;
  const PluginCatalog bundled_only = PluginCatalog::scan({PARAPLAN_BUNDLED_PLUGIN_DIR});
  size_t profiles = 0;
  for (const std::string& name : bundled_only.names_of_kind(PP_KIND_HARDWARE)) {
    if (name == kTomlHardwarePlugin) continue;
    SCOPED_TRACE(name);
    const auto bundled = open_named(name, bundled_only);
    const std::string file = directory.write(name + ".toml", profile_toml(bundled->profile()));
    expect_same_profile(bundled->profile(), open_file(file, bundled_only)->profile());
    ++profiles;
  }
  EXPECT_GE(profiles, 9u);  // a100 ... mi300x
}

// A plugin may describe what the format cannot say: the command prints it and says so.
TEST(HardwareShow, AProfileTheFormatCannotSayIsShownWithTheReason) {
  const test::CommandRun shown = test::run_command({"hardware", "show", "test_good_hardware", "--json",
                                                    "--plugin-path=" PARAPLAN_TEST_PLUGINS_GOOD_DIR});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  const nlohmann::json report = nlohmann::json::parse(shown.out);
  EXPECT_EQ(report["reads_back"], false);
  EXPECT_NE(report["read_back_problem"].get<std::string>().find("compute.fp32_tflops"), std::string::npos)
      << report["read_back_problem"];
  EXPECT_EQ(nlohmann::json::parse(test::run_command({"hardware", "show", "h100-sxm", "--json"}).out)["reads_back"], true);
}

TEST(HardwareShow, APrintedProfilePricesAPlanAsTheBundledOne) {
  const TemporaryDirectory directory;
  const std::string file = directory.write("h100.toml", profile_toml(open_named("h100-sxm")->profile()));
  const std::string seed1 = std::string(PARAPLAN_RECIPES_DIR) + "/scenarios/seed1-llama2-70b-4k-64xh100.toml";
  const test::Evaluated bundled = test::evaluate_file(seed1, "analytic");
  const test::Evaluated printed = test::evaluate_file(seed1, "analytic", {"cluster.hardware=" + file});
  for (const char* key : {"time.step_s", "memory.per_gpu_bytes", "throughput.mfu"})
    EXPECT_EQ(bundled.number(key), printed.number(key)) << key;
}

TEST(HardwareShow, ABaseProfileChangesOnlyTheKeysTheFileGives) {
  const TemporaryDirectory directory;
  const std::string file = directory.write("h100-ib200.toml",
                                           "name = \"h100-ib200\"\nbase = \"h100-sxm\"\n"
                                           "[memory]\ncapacity_gb = 94\n"
                                           "[[tiers]]\nname = \"infiniband\"\nbandwidth_gbit_s = 200\n");
  pp_hardware_profile expected = open_named("h100-sxm")->profile();
  paraplan::copy_name(expected.name, "h100-ib200");
  expected.memory_bytes = 94e9;
  expected.tiers[1].bandwidth_bytes_per_s = 200e9 / 8;  // Gb/s to bytes/s, the base's in GB/s replaced
  expect_same_profile(expected, open_file(file)->profile());
}

TEST(HardwareShow, TiersOfOtherNamesReplaceTheBasesWhole) {
  const TemporaryDirectory directory;
  const std::string file = directory.write(
      "two-tier.toml",
      "name = \"h100-roce\"\nbase = \"h100-sxm\"\n"
      "[[tiers]]\nname = \"nvl\"\ndomain_size = 8\nbandwidth_gb_s = 450\nlatency_us = 2\n"
      "[[tiers]]\nname = \"roce\"\ndomain_size = 0\nbandwidth_gbit_s = 100\nlatency_us = 8\n");
  const pp_hardware_profile profile = open_file(file)->profile();
  ASSERT_EQ(profile.tier_count, 2u);
  EXPECT_STREQ(profile.tiers[1].name, "roce");
  EXPECT_EQ(profile.tiers[1].bandwidth_bytes_per_s, 12.5e9);
  EXPECT_EQ(profile.tiers[1].efficiency, 0.80);  // the format's default: the base's tier is gone
  EXPECT_EQ(profile.memory_bytes, 80e9);          // the rest is the base's
}

TEST(HardwareShow, ABadBaseIsRefusedAtItsLine) {
  const TemporaryDirectory directory;
  test::expect_error<HostError>(
      [&] { open_file(directory.write("a.toml", "base = \"h100-sxm\"\n[memory]\ncapacity_gb = 96\n")); },
      {"a.toml:1:1: base:", "needs a name of its own"});
  test::expect_error<HostError>([&] { open_file(directory.write("b.toml", "name = \"x\"\nbase = \"h100-sx\"\n")); },
                                {"b.toml:2:1: base 'h100-sx'", "did you mean 'h100-sxm'"});
  test::expect_error<HostError>([&] { open_file(directory.write("c.toml", "name = \"x\"\nbase = \"other.toml\"\n")); },
                                {"c.toml:2:1", "a base names a hardware plugin", "not a profile file"});
  // The base's keys are checked with the file's: a tier of 6 GPUs on nodes of 4.
  test::expect_error<HostError>(
      [&] {
        open_file(directory.write("d.toml", "name = \"x\"\nbase = \"h100-sxm\"\ngpus_per_node = 4\n"
                                            "[[tiers]]\nname = \"nvlink\"\ndomain_size = 6\n"));
      },
      {"d.toml:6:1: tiers[0].domain_size"});
  test::expect_error<HostError>(
      [&] { open_file(directory.write("e.toml", "name = \"x\"\nbase = \"h100-sxm\"\n[gemm]\nefficency_max = 0.5\n")); },
      {"e.toml:4:1: gemm.efficency_max: unknown key"});
  // A key the base supplied and the file's own make an impossible pair: reported at `base`.
  test::expect_error<HostError>(
      [&] { open_file(directory.write("f.toml", "name = \"x\"\nbase = \"h100-sxm\"\ngpus_per_node = 3\n")); },
      {"f.toml:2:1: tiers[0].domain_size: must divide gpus_per_node", "the value of base 'h100-sxm'"});
}

// A plugin that prices GEMMs with a function of its own is no base: its figures alone are not it.
TEST(HardwareShow, APluginWithItsOwnCostFunctionsIsNoBase) {
  const TemporaryDirectory plugins;
  const std::filesystem::path directory = plugins.path() / "plugins";
  std::filesystem::create_directories(directory);
  for (const char* name : {"paraplan_hw_toml", "paraplan_hw_h100_sxm"})
    std::filesystem::create_symlink(std::filesystem::path(PARAPLAN_BUNDLED_PLUGIN_DIR) / (std::string(name) + ".so"),
                                    directory / (std::string(name) + ".so"));
  std::filesystem::create_symlink(PARAPLAN_TEST_PLUGINS_ZOO_DIR "/zoo_nan_gemm" PARAPLAN_TEST_PLUGIN_SUFFIX,
                                  directory / ("zoo_nan_gemm" PARAPLAN_TEST_PLUGIN_SUFFIX));
  const PluginCatalog catalog = PluginCatalog::scan({directory});
  const std::string file = plugins.write("g.toml", "name = \"x\"\nbase = \"zoo_nan_gemm\"\n");
  test::expect_error<HostError>([&] { open_file(file, catalog); },
                                {"g.toml:2:1: base 'zoo_nan_gemm'", "prices GEMMs with functions of its own"});
}

// Hardware is named as datasheets spell it: a name that differs from one plugin's only in case is
// that plugin, and a near miss is suggested without regard to case ("H100" is h100-sxm's prefix).
TEST(HardwareShow, HardwareNamesIgnoreCase) {
  EXPECT_STREQ(open_named("H100-SXM")->profile().name, "h100-sxm");
  EXPECT_STREQ(open_named("GB200-NVL72")->profile().name, "gb200-nvl72");
  test::expect_error<HostError>([] { open_named("H100"); }, {"no hardware plugin named 'H100'", "did you mean 'h100-sxm'"});
  test::expect_error<HostError>([] { open_named("A100-SXM-80"); }, {"did you mean 'a100-sxm-80g'"});
}

TEST(HardwareShow, TheCommandPrintsTomlOrJsonAndExplainsItsErrors) {
  const test::CommandRun toml = test::run_command({"hardware", "show", "b200"});
  EXPECT_EQ(toml.exit_code, 0) << toml.err;
  EXPECT_NE(toml.out.find("name = \"b200\""), std::string::npos) << toml.out;
  EXPECT_NE(toml.out.find("[[tiers]]"), std::string::npos);
  const test::CommandRun json = test::run_command({"hardware", "show", "b200", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json report = nlohmann::json::parse(json.out);
  EXPECT_EQ(report["name"], "b200");
  EXPECT_EQ(report["toml"], toml.out);
  EXPECT_EQ(report["own_cost_functions"], false);
  const test::CommandRun unknown = test::run_command({"hardware", "show", "H100"});
  EXPECT_EQ(unknown.exit_code, 3);
  EXPECT_NE(unknown.err.find("no hardware plugin named 'H100'"), std::string::npos) << unknown.err;
  EXPECT_EQ(test::run_command({"hardware"}).exit_code, 2);
  EXPECT_EQ(test::run_command({"hardware", "frobnicate"}).exit_code, 2);
  // The list: every bundled GPU with its datasheet peak (H100: 989 dense bf16 TFLOP/s).
  const test::CommandRun list = test::run_command({"hardware", "list", "--json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  bool h100 = false;
  const nlohmann::json listed = nlohmann::json::parse(list.out);
  for (const auto& row : listed["hardware"])
    if (row["name"] == "h100-sxm") {
      h100 = true;
      EXPECT_NEAR(row["bf16_flops"].get<double>(), 989.4e12, 1e9);
    }
  EXPECT_TRUE(h100);
}

}  // namespace
}  // namespace paraplan::host
