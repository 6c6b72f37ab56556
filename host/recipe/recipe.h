// paraplan/host/recipe/recipe.h: a parsed, validated recipe.
//
// A recipe is a TOML file:
//   [model]     preset = "llama3-70b" and/or explicit shape keys (explicit keys win)
//   [training]  global_batch, micro_batch, precision, recompute, optimizer, flash_attention, attention_kernel
//   [cluster]   hardware, num_gpus, gpus_per_node, mesh_order
//   [executor]  optional: parameters for the executor the command runs
//   [[strategy]] name = "tp", degree = 8, then the plugin's own keys
// docs/recipes.md documents every key. Strategy and executor tables are kept as TOML here and
// checked against the plugins' schemas when the plugins are known (composer.h).
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "host/model/layer_stack.h"
#include "paraplan/model.h"

namespace paraplan::host {

struct ModelSpec {
  std::string name;  // preset name or "custom"
  pp_model shape{};  // shape.name points into `name`, its layer stack into `layers`
  LayerStack layers;
};

struct ClusterSpec {
  std::string hardware;               // a hardware plugin name, or a path to a TOML profile
  std::string hardware_file;          // resolved absolute path when `hardware` is a file
  int64_t num_gpus = 0;
  std::optional<int64_t> gpus_per_node;  // default: the hardware profile's
  std::vector<std::string> mesh_order;   // innermost first
};

struct StrategyEntry {
  std::string name;
  std::optional<int64_t> degree;
  std::vector<int64_t> degree_choices;  // search: the degrees to try; empty = what the plugin allows
  bool degree_written = false;          // search: the recipe gave a degree (a value, a set or "auto")
  std::string key_path;            // "strategy[1]" (0-based, as in the file's order)
  const toml::table* table = nullptr;  // owned by Recipe::document
};

// What `paraplan search` may vary (read with RecipeReaderOptions::search). An empty list means
// every value the search knows; a written value (or array of values) is all it tries.
struct SearchChoices {
  std::vector<int64_t> micro_batches;
  std::vector<pp_recompute> recomputes;
  bool mesh_order_given = false;
  // Strategies the recipe does not list that the search may still try (and leave out): the
  // recipe's [search] try_unlisted (`paraplan validate` holds a published plan fixed but for its
  // blank knobs). Data-parallel remainder strategies are not affected.
  // null: every unlisted strategy with search cases; else only these
  std::optional<std::vector<std::string>> unlisted_tried;
};

struct Recipe {
  std::string file;  // as given on the command line, used in messages
  std::shared_ptr<toml::table> document;
  ModelSpec model;
  pp_training training{};
  bool flash_attention = true;
  bool fp32_main_grads = true;  // [training] main_grads = "fp32" (Megatron-LM) or "bf16" (ZeRO/DeepSpeed)
  ClusterSpec cluster;
  std::vector<StrategyEntry> strategies;
  const toml::table* executor_table = nullptr;  // [executor], may be null
  const toml::table* export_table = nullptr;    // [export], may be null: [export.<exporter>] tables
  SearchChoices search;

  Recipe() = default;
  Recipe(const Recipe&) = delete;  // model.shape.name points into this object
  Recipe& operator=(const Recipe&) = delete;
};

// The default mesh order, innermost first: TP on the fastest links, pipeline outermost
// (Megatron-LM's tp-cp-ep-dp-pp; hybrid sharding's replica axis just inside the pipeline).
std::vector<std::string> default_mesh_order();

}  // namespace paraplan::host
