// paraplan/host/recipe/recipe_overrides.h: `--set key=value` on the command line.
//
// An override changes one key of the recipe before it is read, so every check still applies:
//   --set cluster.num_gpus=512          [cluster] num_gpus = 512
//   --set training.recompute=full       a bare word is a string
//   --set strategy.tp.degree=8          the [[strategy]] named "tp" (appended if absent)
//   --set cluster.mesh_order='["tp","dp","pp"]'
// Errors name the override: `--set strategy.tp.degre=8:1:1: strategy[0].degre: unknown key ...`.
#pragma once

#include <toml++/toml.h>

#include <string>
#include <vector>

namespace paraplan::host {

void apply_override(toml::table& document, const std::string& assignment);

// Values set on the command line have no line in the file: appends "(from --set KEY=VALUE)"
// for each override whose last key segment the error message names.
std::string mention_overrides(const std::string& message, const std::vector<std::string>& overrides);

// `text` as an override value that stays a string: a TOML basic string ("..."), where a bare
// value would be read as a number or a date (a path like 2024-01-01/trace.json).
std::string override_string(const std::string& text);

}  // namespace paraplan::host
