#include "host/search/search_space.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "host/core/errors.h"
#include "host/recipe/param_values.h"
#include "host/recipe/source_location.h"
#include "host/core/text_sanitizer.h"
#include "host/plugin/abi_history.h"

namespace paraplan::host {
namespace {

constexpr const char* kDataParallelSlot = "data parallelism";

// One parameter's values to try: recipe nodes, or nodes made from a plugin's search case.
struct Choice {
  std::string param;
  std::vector<const toml::node*> values;
  std::vector<std::shared_ptr<const toml::node>> owned;
};

const pp_param_spec* find_spec(const pp_plugin_v1& plugin, const std::string& name) {
  for (uint32_t i = 0; i < plugin.param_count; ++i)
    if (name == plugin.params[i].name) return &plugin.params[i];
  return nullptr;
}

// A plugin's search-case value, written as text, as the TOML node a recipe would hold.
std::shared_ptr<toml::node> value_from_text(const LoadedPlugin& plugin, const pp_param_spec& spec, const std::string& text) {
  auto bad = [&](const char* expected) {
    return InputError(plugin.file.string() + ": plugin '" + plugin.name() + "' declares search value '" + text +
                      "' for '" + spec.name + "', which is not " + expected);
  };
  try {
    size_t used = 0;
    switch (spec.type) {
      case PP_PARAM_INT: {
        int64_t value = std::stoll(text, &used);
        if (used != text.size()) throw bad("an integer");
        return std::make_shared<toml::value<int64_t>>(value);
      }
      case PP_PARAM_FLOAT: {
        double value = std::stod(text, &used);
        if (used != text.size()) throw bad("a number");
        return std::make_shared<toml::value<double>>(value);
      }
      case PP_PARAM_BOOL:
        if (text != "true" && text != "false") throw bad("true or false");
        return std::make_shared<toml::value<bool>>(text == "true");
      case PP_PARAM_STRING:
      case PP_PARAM_ENUM: return std::make_shared<toml::value<std::string>>(text);
    }
  } catch (const std::logic_error&) {  // std::stoll / std::stod found no number
    throw bad(spec.type == PP_PARAM_INT ? "an integer" : "a number");
  }
  throw bad("of a known type");
}

// The plugin's search cases as choices, each with its degree range.
struct Case {
  int64_t min_degree = 1, max_degree = 0;
  std::vector<Choice> choices;
};

std::vector<Case> plugin_cases(const LoadedPlugin& plugin) {
  const pp_strategy_v1& table = *plugin.metadata->strategy;
  std::vector<Case> cases;
  if (!holds_fields_of(plugin.abi_minor(), table.struct_size, 1, &AbiMinorSizes::strategy) || !table.search_cases)
    return cases;
  if (table.search_case_count > kMaxParams)
    throw InputError(plugin.file.string() + ": plugin '" + plugin.name() + "' declares " +
                     std::to_string(table.search_case_count) + " search cases; at most " + std::to_string(kMaxParams) +
                     " are accepted");
  for (uint32_t i = 0; i < table.search_case_count; ++i) {
    const pp_search_case& source = table.search_cases[i];
    if (source.struct_size != sizeof(pp_search_case) || (source.choice_count > 0 && !source.choices) ||
        source.choice_count > kMaxParams)
      throw InputError(plugin.file.string() + ": plugin '" + plugin.name() + "' declares a malformed search case " +
                       std::to_string(i + 1));
    Case region;
    region.min_degree = std::max<int64_t>(1, source.min_degree);
    region.max_degree = std::max<int64_t>(0, source.max_degree);
    for (uint32_t j = 0; j < source.choice_count && source.choices; ++j) {
      const pp_search_choice& choice = source.choices[j];
      if (choice.struct_size != sizeof(pp_search_choice) || (choice.value_count > 0 && !choice.values) ||
          choice.value_count > kMaxParams)
        throw InputError(plugin.file.string() + ": plugin '" + plugin.name() + "' declares a malformed search choice in case " +
                         std::to_string(i + 1));
      const pp_param_spec* spec = choice.param ? find_spec(*plugin.metadata, choice.param) : nullptr;
      if (!spec)
        throw InputError(plugin.file.string() + ": plugin '" + plugin.name() + "' declares a search case for '" +
                         (choice.param ? choice.param : "(null)") + "', which is not one of its parameters");
      Choice values{spec->name, {}, {}};
      for (uint32_t k = 0; k < choice.value_count && choice.values; ++k) {
        values.owned.push_back(
            value_from_text(plugin, *spec, bounded_string(choice.values[k], kMaxDescriptionLength).c_str()));
        values.values.push_back(values.owned.back().get());
      }
      if (!values.values.empty()) region.choices.push_back(std::move(values));
    }
    cases.push_back(std::move(region));
  }
  return cases;
}

bool has_search_cases(const LoadedPlugin& plugin) { return !plugin_cases(plugin).empty(); }

// The recipe's keys for a listed strategy: arrays are sets, scalars one-element sets.
std::vector<Choice> recipe_choices(const StrategyEntry& entry) {
  std::vector<Choice> choices;
  for (const auto& [key, node] : *entry.table) {
    std::string name(key.str());
    if (name == "name" || name == "degree") continue;
    Choice choice{name, {}, {}};
    if (const toml::array* array = node.as_array()) {
      for (const toml::node& item : *array) choice.values.push_back(&item);
    } else {
      choice.values.push_back(&node);
    }
    choices.push_back(std::move(choice));
  }
  return choices;
}

// A case narrowed by the recipe: for a key both give, the values they share (none: the case
// cannot hold); keys only the recipe gives are added as they are.
std::optional<Case> narrow(Case region, const std::vector<Choice>& pinned) {
  for (const Choice& pin : pinned) {
    auto found = std::find_if(region.choices.begin(), region.choices.end(),
                              [&](const Choice& choice) { return choice.param == pin.param; });
    if (found == region.choices.end()) {
      region.choices.push_back(pin);
      continue;
    }
    std::vector<const toml::node*> shared;
    for (const toml::node* value : pin.values)
      for (const toml::node* offered : found->values)
        if (scalar_text(*value) == scalar_text(*offered)) {
          shared.push_back(value);
          break;
        }
    if (shared.empty()) return std::nullopt;
    found->values = std::move(shared);
  }
  return region;
}

// Every combination of a case's choices as an option.
void expand(const LoadedPlugin& plugin, const Case& region, const std::string& key_path,
            const std::vector<int64_t>& degrees, std::vector<StrategyOption>& options) {
  std::vector<size_t> pick(region.choices.size(), 0);
  std::vector<std::shared_ptr<const toml::node>> owned;
  for (const Choice& choice : region.choices) owned.insert(owned.end(), choice.owned.begin(), choice.owned.end());
  while (true) {
    StrategyOption option{&plugin, {}, owned, key_path, degrees, region.min_degree, region.max_degree, ""};
    for (size_t i = 0; i < region.choices.size(); ++i) {
      const toml::node& value = *region.choices[i].values[pick[i]];
      option.values.emplace_back(region.choices[i].param, &value);
      option.label += (option.label.empty() ? "" : " ") + region.choices[i].param + "=" + scalar_text(value);
    }
    bool duplicate = std::any_of(options.begin(), options.end(), [&](const StrategyOption& other) {
      return other.plugin == &plugin && other.label == option.label && other.min_degree == option.min_degree &&
             other.max_degree == option.max_degree && other.degrees == option.degrees;
    });
    if (!duplicate) options.push_back(std::move(option));
    size_t i = 0;
    while (i < pick.size() && ++pick[i] == region.choices[i].values.size()) pick[i++] = 0;
    if (i == pick.size()) break;
  }
}

// The options of one strategy: a listed one (entry) or a searched one (entry null).
std::vector<StrategyOption> strategy_options(const LoadedPlugin& plugin, const StrategyEntry* entry,
                                             const std::string& file) {
  std::vector<Case> cases = plugin_cases(plugin);
  std::vector<StrategyOption> options;
  if (!entry) {
    for (size_t i = 0; i < cases.size(); ++i)
      expand(plugin, cases[i], "search case " + std::to_string(i + 1) + " of '" + plugin.name() + "'", {}, options);
    return options;
  }
  ParamValues::check_keys(*plugin.metadata, entry->table, entry->key_path, file, {"name", "degree"});
  const std::vector<Choice> pinned = recipe_choices(*entry);
  std::vector<Case> narrowed;
  for (const Case& region : cases)
    if (auto kept = narrow(region, pinned)) narrowed.push_back(*kept);
  // Written values no case admits are still tried, as written, in a case of their own
  // (schedule = ["1f1b", "gpipe"] tries gpipe though the plugin's cases leave it out).
  std::vector<Choice> leftover = pinned;
  bool any_left = narrowed.empty();
  for (Choice& pin : leftover) {
    std::vector<const toml::node*> unused;
    for (const toml::node* value : pin.values) {
      bool used = std::any_of(narrowed.begin(), narrowed.end(), [&](const Case& region) {
        return std::any_of(region.choices.begin(), region.choices.end(), [&](const Choice& choice) {
          return choice.param == pin.param &&
                 std::any_of(choice.values.begin(), choice.values.end(),
                             [&](const toml::node* kept) { return scalar_text(*kept) == scalar_text(*value); });
        });
      });
      if (!used) unused.push_back(value);
    }
    if (!unused.empty()) {
      pin.values = unused;
      any_left = true;
    }
  }
  if (any_left) {
    // At the degrees some case allows; without cases and without a written degree, at degree 1,
    // as `paraplan evaluate` reads the same table.
    Case only;
    only.choices = leftover;
    if (!cases.empty()) {
      only.min_degree = cases.front().min_degree;
      for (const Case& region : cases) only.min_degree = std::min(only.min_degree, region.min_degree);
    } else if (!entry->degree_written && !(plugin.metadata->strategy->flags & PP_STRATEGY_TAKES_REMAINDER)) {
      only.max_degree = 1;
    }
    narrowed.push_back(only);
  }
  for (const Case& region : narrowed) expand(plugin, region, entry->key_path, entry->degree_choices, options);
  return options;
}

// Binds every option once here, so a bad recipe value or plugin search value fails before the
// search starts, with the recipe's file and line.
void check_options(const Recipe& recipe, const StrategySlot& slot) {
  for (const StrategyOption& option : slot.options)
    if (!option.absent())
      ParamValues::bind(*option.plugin->metadata, option.values, option.key_path, recipe.file);
}

bool unlisted_is_tried(const SearchChoices& search, const std::string& strategy) {
  if (!search.unlisted_tried) return true;
  return std::find(search.unlisted_tried->begin(), search.unlisted_tried->end(), strategy) != search.unlisted_tried->end();
}

std::vector<int64_t> default_micro_batches(int64_t global_batch) {
  std::vector<int64_t> sizes;
  for (int64_t size = 1; size <= kLargestSearchedMicroBatch; size *= 2)
    if (global_batch % size == 0) sizes.push_back(size);
  return sizes;
}

}  // namespace

bool StrategyOption::accepts(int64_t degree) const {
  if (!degrees.empty()) return std::find(degrees.begin(), degrees.end(), degree) != degrees.end();
  return degree >= min_degree && (max_degree == 0 || degree <= max_degree);
}

std::string scalar_text(const toml::node& node) {
  if (auto text = node.value_exact<std::string>()) return *text;
  if (auto flag = node.value_exact<bool>()) return *flag ? "true" : "false";
  if (auto integer = node.value_exact<int64_t>()) return std::to_string(*integer);
  if (auto number = node.value_exact<double>()) {
    std::ostringstream text;
    text << *number;
    return text.str();
  }
  return toml_type_name(node);  // tables and arrays: never a parameter value
}

namespace {

// The strategy plugin `name`, or an input error at the recipe key that names it.
void require_strategy(const PluginCatalog& catalog, const std::string& name, const std::string& key_location) {
  try {
    catalog.require(name, PP_KIND_STRATEGY);
  } catch (const InputError& failure) {
    throw InputError(key_location + ": " + failure.what());
  }
}

}  // namespace

SearchSpace build_search_space(const Recipe& recipe, const PluginCatalog& catalog) {
  SearchSpace space;
  std::map<std::string, const StrategyEntry*> listed;
  for (const StrategyEntry& entry : recipe.strategies) {
    require_strategy(catalog, entry.name,
                     location_of(recipe.file, entry.table->get("name")) + ": " + entry.key_path + ".name");
    listed[entry.name] = &entry;
  }
  if (recipe.search.unlisted_tried) {
    const toml::node* names = recipe.document ? recipe.document->at_path("search.try_unlisted").node() : nullptr;
    for (const std::string& name : *recipe.search.unlisted_tried)
      require_strategy(catalog, name, location_of(recipe.file, names) + ": search.try_unlisted");
  }

  StrategySlot data_parallel{kDataParallelSlot, 0, 0, {}};
  bool recipe_names_data_parallel = false;
  for (const LoadedPlugin* plugin : catalog.of_kind(PP_KIND_STRATEGY)) {
    const pp_strategy_v1& table = *plugin->metadata->strategy;
    if (table.flags & PP_STRATEGY_TAKES_REMAINDER)
      recipe_names_data_parallel = recipe_names_data_parallel || listed.count(plugin->name());
  }
  for (const LoadedPlugin* plugin : catalog.of_kind(PP_KIND_STRATEGY)) {
    const pp_strategy_v1& table = *plugin->metadata->strategy;
    auto entry = listed.find(plugin->name());
    const StrategyEntry* listing = entry == listed.end() ? nullptr : entry->second;
    if (table.flags & PP_STRATEGY_TAKES_REMAINDER) {
      if (recipe_names_data_parallel && !listing) continue;
      if (!recipe_names_data_parallel && !has_search_cases(*plugin)) continue;
      std::vector<StrategyOption> options = strategy_options(*plugin, listing, recipe.file);
      data_parallel.apply_order = table.apply_order;
      data_parallel.flags = table.flags;
      data_parallel.options.insert(data_parallel.options.end(), options.begin(), options.end());
      continue;
    }
    if (!listing && (!unlisted_is_tried(recipe.search, plugin->name()) || !has_search_cases(*plugin))) continue;
    StrategySlot slot{plugin->name(), table.apply_order, table.flags, {}};
    if (!listing) slot.options.push_back(StrategyOption{});  // leaving it out is a choice
    std::vector<StrategyOption> options = strategy_options(*plugin, listing, recipe.file);
    slot.options.insert(slot.options.end(), options.begin(), options.end());
    space.slots.push_back(std::move(slot));
  }
  if (data_parallel.options.empty()) {
    // No searched data-parallel strategy: the default one with its defaults, as evaluate adds it.
    for (const LoadedPlugin* plugin : catalog.of_kind(PP_KIND_STRATEGY))
      if (plugin->metadata->strategy->flags & PP_STRATEGY_DEFAULT_DATA_PARALLEL) {
        data_parallel.apply_order = plugin->metadata->strategy->apply_order;
        data_parallel.flags = plugin->metadata->strategy->flags;
        data_parallel.options.push_back(StrategyOption{plugin, {}, {}, "default data parallelism", {}, 1, 0, ""});
        break;
      }
  }
  if (!data_parallel.options.empty()) space.slots.push_back(std::move(data_parallel));
  std::stable_sort(space.slots.begin(), space.slots.end(),
                   [](const StrategySlot& a, const StrategySlot& b) { return a.apply_order < b.apply_order; });
  for (const StrategySlot& slot : space.slots) check_options(recipe, slot);

  space.micro_batches = recipe.search.micro_batches.empty() ? default_micro_batches(recipe.training.global_batch)
                                                            : recipe.search.micro_batches;
  space.recomputes = recipe.search.recomputes;
  if (space.recomputes.empty()) space.recomputes = {PP_RECOMPUTE_NONE, PP_RECOMPUTE_SELECTIVE, PP_RECOMPUTE_FULL};
  // Recompute pinned to "full" means every layer, as Megatron-LM's uniform method recomputes them.
  space.partial_recompute = recipe.training.recompute_num_layers == 0 && recipe.search.recomputes.size() != 1 &&
                            std::find(space.recomputes.begin(), space.recomputes.end(), PP_RECOMPUTE_FULL) !=
                                space.recomputes.end();
  space.search_mesh_order = !recipe.search.mesh_order_given;
  return space;
}

}  // namespace paraplan::host
