// paraplan/host/recipe/source_location.h: "file:line:column: key.path: problem" messages.
#pragma once

#include <toml++/toml.h>

#include <string>

namespace paraplan::host {

// "file:line:column" of a parsed region: the file it was parsed from (falling back to `file`,
// e.g. for a preset merged into a recipe the preset's own file is named).
inline std::string location_of(const std::string& file, const toml::source_region& source) {
  std::string where = source.path && !source.path->empty() ? *source.path : file;
  if (source.begin.line == 0) return where;
  return where + ":" + std::to_string(source.begin.line) + ":" + std::to_string(source.begin.column);
}

// Prefix for an error about `node` (the file alone when there is none).
inline std::string location_of(const std::string& file, const toml::node* node) {
  return node ? location_of(file, node->source()) : file;
}

// The same for a table key, which carries its own position (the start of the key, not its value).
inline std::string location_of(const std::string& file, const toml::key& key) { return location_of(file, key.source()); }

inline std::string toml_type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::array: return "an array";
    case toml::node_type::table: return "a table";
    default: return "a date/time";
  }
}

}  // namespace paraplan::host
