// tests/unit/export_test_support.h: what the exporter tests share: the three recipes the issue
// names (dense 3D, MoE with EP, long context with CP), exporting one, and golden files.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
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
inline host::ExportResult export_recipe(const std::string& file, const std::string& exporter) {
  std::unique_ptr<host::Recipe> recipe = host::read_recipe(file);
  std::unique_ptr<host::HardwareBinding> hardware = host::open_hardware(*recipe, bundled_catalog());
  host::ComposedPlan composed =
      host::compose_plan(*recipe, bundled_catalog(), host::gpus_per_node(*recipe, *hardware), false);
  return host::run_exporter(exporter, *recipe, bundled_catalog(), composed, *hardware);
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
