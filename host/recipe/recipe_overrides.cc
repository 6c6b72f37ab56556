#include "host/recipe/recipe_overrides.h"

#include <sstream>
#include <vector>

#include "host/core/errors.h"
#include "host/recipe/input_file.h"

namespace paraplan::host {
namespace {

constexpr size_t kMaxOverrideLength = 4096;
constexpr size_t kMaxOverrideDepth = 8;

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  std::stringstream stream(path);
  std::string part;
  while (std::getline(stream, part, '.')) parts.push_back(part);
  return parts;
}

// The value as TOML (numbers, booleans, quoted strings, arrays); a bare word is a string. The
// source is named after the override so that later errors point at it.
toml::node_view<toml::node> parse_value(toml::table& holder, const std::string& value, const std::string& source) {
  check_toml_depth("value = " + value, source);
  try {
    holder = toml::parse("value = " + value, source);
  } catch (const toml::parse_error&) {
    holder = toml::parse("value = \"\"", source);
    holder.insert_or_assign("value", value);
  }
  return holder["value"];
}

toml::table& strategy_table(toml::table& document, const std::string& name, const std::string& assignment) {
  toml::array* strategies = document["strategy"].as_array();
  if (!strategies) {
    document.insert_or_assign("strategy", toml::array{});
    strategies = document["strategy"].as_array();
  }
  for (toml::node& node : *strategies) {
    toml::table* table = node.as_table();
    if (!table) throw InputError(assignment + ": the recipe's strategy entry is not a table");
    if (auto existing = (*table)["name"].value<std::string>(); existing && *existing == name) return *table;
  }
  strategies->push_back(toml::table{{"name", name}});
  return *strategies->back().as_table();
}

}  // namespace

void apply_override(toml::table& document, const std::string& assignment) {
  const std::string source = "--set " + assignment;
  size_t equals = assignment.find('=');
  if (equals == std::string::npos || equals == 0)
    throw UsageError("--set " + assignment + ": expected KEY=VALUE, e.g. --set cluster.num_gpus=64");
  if (assignment.size() > kMaxOverrideLength)
    throw UsageError("--set: an assignment of " + std::to_string(assignment.size()) + " characters; at most " +
                     std::to_string(kMaxOverrideLength));
  std::vector<std::string> path = split_path(assignment.substr(0, equals));
  for (const std::string& part : path)
    if (part.empty()) throw UsageError(source + ": empty segment in the key");
  if (path.size() > kMaxOverrideDepth)
    throw UsageError(source + ": a key of " + std::to_string(path.size()) + " segments; recipe keys have at most " +
                     std::to_string(kMaxOverrideDepth));

  toml::table* table = &document;
  size_t first_key = 0;
  if (path[0] == "strategy") {
    if (path.size() < 3) throw UsageError(source + ": use strategy.NAME.KEY=VALUE, e.g. strategy.tp.degree=8");
    table = &strategy_table(document, path[1], source);
    first_key = 2;
  }
  for (size_t i = first_key; i + 1 < path.size(); ++i) {
    toml::node* child = table->get(path[i]);
    if (!child) {
      table->insert_or_assign(path[i], toml::table{});
      child = table->get(path[i]);
    }
    if (!child->is_table()) throw UsageError(source + ": '" + path[i] + "' is not a table in the recipe");
    table = child->as_table();
  }
  toml::table holder;
  toml::node_view<toml::node> value = parse_value(holder, assignment.substr(equals + 1), source);
  table->insert_or_assign(path.back(), *value.node());
}

std::string mention_overrides(const std::string& message, const std::vector<std::string>& overrides) {
  std::string annotated = message;
  for (const std::string& assignment : overrides) {
    std::string key = assignment.substr(0, assignment.find('='));
    std::string last = key.substr(key.rfind('.') + 1);
    if (message.find("." + last + ":") != std::string::npos) annotated += " (from --set " + assignment + ")";
  }
  return annotated;
}

std::string override_string(const std::string& text) {
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += c;
  }
  return quoted + "\"";
}

}  // namespace paraplan::host
