#include "host/recipe/recipe_reader.h"

#include <algorithm>
#include <cstdlib>
#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>

#include <spdlog/spdlog.h>

#include "host/core/edit_distance.h"
#include "host/core/errors.h"
#include "host/core/joined.h"
#include "host/core/number_format.h"
#include "host/model/position_embedding_names.h"
#include "host/model/precision_names.h"
#include "host/recipe/model_presets.h"
#include "host/recipe/input_file.h"
#include "host/recipe/recipe_limits.h"
#include "host/recipe/recipe_overrides.h"
#include "host/recipe/shipped_files.h"
#include "host/recipe/source_location.h"
#include "paraplan/host_issue.hpp"
#include "paraplan/sdk.hpp"

namespace paraplan::host {

std::vector<std::string> default_mesh_order() { return {"tp", "cp", "ep", "dp", "dp_replicate", "pp"}; }

namespace {

// Where each core key belongs, to redirect a key written in the wrong table.
const std::vector<std::pair<std::string, std::vector<std::string>>>& core_sections() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> sections = {
      {"model", {"preset", "layers", "hidden", "heads", "kv_heads", "head_dim", "ffn_hidden", "ffn_type", "vocab",
                 "seq_len", "moe_experts", "moe_top_k", "moe_ffn_hidden", "moe_shared_experts", "attention",
                 "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "dense_layers",
                 "moe_layer_freq", "moe_shared_ffn_hidden", "moe_router_groups", "moe_router_group_topk", "sliding_window", "full_attention_every", "layer_pattern",
                 "mamba_heads", "mamba_head_dim", "mamba_state", "mamba_groups", "mamba_conv_kernel", "mtp_layers",
                 "tied_embeddings", "dropout", "rotary_base", "norm_epsilon", "position_embedding", "linear_bias",
                 "activation_clamp"}},
      {"training", {"global_batch", "global_batch_tokens", "micro_batch", "precision", "recompute", "recompute_modules", "recompute_num_layers", "cpu_offloading_num_layers", "cuda_graph_modules", "optimizer", "master_weights",
                    "flash_attention", "attention_kernel", "elementwise_kernels", "fp8_attention", "moe_fused_mlp",
                    "main_grads"}},
      {"cluster", {"hardware", "num_gpus", "gpus_per_node", "mesh_order"}},
  };
  return sections;
}

// " (did you mean 'x'?)", or " (it belongs in [training])", or a hint for strategy keys.
std::string unknown_key_hint(const std::string& name, const std::vector<std::string>& known) {
  std::string suggestion = did_you_mean(name, known);
  if (!suggestion.empty()) return suggestion;
  for (const auto& [section, keys] : core_sections())
    if (std::find(keys.begin(), keys.end(), name) != keys.end()) return " (it belongs in [" + section + "])";
  return " (a strategy's own keys go in its [[strategy]] table; see 'paraplan plugins describe NAME')";
}

// Reads typed keys from one table and remembers which keys it asked for, so that whatever is
// left over can be reported as unknown with a suggestion.
//
// A `fallback` table answers keys the table lacks (a model preset under the recipe's [model]);
// every node keeps the position of the file it came from, so errors point at the right line.
class TableReader {
 public:
  TableReader(const toml::table* table, std::string path, const std::string& file,
              const toml::table* fallback = nullptr)
      : table_(table), fallback_(fallback), path_(std::move(path)), file_(file) {}

