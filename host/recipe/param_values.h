// paraplan/host/recipe/param_values.h: a recipe table checked against a plugin's schema.
//
// The host, not the plugin, validates parameters: unknown keys (with the closest valid key
// suggested), types, ranges and enum values, each reported as
//   recipe.toml:14:11: strategy[2].stage: 4 is out of range [0, 3]
// Missing keys get the schema's defaults, so the plugin always receives every declared key.
#pragma once

#include <toml++/toml.h>

#include <deque>
#include <string>
#include <vector>

#include "paraplan/plugin.h"

namespace paraplan::host {

class ParamValues {
 public:
  // `table` may be null (all defaults). Keys in `host_keys` belong to the host and are skipped.
  static ParamValues bind(const pp_plugin_v1& plugin, const toml::table* table, const std::string& key_path,
                          const std::string& file, const std::vector<std::string>& host_keys = {});

  // The same for values given key by key (nodes keep their position in the recipe when they
  // come from it): the search binds one value of a recipe array at a time this way.
  static ParamValues bind(const pp_plugin_v1& plugin, const std::vector<std::pair<std::string, const toml::node*>>& nodes,
                          const std::string& key_path, const std::string& file);
  // Only the unknown-key check of bind().
  static void check_keys(const pp_plugin_v1& plugin, const toml::table* table, const std::string& key_path,
                         const std::string& file, const std::vector<std::string>& host_keys = {});

  ParamValues() = default;
  ParamValues(ParamValues&&) = default;
  ParamValues& operator=(ParamValues&&) = default;
  ParamValues(const ParamValues&) = delete;
  ParamValues& operator=(const ParamValues&) = delete;

  // Valid while this object lives.
  const pp_param_set* set() const { return &set_; }
  const std::vector<pp_param_value>& values() const { return values_; }
  // "stage=3 overlap=true" for reports.
  std::string summary() const;
  // Each value as the recipe would write it: {"stage", "3"}, {"overlap", "true"}.
  std::vector<std::pair<std::string, std::string>> texts() const;

 private:
  std::deque<std::string> strings_;  // a deque never moves its elements: c_str() stays valid
  std::vector<pp_param_value> values_;
  pp_param_set set_{sizeof(pp_param_set), nullptr, 0};
};

// "int", "float in [1, 8]", "one of fast|slow" ... for help and error messages.
std::string describe_param_type(const pp_param_spec& spec);
std::string describe_param_default(const pp_param_spec& spec);

}  // namespace paraplan::host
