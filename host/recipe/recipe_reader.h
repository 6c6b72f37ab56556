// paraplan/host/recipe/recipe_reader.h: TOML file -> Recipe, with every error located.
//
// Malformed TOML is reported as "file:line:column: <parser message>"; schema problems as
// "file:line:column: training.micro_batch: must be >= 1". Every error is an InputError (exit 3).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "host/recipe/recipe.h"

namespace paraplan::host {

struct RecipeReaderOptions {
  std::vector<std::filesystem::path> model_directories;  // searched for presets after the recipe's own
  std::vector<std::string> overrides;                    // "key=value", applied in order (recipe_overrides.h)
  // `paraplan search`: training.micro_batch, training.recompute and a strategy's degree may be
  // arrays (the set to try) or "auto", and fill Recipe::search (recipe.h).
  bool search = false;
};

// `file_or_name` is a recipe file or, when no such file exists, a shipped recipe's name
// (shipped_files.h: `paraplan evaluate seed1-llama2-70b-4k-64xh100` from any directory).
std::unique_ptr<Recipe> read_recipe(const std::filesystem::path& file_or_name, const RecipeReaderOptions& options = {});
std::unique_ptr<Recipe> parse_recipe(std::string_view text, const std::string& file_name,
                                     const RecipeReaderOptions& options = {});

}  // namespace paraplan::host