  std::optional<int64_t> integer(const std::string& key, limits::Bound bound) {
    const toml::node* node = lookup(key);
    if (!node) return std::nullopt;
    const std::optional<int64_t> value = integer_of(*node, key);
    check_bound(node, key, *value, bound);
    return value;
  }
  int64_t required_integer(const std::string& key, limits::Bound bound) {
    auto value = integer(key, bound);
    if (!value) fail(nullptr, key, "is required");
    return *value;
  }
  std::optional<std::string> string(const std::string& key) {
    const toml::node* node = lookup(key);
    if (!node) return std::nullopt;
    auto value = node->value_exact<std::string>();
    if (!value) fail(node, key, "expected a string, got " + toml_type_name(*node));
    return value;
  }
  std::optional<std::string> choice(const std::string& key, const std::vector<std::string>& allowed) {
    auto value = string(key);
    if (!value) return std::nullopt;
    for (const std::string& option : allowed)
      if (option == *value) return value;
    std::string options;
    for (const std::string& option : allowed) options += (options.empty() ? "" : "|") + option;
    fail(lookup(key), key, "'" + *value + "' is not one of " + options + did_you_mean(*value, allowed));
  }
  // A finite number in [min, max] (an integer is read as one too).
  std::optional<double> number(const std::string& key, double min, double max) {
    const toml::node* node = lookup(key);
    if (!node) return std::nullopt;
    std::optional<double> value = node->value_exact<double>();
    if (!value)
      if (auto integer = node->value_exact<int64_t>()) value = static_cast<double>(*integer);
    if (!value) fail(node, key, "expected a number, got " + toml_type_name(*node));
    if (!std::isfinite(*value) || *value < min || *value > max)
      fail(node, key, "must be a number in [" + format_number("%g", min) + ", " + format_number("%g", max) + "], got " +
                          format_number("%g", *value));
    return value;
  }
  std::optional<bool> boolean(const std::string& key) {
    const toml::node* node = lookup(key);
    if (!node) return std::nullopt;
    auto value = node->value_exact<bool>();
    if (!value) fail(node, key, "expected true or false, got " + toml_type_name(*node));
    return value;
  }
  std::optional<std::vector<std::string>> string_list(const std::string& key) {
    const toml::node* node = lookup(key);
    if (!node) return std::nullopt;
    const toml::array* array = node->as_array();
    if (!array) fail(node, key, "expected an array of strings, got " + toml_type_name(*node));
    std::vector<std::string> items;
    for (const toml::node& item : *array) {
      auto text = item.value_exact<std::string>();
      if (!text) fail(&item, key, "expected an array of strings");
      items.push_back(*text);
    }
    return items;
  }
  // `paraplan search` choices: an integer, an array of integers (the set to try) or "auto" (an
  // empty list: whatever the search knows). Absent: std::nullopt.
  std::optional<std::vector<int64_t>> integer_choices(const std::string& key, limits::Bound bound) {
    const toml::node* node = lookup(key);
    if (!node) return std::nullopt;
    if (node->value_exact<std::string>() == std::optional<std::string>("auto")) return std::vector<int64_t>{};
    std::vector<const toml::node*> items = elements(node, key, "an integer, an array of integers or \"auto\"");
    std::vector<int64_t> values;
    for (const toml::node* item : items) {
      std::optional<int64_t> value = item->value_exact<int64_t>();
      if (!value && size_text(*item)) value = integer_of(*item, key);
      if (!value) fail(item, key, "expected an integer, an array of integers or \"auto\", got " + toml_type_name(*item));
      check_bound(item, key, *value, bound);
      values.push_back(*value);
    }
    return values;
  }
  // Like integer_choices for a string key with allowed values.
  std::optional<std::vector<std::string>> string_choices(const std::string& key, const std::vector<std::string>& allowed) {
    const toml::node* node = lookup(key);
    if (!node) return std::nullopt;
    if (node->value_exact<std::string>() == std::optional<std::string>("auto")) return std::vector<std::string>{};
    std::vector<std::string> values;
    for (const toml::node* item : elements(node, key, "a string, an array of strings or \"auto\"")) {
      auto value = item->value_exact<std::string>();
      if (!value || std::find(allowed.begin(), allowed.end(), *value) == allowed.end()) {
        std::string options;
        for (const std::string& option : allowed) options += (options.empty() ? "" : "|") + option;
        fail(item, key, "expected one of " + options + " (or an array of them, or \"auto\")" +
                            (value ? did_you_mean(*value, allowed) : ""));
      }
      values.push_back(*value);
    }
    return values;
  }
  // Marks keys as known without reading them (e.g. keys another component validates).
  void allow(const std::vector<std::string>& keys) { known_.insert(known_.end(), keys.begin(), keys.end()); }

  void reject_unknown_keys() const {
    if (!table_) return;
    for (const auto& [key, node] : *table_) {
      std::string name(key.str());
      bool known = false;
      for (const std::string& candidate : known_) known = known || candidate == name;
      if (!known)
        throw InputError(location_of(file_, key) + ": " + qualified(name) + ": unknown key" +
                         unknown_key_hint(name, known_));
    }
  }

  void check_bound(const toml::node* node, const std::string& key, int64_t value, limits::Bound bound) const {
    if (value < bound.min) fail(node, key, "must be >= " + std::to_string(bound.min) + ", got " + std::to_string(value));
    if (value > bound.max)
      fail(node, key, std::to_string(value) + " is more than " + std::to_string(bound.max) +
                          ", the largest paraplan accepts (docs/recipes.md, limits)");
  }

  [[noreturn]] void fail(const toml::node* node, const std::string& key, const std::string& problem) const {
    const toml::node* where = node ? node : table_ ? static_cast<const toml::node*>(table_) : fallback_;
    throw InputError(location_of(file_, where) + ": " + qualified(key) + ": " + problem);
  }

 private:
  // Whether a string may be a size ("16K"): it starts like a number; "eight" is a string where an
  // integer goes.
  static bool size_text(const toml::node& node) {
    const std::optional<std::string> text = node.value_exact<std::string>();
    return text && !text->empty() && std::isdigit(static_cast<unsigned char>(text->front()));
  }

  // An integer, or a size with a binary suffix as people write them: "8K" = 8192 tokens, "4M" =
  // 4,194,304, "16K" GPUs (K, M, G, T: powers of 1024; a fraction must come out whole: "1.5K").
  std::optional<int64_t> integer_of(const toml::node& node, const std::string& key) {
    if (auto value = node.value_exact<int64_t>()) return value;
    if (!size_text(node)) fail(&node, key, "expected an integer, got " + toml_type_name(node));
    const std::optional<std::string> text = node.value_exact<std::string>();
    static const std::string kSuffixes = "KMGT";
    const size_t suffix = kSuffixes.find(static_cast<char>(std::toupper(static_cast<unsigned char>(text->back()))));
    const std::string digits = text->substr(0, text->size() - 1);
    char* end = nullptr;
    const double mantissa = suffix == std::string::npos || digits.empty() || digits.find_first_not_of("0123456789.") != std::string::npos
                                ? -1.0
                                : std::strtod(digits.c_str(), &end);
    const double scaled = mantissa * std::pow(1024.0, static_cast<double>(suffix + 1));
    if (mantissa >= 0 && end == digits.c_str() + digits.size() && scaled != std::floor(scaled))
      fail(&node, key, "\"" + *text + "\" is " + format_number("%.1f", scaled) + ", not a whole number");
    if (mantissa < 0 || end != digits.c_str() + digits.size() || scaled > 9e18)
      fail(&node, key, "expected an integer or a size such as \"8K\" (8192; K, M, G, T are powers of 1024), got \"" + *text + "\"");
    return static_cast<int64_t>(scaled);
  }

