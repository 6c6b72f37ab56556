// The `toml` hardware plugin: a profile written in a file gives the same plan figures as the
// compiled profile with the same datasheet numbers, and a broken file is an input error that
// names the file, line and key.
#include <unistd.h>

#include <fstream>

#include "test_support.h"

namespace paraplan::host {
namespace {

using test::expect_error;

// The H100 SXM datasheet numbers (NVIDIA H100 datasheet, DGX H100 user guide) in the TOML format
// of docs/hardware.md, written out here rather than read from the compiled plugin.
const char* kH100SxmProfile = R"(
name = "h100-sxm-from-toml"
gpus_per_node = 8
[compute]
fp32_tflops = 66.9
tf32_tflops = 494.7
bf16_tflops = 989.4
fp16_tflops = 989.4
fp8_tflops = 1978.9
[memory]
capacity_gb = 80
bandwidth_gb_s = 3350
efficiency = 0.85
[host_link]
bandwidth_gb_s = 64
[gemm]
efficiency_max = 0.64
efficiency_max_fp8 = 0.53
[attention]
efficiency = 0.81
efficiency_flash2 = 0.45
[[tiers]]
name = "nvlink"
domain_size = 8
bandwidth_gb_s = 450
latency_us = 2
efficiency = 0.80
[[tiers]]
name = "infiniband"
domain_size = 0
bandwidth_gbit_s = 400
latency_us = 5
efficiency = 0.90
)";

std::filesystem::path write_profile(const std::string& name, const std::string& text) {
  // The process id keeps two test runs at once from sharing a file.
  std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("paraplan_test_" + std::to_string(getpid()) + "_" + name + ".toml");
  std::ofstream(file) << text;
  return file;
}

std::string recipe_on(const std::string& hardware, const std::string& precision = "bf16") {
  return "[model]\npreset = \"llama2-70b\"\n[training]\nglobal_batch = 64\nrecompute = \"selective\"\n"
         "precision = \"" + precision + "\"\n"
         "[cluster]\nhardware = \"" + hardware + "\"\nnum_gpus = 64\n"
         "[[strategy]]\nname = \"tp\"\ndegree = 8\n[[strategy]]\nname = \"sp\"\n"
         "[[strategy]]\nname = \"pp\"\ndegree = 2\n[[strategy]]\nname = \"fsdp\"\nstage = 1\n";
}

TEST(TomlHardware, SameNumbersSamePlanAsTheCompiledProfile) {
  std::filesystem::path file = write_profile("h100", kH100SxmProfile);
  auto compiled = test::evaluate_recipe(recipe_on("h100-sxm"));
  auto from_file = test::evaluate_recipe(recipe_on(file.string()));
  EXPECT_EQ(std::get<std::string>(*from_file.results.find("plan.hardware")), "h100-sxm-from-toml");
  for (const char* key : {"time.step_s", "time.compute_s", "time.exposed_comm_s.tp", "time.exposed_comm_s.fsdp",
                          "memory.per_gpu_bytes", "memory.capacity_bytes", "throughput.mfu"})
    EXPECT_DOUBLE_EQ(from_file.number(key), compiled.number(key)) << key;
  EXPECT_DOUBLE_EQ(from_file.number("memory.capacity_bytes"), 80e9);
  // gemm.efficiency_max_fp8 reaches the FP8 GEMMs as the compiled profile's field does.
  EXPECT_DOUBLE_EQ(test::evaluate_recipe(recipe_on(file.string(), "fp8")).number("time.step_s"),
                   test::evaluate_recipe(recipe_on("h100-sxm", "fp8")).number("time.step_s"));
}

// gemm.efficiency_max_fp4 (ABI 1.8): NVFP4's plateau, read into the profile and range-checked
// with the others; absent, 0 (the FP8 plateau serves).
TEST(TomlHardware, Nvfp4PlateauIsReadAndChecked) {
  const auto profile_of = [](const std::string& text, const std::string& name) {
    return test::evaluate_recipe(recipe_on(write_profile(name, text).string())).hardware->profile();
  };
  const std::string base = kH100SxmProfile;
  const std::string gemm = "efficiency_max_fp8 = 0.53\n";
  EXPECT_EQ(profile_of(base, "fp4-absent").gemm_efficiency_max_fp4, 0.0);
  std::string declared = base;
  declared.replace(declared.find(gemm), gemm.size(), gemm + "efficiency_max_fp4 = 0.41\n");
  EXPECT_DOUBLE_EQ(profile_of(declared, "fp4-declared").gemm_efficiency_max_fp4, 0.41);
  std::string impossible = base;
  impossible.replace(impossible.find(gemm), gemm.size(), gemm + "efficiency_max_fp4 = 1.5\n");
  std::filesystem::path file = write_profile("fp4-impossible", impossible);
  expect_error<InputError>([&] { test::evaluate_recipe(recipe_on(file.string())); },
                           {file.string(), "gemm.efficiency_max_fp4"});
}

// host.op_overhead_us: absent, the bundled profiles' 85 us; declared, the profile's own; 0 frees
// the host (a framework that captures everything, or a test machine).
TEST(TomlHardware, TheHostsIssueTimeIsTheProfilesOwn) {
  const auto overhead_of = [](const std::string& text, const std::string& name) {
    const std::string recipe = recipe_on(write_profile(name, text).string());
    auto evaluated = test::evaluate_recipe(recipe);
    return evaluated.hardware->profile().host_op_overhead_s;
  };
  EXPECT_DOUBLE_EQ(overhead_of(kH100SxmProfile, "host-default"), 85e-6);
  const std::string declared = std::string(kH100SxmProfile) + "[host]\nop_overhead_us = 30\n";
  EXPECT_DOUBLE_EQ(overhead_of(declared, "host-30"), 30e-6);
  const std::string free_host = std::string(kH100SxmProfile) + "[host]\nop_overhead_us = 0\n";
  auto evaluated = test::evaluate_recipe(recipe_on(write_profile("host-0", free_host).string()));
  EXPECT_EQ(evaluated.number("time.host_wait_s"), 0.0);
  const std::string negative = std::string(kH100SxmProfile) + "[host]\nop_overhead_us = -5\n";
  std::filesystem::path file = write_profile("host-negative", negative);
  expect_error<InputError>([&] { test::evaluate_recipe(recipe_on(file.string())); },
                           {file.string(), "host.op_overhead_us", "[0, 1e6] us"});
}

// attention.efficiency_flash2: FlashAttention-2's rate, as the compiled profile's field; absent,
// the tuned kernel's (0 in the profile); out of (0, 1], an error naming the key.
TEST(TomlHardware, FlashAttention2HasItsOwnRate) {
  std::string recipe = recipe_on(write_profile("flash2", kH100SxmProfile).string());
  const std::string flash2 = "attention_kernel = \"flash2\"\n";
  recipe.insert(recipe.find("[training]\n") + 11, flash2);
  std::string compiled = recipe_on("h100-sxm");
  compiled.insert(compiled.find("[training]\n") + 11, flash2);
  EXPECT_DOUBLE_EQ(test::evaluate_recipe(recipe).number("time.step_s"), test::evaluate_recipe(compiled).number("time.step_s"));
  EXPECT_GT(test::evaluate_recipe(recipe).number("time.step_s"), test::evaluate_recipe(recipe_on("h100-sxm")).number("time.step_s"));
  std::string absent = kH100SxmProfile;
  absent.erase(absent.find("efficiency_flash2 = 0.45\n"), 25);
  EXPECT_EQ(test::evaluate_recipe(recipe_on(write_profile("no-flash2", absent).string())).hardware->profile().attention_efficiency_flash2, 0.0);
  std::string too_high = kH100SxmProfile;
  too_high.replace(too_high.find("efficiency_flash2 = 0.45"), 24, "efficiency_flash2 = 1.5");
  std::filesystem::path file = write_profile("flash2-too-high", too_high);
  expect_error<InputError>([&] { test::evaluate_recipe(recipe_on(file.string())); },
                           {file.string(), "attention.efficiency_flash2"});
}

// overlap.compute_slowdown: absent, Lee et al. 2025's 0.189, as the bundled profiles; 0, overlap
// is free (no contention, a shorter step for a plan that overlaps); out of [0, 1], an error.
TEST(TomlHardware, OverlapSlowdownIsTheProfilesOwn) {
  // ZeRO-3 on 64 GPUs: its gathers and reductions overlap the layers' compute.
  const auto zero3_on = [](const std::filesystem::path& file) {
    return "[model]\npreset = \"llama2-7b\"\n[training]\nglobal_batch = 128\nmicro_batch = 2\n"
           "[cluster]\nhardware = \"" + file.string() + "\"\nnum_gpus = 64\n[[strategy]]\nname = \"fsdp\"\nstage = 3\n";
  };
  const test::Evaluated standard = test::evaluate_recipe(zero3_on(write_profile("overlap-default", kH100SxmProfile)));
  EXPECT_DOUBLE_EQ(standard.hardware->profile().overlap_compute_slowdown, 0.189);
  const std::string free_overlap = std::string(kH100SxmProfile) + "[overlap]\ncompute_slowdown = 0\n";
  const test::Evaluated free = test::evaluate_recipe(zero3_on(write_profile("overlap-free", free_overlap)));
  EXPECT_EQ(free.number("time.overlap_contention_s"), 0.0);
  EXPECT_GT(standard.number("time.overlap_contention_s"), 0.0);
  EXPECT_LT(free.number("time.step_s"), standard.number("time.step_s"));
  const std::string too_much = std::string(kH100SxmProfile) + "[overlap]\ncompute_slowdown = 2\n";
  std::filesystem::path file = write_profile("overlap-too-much", too_much);
  expect_error<InputError>([&] { test::evaluate_recipe(recipe_on(file.string())); },
                           {file.string(), "overlap.compute_slowdown", "[0, 1]"});
}

// fleet.speed_variation: absent, 0.5 % (after Sinha et al., SC22), as the bundled profiles; 0,
// identical GPUs. On 64 GPUs compute runs at the slowest one's pace, 1 + 0.005 E[max of 64
// normals] = 1 + 0.005 x 2.3437 times the identical GPUs' compute (the integral by hand; between
// the tables' 2.2491 for 50 and 2.5076 for 100); out of [0, 0.5], an error.
TEST(TomlHardware, SpeedVariationIsTheProfilesOwn) {
  const auto dense_on = [](const std::filesystem::path& file) {
    return "[model]\npreset = \"llama2-7b\"\n[training]\nglobal_batch = 128\nmicro_batch = 2\n"
           "[cluster]\nhardware = \"" + file.string() + "\"\nnum_gpus = 64\n[[strategy]]\nname = \"fsdp\"\nstage = 1\n";
  };
  const test::Evaluated standard = test::evaluate_recipe(dense_on(write_profile("fleet-default", kH100SxmProfile)));
  EXPECT_DOUBLE_EQ(standard.hardware->profile().speed_variation, 0.005);
  const std::string identical_gpus = std::string(kH100SxmProfile) + "[fleet]\nspeed_variation = 0\n";
  const test::Evaluated identical = test::evaluate_recipe(dense_on(write_profile("fleet-identical", identical_gpus)));
  EXPECT_EQ(identical.number("time.slowest_gpu_s"), 0.0);
  EXPECT_NEAR(standard.number("time.compute_s") / identical.number("time.compute_s"), 1 + 0.005 * 2.3437, 1e-5);
  EXPECT_NEAR(standard.number("time.slowest_gpu_s"), standard.number("time.compute_s") - identical.number("time.compute_s"),
              1e-9 * standard.number("time.compute_s"));
  const std::string too_much = std::string(kH100SxmProfile) + "[fleet]\nspeed_variation = 0.7\n";
  std::filesystem::path file = write_profile("fleet-too-much", too_much);
  expect_error<InputError>([&] { test::evaluate_recipe(dense_on(file)); }, {file.string(), "fleet.speed_variation", "[0, 0.5]"});
}

TEST(TomlHardware, TheShippedExampleLoads) {
  auto evaluated = test::evaluate_recipe(recipe_on(PARAPLAN_SOURCE_DIR "/hardware/toml/examples/h100-pcie.toml"));
  EXPECT_EQ(std::get<std::string>(*evaluated.results.find("plan.hardware")), "h100-pcie");
  EXPECT_DOUBLE_EQ(evaluated.number("memory.capacity_bytes"), 80e9);  // capacity_gb = 80
}

TEST(TomlHardware, BrokenProfilesNameFileLineAndKey) {
  std::string unknown = kH100SxmProfile;
  unknown.replace(unknown.find("bf16_tflops"), 11, "bf16_tflop");
  std::filesystem::path file = write_profile("unknown", unknown);
  expect_error<InputError>([&] { test::evaluate_recipe(recipe_on(file.string())); },
                           {"cluster.hardware", file.string() + ":", "compute.bf16_tflop: unknown key"});

  std::string negative = kH100SxmProfile;
  negative.replace(negative.find("bandwidth_gbit_s = 400"), 22, "bandwidth_gbit_s = -1");
  file = write_profile("negative", negative);
  expect_error<InputError>([&] { test::evaluate_recipe(recipe_on(file.string())); },
                           {file.string() + ":", "tiers[1].bandwidth_gbit_s"});

  std::string missing = kH100SxmProfile;
  missing.erase(missing.find("capacity_gb = 80"), 16);
  file = write_profile("missing", missing);
  expect_error<InputError>([&] { test::evaluate_recipe(recipe_on(file.string())); },
                           {file.string() + ":", "memory.capacity_gb"});

  file = write_profile("malformed", "name = \"x\"\ngpus_per_node = = 8\n");
  expect_error<InputError>([&] { test::evaluate_recipe(recipe_on(file.string())); }, {file.string() + ":2:"});
}

}  // namespace
}  // namespace paraplan::host
