// tests/unit/export_test_support.h: what the exporter tests share: the three recipes the issue
// names (dense 3D, MoE with EP, long context with CP), exporting one, finding an exported file,
// the recipe's own numbers read without paraplan, and golden files.
#pragma once

#include <gtest/gtest.h>

#include <toml++/toml.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "host/export/exporting.h"
#include "host/plan/composer.h"
#include "host/plan/hardware_binding.h"
#include "host/recipe/recipe_reader.h"
#include "test_support.h"

namespace paraplan::test {

inline const std::string kDenseRecipe = PARAPLAN_RECIPES_DIR "/scenarios/seed1-llama2-70b-4k-64xh100.toml";
inline const std::string kMoeRecipe = PARAPLAN_RECIPES_DIR "/scenarios/seed6-mixtral-8x7b-ep8-8xh100.toml";
inline const std::string kLongContextRecipe = PARAPLAN_RECIPES_DIR "/export/llama3-70b-32k-cp4-256xh100.toml";

// The recipe file's plan through `exporter`.
inline host::ExportResult export_recipe(const std::string& file, const std::string& exporter,
                                        const std::vector<std::string>& overrides = {}) {
  host::RecipeReaderOptions options;
  options.overrides = overrides;
  std::unique_ptr<host::Recipe> recipe = host::read_recipe(file, options);
  std::unique_ptr<host::HardwareBinding> hardware = host::open_hardware(*recipe, bundled_catalog());
  host::ComposedPlan composed =
      host::compose_plan(*recipe, bundled_catalog(), host::gpus_per_node(*recipe, *hardware), false);
  return host::run_exporter(exporter, *recipe, bundled_catalog(), composed, *hardware);
}

// The exported file `name`, or nullptr.
inline const host::ExportedFile* find_file(const host::ExportResult& result, const std::string& name) {
  auto found = std::find_if(result.files.begin(), result.files.end(),
                            [&](const host::ExportedFile& file) { return file.name == name; });
  return found == result.files.end() ? nullptr : &*found;
}

// The exported file `name`; throws when the exporter wrote none.
inline const host::ExportedFile& file_named(const host::ExportResult& result, const std::string& name) {
  const host::ExportedFile* file = find_file(result, name);
  if (!file) throw std::runtime_error("no exported file " + name);
  return *file;
}

// The recipe's own numbers, read from its TOML without paraplan: what an exported config must say.
struct RecipeFacts {
  int64_t gpus = 0, global_batch = 0, micro_batch = 0, seq_len = 0;
  int64_t tp = 1, cp = 1, pp = 1, ep = 1, virtual_stages = 1, fsdp_stage = 0;
  std::string recompute = "none", schedule = "1f1b";
  int64_t dp() const { return gpus / (tp * cp * pp); }
};

inline RecipeFacts recipe_facts(const std::string& file) {
  const toml::table recipe = toml::parse_file(file);
  RecipeFacts facts;
  facts.gpus = recipe["cluster"]["num_gpus"].value_or<int64_t>(0);
  facts.global_batch = recipe["training"]["global_batch"].value_or<int64_t>(0);
  facts.micro_batch = recipe["training"]["micro_batch"].value_or<int64_t>(1);
  facts.seq_len = recipe["model"]["seq_len"].value_or<int64_t>(0);
  facts.recompute = recipe["training"]["recompute"].value_or<std::string>("none");
  if (const toml::array* strategies = recipe["strategy"].as_array()) {
    for (const toml::node& node : *strategies) {
      const toml::table& strategy = *node.as_table();
      const std::string name = strategy["name"].value_or<std::string>("");
      const int64_t degree = strategy["degree"].value_or<int64_t>(1);
      if (name == "tp") facts.tp = degree;
      if (name == "sp" && strategy["mode"].value_or<std::string>("megatron") != "megatron") facts.cp = degree;
      if (name == "pp") {
        facts.pp = degree;
        facts.schedule = strategy["schedule"].value_or<std::string>("1f1b");
        facts.virtual_stages = strategy["virtual_stages"].value_or<int64_t>(1);
      }
      if (name == "ep") facts.ep = degree;
      if (name == "fsdp") facts.fsdp_stage = strategy["stage"].value_or<int64_t>(0);
    }
  }
  return facts;
}

inline std::string read_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Compares every file (and the unexpressed lines, one per line in unexpressed.txt) with
// tests/data/export/<exporter>/<name>/, or rewrites them there under PARAPLAN_UPDATE_GOLDEN=1.
inline void check_golden(const std::string& exporter, const std::string& name, const host::ExportResult& result) {
  const std::filesystem::path directory = std::filesystem::path(PARAPLAN_TEST_DATA_DIR) / "export" / exporter / name;
  std::vector<std::pair<std::string, std::string>> files;
  for (const host::ExportedFile& file : result.files) files.emplace_back(file.name, file.data);
  std::string unexpressed;
  for (const std::string& line : result.unexpressed) unexpressed += line + "\n";
  files.emplace_back("unexpressed.txt", unexpressed);
  const char* update = std::getenv("PARAPLAN_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::filesystem::create_directories(directory);
    for (const auto& [file, data] : files) std::ofstream(directory / file, std::ios::binary) << data;
    return;
  }
  for (const auto& [file, data] : files) {
    ASSERT_TRUE(std::filesystem::exists(directory / file)) << (directory / file) << " is missing; regenerate with "
                                                           << "PARAPLAN_UPDATE_GOLDEN=1";
    EXPECT_EQ(read_file(directory / file), data) << "differs from " << (directory / file);
  }
}

}  // namespace paraplan::test