  const toml::node* lookup(const std::string& key) {
    known_.push_back(key);
    const toml::node* node = table_ ? table_->get(key) : nullptr;
    return node || !fallback_ ? node : fallback_->get(key);
  }
  // A scalar as a one-element list; a non-empty array's elements.
  std::vector<const toml::node*> elements(const toml::node* node, const std::string& key, const std::string& expected) {
    std::vector<const toml::node*> items;
    if (const toml::array* array = node->as_array()) {
      if (array->empty()) fail(node, key, "expected " + expected + ", got an empty array");
      for (const toml::node& item : *array) items.push_back(&item);
    } else {
      items.push_back(node);
    }
    return items;
  }
  std::string qualified(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

  const toml::table* table_;
  const toml::table* fallback_;
  std::string path_;
  const std::string& file_;
  std::vector<std::string> known_;
};

toml::table parse_toml(std::string_view text, const std::string& file_name) {
  if (text.size() > kMaxTomlBytes)
    throw InputError(file_name + ": " + std::to_string(text.size()) + " bytes, more than the " +
                     std::to_string(kMaxTomlBytes) + " a TOML input may have");
  check_toml_depth(text, file_name);
  try {
    return toml::parse(text, file_name);
  } catch (const toml::parse_error& failure) {
    const toml::source_position& begin = failure.source().begin;
    throw InputError(file_name + ":" + std::to_string(begin.line) + ":" + std::to_string(begin.column) + ": " +
                     std::string(failure.description()));
  }
}

toml::table read_toml_file(const std::filesystem::path& file, const std::string& what) {
  return parse_toml(read_bounded_file(file, kMaxTomlBytes, what), file.string());
}

const toml::table* subtable(const toml::table& document, const std::string& key, const std::string& file) {
  const toml::node* node = document.get(key);
  if (!node) return nullptr;
  if (!node->is_table())
    throw InputError(location_of(file, node) + ": " + key + ": expected a table ([" + key + "]), got " +
                     toml_type_name(*node));
  return node->as_table();
}

const std::vector<std::string> kModelShapeKeys(core_sections()[0].second.begin() + 1, core_sections()[0].second.end());

// The preset named by model.preset (empty table when none), its own keys checked.
toml::table read_model_preset(const toml::table* recipe_model, const std::string& file,
                              const RecipeReaderOptions& options, const std::filesystem::path& recipe_path,
                              std::string& preset_name) {
  toml::table preset_table;
  TableReader reader(recipe_model, "model", file);
  if (auto preset = reader.string("preset")) {
    std::vector<std::filesystem::path> directories = options.model_directories;
    std::vector<std::filesystem::path> defaults = model_preset_directories(recipe_path);
    directories.insert(directories.end(), defaults.begin(), defaults.end());
    auto preset_file = find_model_preset(*preset, directories);
    if (!preset_file)
      reader.fail(recipe_model->get("preset"), "preset",
                  "no model preset '" + *preset + "'" + did_you_mean(*preset, list_model_presets(directories)));
    spdlog::info("model preset '{}': {}", *preset, preset_file->string());
    preset_table = read_toml_file(*preset_file, "model preset");
    TableReader preset_reader(&preset_table, "", preset_file->string());
    preset_reader.string("description");
    preset_reader.string("source");
    preset_reader.allow(kModelShapeKeys);
    preset_reader.reject_unknown_keys();
    preset_name = *preset;
  }
  return preset_table;
}

LayerStackKeys read_layer_keys(TableReader& reader) {
  LayerStackKeys keys;
  keys.attention = reader.choice("attention", {"mha", "gqa", "mla"}).value_or("");
  auto width = [&](const char* key) { return reader.integer(key, limits::kHeadDim).value_or(0); };
  keys.q_lora_rank = reader.integer("q_lora_rank", limits::kHidden).value_or(0);
  keys.kv_lora_rank = reader.integer("kv_lora_rank", limits::kHidden).value_or(0);
  keys.qk_nope_head_dim = width("qk_nope_head_dim");
  keys.qk_rope_head_dim = width("qk_rope_head_dim");
  keys.v_head_dim = width("v_head_dim");
  keys.dense_layers = reader.integer("dense_layers", {0, limits::kLayers.max}).value_or(0);
  keys.moe_layer_freq = reader.integer("moe_layer_freq", limits::kLayers).value_or(1);
  keys.moe_shared_ffn_hidden = reader.integer("moe_shared_ffn_hidden", limits::kFfnHidden).value_or(0);
  keys.moe_router_groups = reader.integer("moe_router_groups", limits::kExperts).value_or(0);
  keys.moe_router_group_topk = reader.integer("moe_router_group_topk", limits::kExperts).value_or(0);
  keys.sliding_window = reader.integer("sliding_window", limits::kSeqLen).value_or(0);
  keys.full_attention_every = reader.integer("full_attention_every", limits::kLayers).value_or(0);
  keys.layer_pattern = reader.string("layer_pattern").value_or("");
  keys.mamba_heads = reader.integer("mamba_heads", limits::kHeads).value_or(0);
  keys.mamba_head_dim = width("mamba_head_dim");
  keys.mamba_state = reader.integer("mamba_state", limits::kHeadDim).value_or(0);
  keys.mamba_groups = reader.integer("mamba_groups", limits::kHeads).value_or(0);
  keys.mamba_conv_kernel = reader.integer("mamba_conv_kernel", {1, 64}).value_or(4);
  keys.mtp_layers = reader.integer("mtp_layers", {0, 64}).value_or(0);
  keys.linear_bias = reader.boolean("linear_bias").value_or(false);
  keys.activation_clamp = reader.number("activation_clamp", 0.0, 1e6).value_or(0.0);
  return keys;
}

void read_model(Recipe& recipe, const toml::table* model_table, const RecipeReaderOptions& options,
                const std::filesystem::path& recipe_path) {
  if (!model_table) throw InputError(recipe.file + ": [model]: the recipe has no [model] table");
  std::string preset_name;
  toml::table preset = read_model_preset(model_table, recipe.file, options, recipe_path, preset_name);
  TableReader reader(model_table, "model", recipe.file, &preset);
  reader.allow({"preset"});
  pp_model& shape = recipe.model.shape;
  shape.struct_size = sizeof(pp_model);
  shape.layers = reader.required_integer("layers", limits::kLayers);
  shape.hidden = reader.required_integer("hidden", limits::kHidden);
  shape.heads = reader.required_integer("heads", limits::kHeads);
  shape.kv_heads = reader.integer("kv_heads", limits::kHeads).value_or(shape.heads);
  auto head_dim = reader.integer("head_dim", limits::kHeadDim);
  if (!head_dim && shape.hidden % shape.heads != 0)
    reader.fail(nullptr, "head_dim", "is required when heads = " + std::to_string(shape.heads) +
                                         " does not divide hidden = " + std::to_string(shape.hidden));
  shape.head_dim = head_dim.value_or(shape.hidden / shape.heads);
  std::string ffn = reader.choice("ffn_type", {"gelu", "swiglu", "squared_relu"}).value_or("gelu");
  shape.ffn_type = ffn == "swiglu" ? PP_FFN_SWIGLU : ffn == "squared_relu" ? PP_FFN_SQUARED_RELU : PP_FFN_GELU;
  auto ffn_hidden = reader.integer("ffn_hidden", limits::kFfnHidden);
  if (!ffn_hidden && shape.ffn_type == PP_FFN_SWIGLU)
    reader.fail(nullptr, "ffn_hidden", "is required for ffn_type = \"swiglu\"");
  shape.ffn_hidden = ffn_hidden.value_or(4 * shape.hidden);
  shape.vocab = reader.required_integer("vocab", limits::kVocab);
  shape.seq_len = reader.required_integer("seq_len", limits::kSeqLen);
  shape.moe_experts = reader.integer("moe_experts", limits::kExperts).value_or(0);
  shape.moe_top_k = reader.integer("moe_top_k", {1, limits::kExperts.max}).value_or(shape.moe_experts > 0 ? 2 : 0);
  shape.moe_ffn_hidden = reader.integer("moe_ffn_hidden", limits::kFfnHidden).value_or(shape.moe_experts > 0 ? shape.ffn_hidden : 0);
  shape.moe_shared_experts = reader.integer("moe_shared_experts", limits::kSharedExperts).value_or(0);
  const LayerStackKeys keys = read_layer_keys(reader);
  shape.tied_embeddings = reader.boolean("tied_embeddings").value_or(false) ? 1 : 0;
  shape.dropout = reader.number("dropout", 0.0, 0.99).value_or(kDefaultDropout);
  shape.rotary_base = reader.number("rotary_base", 0.0, 1e12).value_or(0.0);
  shape.norm_epsilon = reader.number("norm_epsilon", 0.0, 1.0).value_or(0.0);
  const std::optional<std::string> positions = reader.choice("position_embedding", position_embedding_names());
  shape.position_embedding =
      positions ? *position_embedding_named(*positions) : PP_POSITION_EMBEDDING_UNSPECIFIED;
  reader.reject_unknown_keys();

  auto node_of = [&](const char* key) {
    const toml::node* node = model_table->get(key);
    return node ? node : preset.get(key);
  };
  if (shape.heads % shape.kv_heads != 0)
    reader.fail(node_of("kv_heads"), "kv_heads",
                std::to_string(shape.kv_heads) + " must divide heads = " + std::to_string(shape.heads));
  if (shape.moe_experts > 0 && shape.moe_top_k > shape.moe_experts)
    reader.fail(node_of("moe_top_k"), "moe_top_k",
                std::to_string(shape.moe_top_k) + " exceeds moe_experts = " + std::to_string(shape.moe_experts));
  try {
    recipe.model.layers = LayerStack::build(shape, keys);
  } catch (const LayerStackError& error) {
    reader.fail(node_of(error.key().c_str()), error.key(), error.what());
  }
  recipe.model.layers.attach(shape);
  recipe.model.name = preset_name.empty() ? "custom" : preset_name;
  shape.name = recipe.model.name.c_str();
}

pp_recompute recompute_of(const std::string& name) {
  return name == "full" ? PP_RECOMPUTE_FULL : name == "selective" ? PP_RECOMPUTE_SELECTIVE : PP_RECOMPUTE_NONE;
}

// Search mode: micro_batch and recompute may be sets or "auto", and are searched when absent.
void read_training_choices(Recipe& recipe, TableReader& reader, const toml::table& table) {
  pp_training& training = recipe.training;
  recipe.search.micro_batches = reader.integer_choices("micro_batch", limits::kGlobalBatch).value_or(std::vector<int64_t>{});
  for (int64_t micro_batch : recipe.search.micro_batches)
    if (training.global_batch % micro_batch != 0)
      reader.fail(table.get("micro_batch"), "micro_batch",
                  std::to_string(micro_batch) + " does not divide global_batch = " + std::to_string(training.global_batch));
  training.micro_batch = recipe.search.micro_batches.empty() ? 1 : recipe.search.micro_batches.front();
  for (const std::string& name : reader.string_choices("recompute", {"none", "selective", "full"}).value_or(std::vector<std::string>{}))
    recipe.search.recomputes.push_back(recompute_of(name));
  training.recompute = recipe.search.recomputes.empty() ? PP_RECOMPUTE_NONE : recipe.search.recomputes.front();
}

// Whether the recipe runs `mode`, or (a search) may choose it.
bool may_recompute(const pp_training& training, const SearchChoices& search, pp_recompute mode) {
  return training.recompute == mode || std::find(search.recomputes.begin(), search.recomputes.end(), mode) != search.recomputes.end();
}

// Megatron-LM's --recompute-modules names, as pp_recompute_module bits; only with selective
// recomputation (a recipe or search that may choose it). torchtitan's op policy stands alone and
// needs layers whose matmuls it knows the order of: attention with a dense MLP.
uint32_t read_recompute_modules(TableReader& reader, const toml::table& table, const pp_training& training,
                                const SearchChoices& search, const LayerStack& layers) {
  const std::optional<std::vector<std::string>> names = reader.string_list("recompute_modules");
  if (!names) return 0;
  if (!may_recompute(training, search, PP_RECOMPUTE_SELECTIVE))
    reader.fail(table.get("recompute_modules"), "recompute_modules", "needs recompute = \"selective\"");
  const auto& known = paraplan::kRecomputeModuleNames;
  uint32_t modules = 0;
  for (const std::string& name : *names) {
    auto found = std::find_if(std::begin(known), std::end(known), [&](const auto& entry) { return entry.name == name; });
    if (found == std::end(known)) {
      std::vector<std::string> options;
      std::string listed;
      for (const auto& entry : known) {
        options.emplace_back(entry.name);
        listed += (listed.empty() ? "" : "|") + std::string(entry.name);
      }
      reader.fail(table.get("recompute_modules"), "recompute_modules",
                  "'" + name + "' is not one of " + listed + did_you_mean(name, options));
    }
    modules |= found->module;
  }
  if (modules == 0) reader.fail(table.get("recompute_modules"), "recompute_modules", "is empty");
  if ((modules & PP_RECOMPUTE_TORCHTITAN_OP) != 0) {
    if (modules != PP_RECOMPUTE_TORCHTITAN_OP)
      reader.fail(table.get("recompute_modules"), "recompute_modules",
                  "\"torchtitan_op\" is torchtitan's whole per-op policy: name it alone");
    for (const pp_layer_kind& kind : layers.kinds())
      if (kind.mixer != PP_MIXER_ATTENTION || kind.mlp != PP_MLP_DENSE || kind.mtp)
        reader.fail(table.get("recompute_modules"), "recompute_modules",
                    "\"torchtitan_op\" is priced for attention layers with a dense MLP (the order of their "
                    "matmuls decides which are kept), and the model has " + layer_kind_name(kind) + " layers");
  }
  return modules;
}

// Megatron-LM's --recompute-method block --recompute-num-layers: full recomputation of each
// pipeline chunk's first N layers only; only with full recomputation (a recipe or search that may
// choose it). Absent: every layer (a search also tries the fewest that fit).
int64_t read_recompute_num_layers(TableReader& reader, const toml::table& table, const pp_training& training,
                                  const SearchChoices& search) {
  const std::optional<int64_t> layers = reader.integer("recompute_num_layers", limits::kLayers);
  if (!layers) return 0;
  if (!may_recompute(training, search, PP_RECOMPUTE_FULL))
    reader.fail(table.get("recompute_num_layers"), "recompute_num_layers", "needs recompute = \"full\"");
  return *layers;
}

// Megatron-LM's --cpu-offloading-num-layers: the activations of the first N layers copied to host
// memory and back (host/plan/activation_offload.h). Megatron-LM refuses it with recomputation, and
// with N at or above the model's layers; a search that would choose recomputation recomputes none.
int64_t read_cpu_offloading_num_layers(TableReader& reader, const toml::table& table, Recipe& recipe) {
  const std::optional<int64_t> layers = reader.integer("cpu_offloading_num_layers", limits::kLayers);
  if (!layers) return 0;
  const toml::node* node = table.get("cpu_offloading_num_layers");
  if (*layers >= recipe.model.shape.layers)
    reader.fail(node, "cpu_offloading_num_layers",
                "must be less than the model's " + std::to_string(recipe.model.shape.layers) + " layers");
  std::vector<pp_recompute>& searched = recipe.search.recomputes;
  const bool recomputes = recipe.training.recompute != PP_RECOMPUTE_NONE ||
                          std::any_of(searched.begin(), searched.end(), [](pp_recompute mode) { return mode != PP_RECOMPUTE_NONE; });
  if (recomputes)
    reader.fail(node, "cpu_offloading_num_layers",
                "needs recompute = \"none\" (Megatron-LM does not offload activations it recomputes)");
  if (searched.empty()) searched = {PP_RECOMPUTE_NONE};
  return *layers;
}

// Megatron-LM's --cuda-graph-modules names (and "full_iteration", --cuda-graph-impl
// full_iteration) as pp_cuda_graph_module bits, with the combinations TransformerConfig refuses
// refused here (megatron/core/transformer/transformer_config.py).
uint32_t read_cuda_graph_modules(TableReader& reader, const toml::table& table, const pp_model& model) {
  const std::optional<std::vector<std::string>> names = reader.string_list("cuda_graph_modules");
  if (!names) return 0;
  const toml::node* node = table.get("cuda_graph_modules");
  std::vector<std::string> options;
  for (const auto& [known, bit] : paraplan::issue::kCudaGraphModuleNames) options.push_back(known);
  uint32_t modules = 0;
  for (const std::string& name : *names) {
    const auto& known = paraplan::issue::kCudaGraphModuleNames;
    auto found = std::find_if(std::begin(known), std::end(known), [&](const auto& entry) { return name == entry.first; });
    if (found == std::end(known))
      reader.fail(node, "cuda_graph_modules",
                  "'" + name + "' is not one of " + joined(options, "|") + did_you_mean(name, options));
    modules |= found->second;
  }
  if ((modules & PP_CUDA_GRAPH_FULL_ITERATION) && modules != PP_CUDA_GRAPH_FULL_ITERATION)
    reader.fail(node, "cuda_graph_modules", "full_iteration captures the whole step and takes no other module");
  if ((modules & PP_CUDA_GRAPH_MOE) && (modules & PP_CUDA_GRAPH_MOE_ROUTER))
    reader.fail(node, "cuda_graph_modules", "takes moe or moe_router, not both (moe holds the router)");
  if ((modules & PP_CUDA_GRAPH_MOE_PREPROCESS) && !(modules & PP_CUDA_GRAPH_MOE_ROUTER))
    reader.fail(node, "cuda_graph_modules", "moe_preprocess needs moe_router");
  if ((modules & (PP_CUDA_GRAPH_MOE | PP_CUDA_GRAPH_MOE_ROUTER)) && model.moe_experts <= 1)
    reader.fail(node, "cuda_graph_modules", "moe and moe_router need an MoE model (model.moe_experts > 1)");
  return modules;
}

// fp8_attention and moe_fused_mlp, with the conditions their kernels have: Transformer Engine's
// FP8 attention is cuDNN's fused kernel beside an FP8-family GEMM recipe (Megatron-Core sets
// fp8_dpa only inside its FP8 autocast); its fused grouped MLP exists for the MXFP8 and NVFP4
// recipes and GLU experts (transformer_engine/pytorch/ops/fused/grouped_mlp.py,
// fuse_grouped_mlp_ops).
void read_fused_kernels(TableReader& reader, const toml::table& table, Recipe& recipe) {
  pp_training& training = recipe.training;
  training.fp8_attention = reader.boolean("fp8_attention").value_or(false) ? 1 : 0;
  if (training.fp8_attention && !paraplan::quantised_precision(training.precision))
    reader.fail(table.get("fp8_attention"), "fp8_attention",
                "needs precision fp8, mxfp8 or nvfp4 (FP8 attention runs inside Transformer Engine's FP8 recipe), not " +
                    std::string(paraplan::precision_name(training.precision)));
  if (training.fp8_attention && (!recipe.flash_attention || paraplan::attention_kernel(training) != PP_ATTENTION_KERNEL_TUNED))
    reader.fail(table.get("fp8_attention"), "fp8_attention",
                "is cuDNN's fused attention in FP8: it needs flash_attention = true and the tuned attention_kernel");
  training.moe_fused_mlp = reader.boolean("moe_fused_mlp").value_or(false) ? 1 : 0;
  if (!training.moe_fused_mlp) return;
  const pp_model& model = recipe.model.shape;
  if (model.moe_experts <= 1)
    reader.fail(table.get("moe_fused_mlp"), "moe_fused_mlp", "fuses the routed experts' MLP: it needs an MoE model (model.moe_experts > 1)");
  if (model.ffn_type != PP_FFN_SWIGLU)
    reader.fail(table.get("moe_fused_mlp"), "moe_fused_mlp", "fuses a GLU into the experts' GEMMs: it needs ffn_type = \"swiglu\"");
  if (training.precision != PP_PRECISION_MXFP8 && training.precision != PP_PRECISION_NVFP4)
    reader.fail(table.get("moe_fused_mlp"), "moe_fused_mlp",
                "is Transformer Engine's block-scaled kernel: it needs precision mxfp8 or nvfp4, not " +
                    std::string(paraplan::precision_name(training.precision)));
}

// Sequences per step: `global_batch`, or `global_batch_tokens` (tokens per step, "4M") divided by
// the sequence length, which must divide it.
int64_t read_global_batch(TableReader& reader, const toml::table& table, int64_t seq_len) {
  const std::optional<int64_t> tokens = reader.integer("global_batch_tokens", {1, int64_t{1} << 50});
  const std::optional<int64_t> sequences = reader.integer("global_batch", limits::kGlobalBatch);
  if (tokens && sequences)
    reader.fail(table.get("global_batch_tokens"), "global_batch_tokens", "give the batch once: global_batch (sequences) or global_batch_tokens");
  if (sequences) return *sequences;
  if (!tokens) reader.fail(nullptr, "global_batch", "is required (sequences per step; or global_batch_tokens, tokens per step)");
  if (seq_len <= 0 || *tokens % seq_len != 0)
    reader.fail(table.get("global_batch_tokens"), "global_batch_tokens",
                std::to_string(*tokens) + " tokens is not a whole number of sequences of model.seq_len = " + std::to_string(seq_len));
  const int64_t batch = *tokens / seq_len;
  if (batch < limits::kGlobalBatch.min || batch > limits::kGlobalBatch.max)
    reader.fail(table.get("global_batch_tokens"), "global_batch_tokens",
                std::to_string(batch) + " sequences of " + std::to_string(seq_len) + " tokens: more than global_batch allows");
  return batch;
}

void read_training(Recipe& recipe, const toml::table* table, bool search) {
  if (!table) throw InputError(recipe.file + ": [training]: the recipe has no [training] table");
  TableReader reader(table, "training", recipe.file);
  pp_training& training = recipe.training;
  training.struct_size = sizeof(pp_training);
  training.global_batch = read_global_batch(reader, *table, recipe.model.shape.seq_len);
  if (search) {
    read_training_choices(recipe, reader, *table);
  } else {
    training.micro_batch = reader.integer("micro_batch", limits::kGlobalBatch).value_or(1);
    training.recompute = recompute_of(reader.choice("recompute", {"none", "selective", "full"}).value_or("none"));
  }
  training.precision = *precision_named(reader.choice("precision", precision_names()).value_or("bf16"));
  std::string optimizer = reader.choice("optimizer", {"adam", "sgd"}).value_or("adam");
  training.optimizer = optimizer == "sgd" ? PP_OPTIMIZER_SGD : PP_OPTIMIZER_ADAM;
  training.recompute_modules = read_recompute_modules(reader, *table, training, recipe.search, recipe.model.layers);
  training.recompute_num_layers = read_recompute_num_layers(reader, *table, training, recipe.search);
  training.cpu_offloading_num_layers = read_cpu_offloading_num_layers(reader, *table, recipe);
  training.cuda_graph_modules = read_cuda_graph_modules(reader, *table, recipe.model.shape);
  recipe.flash_attention = reader.boolean("flash_attention").value_or(true);
  if (std::optional<std::string> kernel = reader.choice("attention_kernel", paraplan::attention_kernel_names())) {
    if (!recipe.flash_attention)
      reader.fail(table->get("attention_kernel"), "attention_kernel",
                  "names a fused kernel, but flash_attention = false runs attention unfused");
    training.attention_kernel = paraplan::attention_kernel_named(*kernel);
  }
  training.elementwise_kernels = paraplan::elementwise_kernels_named(
      reader.choice("elementwise_kernels", paraplan::elementwise_kernel_names()).value_or("fused"));
  read_fused_kernels(reader, *table, recipe);
  recipe.fp32_main_grads = reader.choice("main_grads", {"fp32", "bf16"}).value_or("fp32") == "fp32";
  training.master_weights = reader.choice("master_weights", {"separate", "in_place"}).value_or("separate") == "in_place"
                                ? PP_MASTER_WEIGHTS_IN_PLACE
                                : PP_MASTER_WEIGHTS_SEPARATE;
  reader.reject_unknown_keys();
  if (training.global_batch % training.micro_batch != 0)
    reader.fail(table->get("global_batch") ? table->get("global_batch") : table->get("global_batch_tokens"), "global_batch",
                std::to_string(training.global_batch) + " is not a multiple of micro_batch = " +
                    std::to_string(training.micro_batch));
}

// `hardware_from_command_line`: --set cluster.hardware=... gave the hardware.
void read_cluster(Recipe& recipe, const toml::table* table, const std::filesystem::path& recipe_path,
                  bool hardware_from_command_line) {
  if (!table) throw InputError(recipe.file + ": [cluster]: the recipe has no [cluster] table");
  TableReader reader(table, "cluster", recipe.file);
  ClusterSpec& cluster = recipe.cluster;
  auto hardware = reader.string("hardware");
  if (!hardware || hardware->empty()) reader.fail(nullptr, "hardware", "is required (a hardware plugin name or a .toml profile)");
  cluster.hardware = *hardware;
  // A profile file is named by path; relative paths are relative to the recipe, not the shell.
  // One given on the command line (--set cluster.hardware=...) is the shell's, as any path there.
  if (cluster.hardware.find('/') != std::string::npos || cluster.hardware.ends_with(".toml")) {
    std::filesystem::path profile = cluster.hardware;
    if (profile.is_relative())
      profile = (hardware_from_command_line ? std::filesystem::current_path()
                                            : std::filesystem::absolute(recipe_path).parent_path()) /
                profile;
    std::error_code error;
    if (!std::filesystem::is_regular_file(profile, error))
      reader.fail(table->get("hardware"), "hardware", "profile file " + profile.string() + " does not exist");
    cluster.hardware_file = profile.lexically_normal().string();
  }
  cluster.num_gpus = reader.required_integer("num_gpus", limits::kGpus);
  cluster.gpus_per_node = reader.integer("gpus_per_node", limits::kGpusPerNode);
  auto mesh_order = reader.string_list("mesh_order");
  recipe.search.mesh_order_given = mesh_order.has_value();
  cluster.mesh_order = mesh_order.value_or(default_mesh_order());
  reader.reject_unknown_keys();
}

void read_strategies(Recipe& recipe, const toml::table& document, bool search) {
  const toml::node* node = document.get("strategy");
  if (!node) return;
  const toml::array* array = node->as_array();
  if (!array || !array->is_array_of_tables())
    throw InputError(location_of(recipe.file, node) + ": strategy: expected an array of tables ([[strategy]])");
  if (array->size() > static_cast<size_t>(limits::kMaxStrategies))
    throw InputError(location_of(recipe.file, array->get(static_cast<size_t>(limits::kMaxStrategies))) + ": strategy[" +
                     std::to_string(limits::kMaxStrategies) + "]: at most " + std::to_string(limits::kMaxStrategies) +
                     " [[strategy]] tables");
  for (size_t i = 0; i < array->size(); ++i) {
    const toml::table* table = array->get(i)->as_table();
    StrategyEntry entry;
    entry.key_path = "strategy[" + std::to_string(i) + "]";
    entry.table = table;
    TableReader reader(table, entry.key_path, recipe.file);
    auto name = reader.string("name");
    if (!name || name->empty()) reader.fail(nullptr, "name", "is required (the strategy plugin's name)");
    entry.name = *name;
    if (search) {
      auto degrees = reader.integer_choices("degree", limits::kDegree);
      entry.degree_written = degrees.has_value();
      entry.degree_choices = degrees.value_or(std::vector<int64_t>{});
      if (entry.degree_choices.size() == 1) entry.degree = entry.degree_choices.front();
    } else {
      entry.degree = reader.integer("degree", limits::kDegree);
    }
    for (const StrategyEntry& earlier : recipe.strategies)
      if (earlier.name == entry.name)
        reader.fail(table->get("name"), "name", "strategy '" + entry.name + "' appears twice (also " + earlier.key_path + ")");
    recipe.strategies.push_back(std::move(entry));
  }
}

// [search]: what `paraplan search` may vary beyond what the other tables say. try_unlisted names
// the strategies the recipe does not list that the search may still try (absent: every one with
// search cases; []: none); the names are checked against the plugins when the space is built.
void read_search(Recipe& recipe, const toml::table* table, bool search) {
  if (!table) return;
  if (!search)
    throw InputError(location_of(recipe.file, table) +
                     ": [search]: only `paraplan search` (and validate) read this table; evaluate one plan without it");
  TableReader reader(table, "search", recipe.file);
  recipe.search.unlisted_tried = reader.string_list("try_unlisted");
  reader.reject_unknown_keys();
}

std::unique_ptr<Recipe> build_recipe(toml::table document, const std::string& file_name,
                                     const RecipeReaderOptions& options) {
  for (const std::string& assignment : options.overrides) apply_override(document, assignment);
  auto recipe = std::make_unique<Recipe>();
  recipe->file = file_name;
  recipe->document = std::make_shared<toml::table>(std::move(document));
  const toml::table& root = *recipe->document;
  TableReader top(&root, "", recipe->file);
  top.string("description");
  top.allow({"model", "training", "cluster", "strategy", "search", "executor", "export"});
  top.reject_unknown_keys();
  std::filesystem::path recipe_path(file_name);
  read_model(*recipe, subtable(root, "model", file_name), options, recipe_path);
  read_training(*recipe, subtable(root, "training", file_name), options.search);
  const bool hardware_from_command_line =
      std::any_of(options.overrides.begin(), options.overrides.end(),
                  [](const std::string& assignment) { return assignment.starts_with("cluster.hardware="); });
  read_cluster(*recipe, subtable(root, "cluster", file_name), recipe_path, hardware_from_command_line);
  read_strategies(*recipe, root, options.search);
  read_search(*recipe, subtable(root, "search", file_name), options.search);
  recipe->executor_table = subtable(root, "executor", file_name);
  recipe->export_table = subtable(root, "export", file_name);
  return recipe;
}

}  // namespace

std::unique_ptr<Recipe> read_recipe(const std::filesystem::path& file_or_name, const RecipeReaderOptions& options) {
  const std::filesystem::path file = resolve_shipped_file(file_or_name.string(), ShippedKind::kRecipe);
  return build_recipe(read_toml_file(file, "recipe"), file.string(), options);
}

std::unique_ptr<Recipe> parse_recipe(std::string_view text, const std::string& file_name,
                                     const RecipeReaderOptions& options) {
  return build_recipe(parse_toml(text, file_name), file_name, options);
}

}  // namespace paraplan::host
