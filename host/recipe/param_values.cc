#include "host/recipe/param_values.h"

#include <cmath>
#include <sstream>

#include "host/core/edit_distance.h"
#include "host/core/errors.h"
#include "host/recipe/source_location.h"

namespace paraplan::host {
namespace {

std::string number_text(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

std::string range_text(const pp_param_spec& spec) {
  if (spec.has_min && spec.has_max) return "[" + number_text(spec.min) + ", " + number_text(spec.max) + "]";
  if (spec.has_min) return ">= " + number_text(spec.min);
  if (spec.has_max) return "<= " + number_text(spec.max);
  return "";
}

std::string enum_text(const pp_param_spec& spec) {
  std::string text;
  for (uint32_t i = 0; i < spec.enum_count; ++i) text += (i ? "|" : "") + std::string(spec.enum_values[i]);
  return text;
}

// "in [0, 3]" reads well for a closed range, ">= 1" needs no "in".
std::string range_prefix(const pp_param_spec& spec) { return spec.has_min && spec.has_max ? "in " : ""; }

bool in_range(const pp_param_spec& spec, double value) {
  return !(spec.has_min && value < spec.min) && !(spec.has_max && value > spec.max);
}

}  // namespace

std::string describe_param_type(const pp_param_spec& spec) {
  std::string range = range_text(spec);
  switch (spec.type) {
    case PP_PARAM_INT: return range.empty() ? "int" : "int " + range_prefix(spec) + range;
    case PP_PARAM_FLOAT: return range.empty() ? "float" : "float " + range_prefix(spec) + range;
    case PP_PARAM_BOOL: return "bool";
    case PP_PARAM_STRING: return "string";
    case PP_PARAM_ENUM: return "one of " + enum_text(spec);
  }
  return "unknown";
}

std::string describe_param_default(const pp_param_spec& spec) {
  switch (spec.type) {
    case PP_PARAM_INT: return std::to_string(spec.default_int);
    case PP_PARAM_FLOAT: return number_text(spec.default_float);
    case PP_PARAM_BOOL: return spec.default_bool ? "true" : "false";
    case PP_PARAM_STRING:
    case PP_PARAM_ENUM: return "\"" + std::string(spec.default_string ? spec.default_string : "") + "\"";
  }
  return "";
}

void ParamValues::check_keys(const pp_plugin_v1& plugin, const toml::table* table, const std::string& key_path,
                             const std::string& file, const std::vector<std::string>& host_keys) {
  if (!table) return;
  std::vector<std::string> valid_keys = host_keys;
  for (uint32_t i = 0; i < plugin.param_count; ++i) valid_keys.emplace_back(plugin.params[i].name);
  for (const auto& [key, node] : *table) {
    std::string name(key.str());
    bool known = false;
    for (const std::string& valid : valid_keys) known = known || valid == name;
    if (!known)
      throw InputError(location_of(file, key) + ": " + key_path + "." + name + ": unknown key for plugin '" +
                       plugin.name + "'" + did_you_mean(name, valid_keys));
  }
}

ParamValues ParamValues::bind(const pp_plugin_v1& plugin, const toml::table* table, const std::string& key_path,
                              const std::string& file, const std::vector<std::string>& host_keys) {
  check_keys(plugin, table, key_path, file, host_keys);
  std::vector<std::pair<std::string, const toml::node*>> nodes;
  for (uint32_t i = 0; table && i < plugin.param_count; ++i)
    if (const toml::node* node = table->get(plugin.params[i].name)) nodes.emplace_back(plugin.params[i].name, node);
  return bind(plugin, nodes, key_path, file);
}

ParamValues ParamValues::bind(const pp_plugin_v1& plugin, const std::vector<std::pair<std::string, const toml::node*>>& nodes,
                              const std::string& key_path, const std::string& file) {
  for (const auto& [name, node] : nodes) {
    bool known = false;
    for (uint32_t i = 0; i < plugin.param_count; ++i) known = known || name == plugin.params[i].name;
    if (!known)
      throw InputError(location_of(file, node) + ": " + key_path + "." + name + ": unknown key for plugin '" +
                       plugin.name + "'");
  }
  ParamValues bound;
  for (uint32_t i = 0; i < plugin.param_count; ++i) {
    const pp_param_spec& spec = plugin.params[i];
    pp_param_value value{};
    value.struct_size = sizeof(value);
    value.name = bound.strings_.emplace_back(spec.name).c_str();
    value.type = spec.type;
    value.int_value = spec.default_int;
    value.float_value = spec.default_float;
    value.bool_value = spec.default_bool;
    std::string text = spec.default_string ? spec.default_string : "";

    const toml::node* node = nullptr;
    for (const auto& [name, given] : nodes)
      if (name == spec.name) node = given;
    if (node) {
      std::string where = location_of(file, node) + ": " + key_path + "." + spec.name + ": ";
      auto wrong_type = [&](const char* expected) {
        return InputError(where + "expected " + expected + ", got " + toml_type_name(*node));
      };
      switch (spec.type) {
        case PP_PARAM_INT: {
          auto integer = node->value_exact<int64_t>();
          if (!integer) throw wrong_type("an integer");
          if (!in_range(spec, static_cast<double>(*integer)))
            throw InputError(where + std::to_string(*integer) + " is out of range " + range_text(spec));
          value.int_value = *integer;
          break;
        }
        case PP_PARAM_FLOAT: {
          auto number = node->value<double>();  // accepts TOML integers too
          if (!number || node->is_boolean()) throw wrong_type("a number");
          if (!std::isfinite(*number) || !in_range(spec, *number))
            throw InputError(where + number_text(*number) + " is out of range " + range_text(spec));
          value.float_value = *number;
          break;
        }
        case PP_PARAM_BOOL: {
          auto flag = node->value_exact<bool>();
          if (!flag) throw wrong_type("true or false");
          value.bool_value = *flag ? 1 : 0;
          break;
        }
        case PP_PARAM_STRING: {
          auto string = node->value_exact<std::string>();
          if (!string) throw wrong_type("a string");
          text = *string;
          break;
        }
        case PP_PARAM_ENUM: {
          auto string = node->value_exact<std::string>();
          if (!string) throw wrong_type(("one of " + enum_text(spec)).c_str());
          std::vector<std::string> allowed(spec.enum_values, spec.enum_values + spec.enum_count);
          bool valid = false;
          for (const std::string& option : allowed) valid = valid || option == *string;
          if (!valid)
            throw InputError(where + "'" + *string + "' is not one of " + enum_text(spec) +
                             did_you_mean(*string, allowed));
          text = *string;
          break;
        }
      }
    }
    if (spec.type == PP_PARAM_STRING || spec.type == PP_PARAM_ENUM)
      value.string_value = bound.strings_.emplace_back(text).c_str();
    bound.values_.push_back(value);
  }
  bound.set_.values = bound.values_.empty() ? nullptr : bound.values_.data();
  bound.set_.count = static_cast<uint32_t>(bound.values_.size());
  return bound;
}

std::vector<std::pair<std::string, std::string>> ParamValues::texts() const {
  std::vector<std::pair<std::string, std::string>> texts;
  for (const pp_param_value& value : values_) {
    std::string text;
    switch (value.type) {
      case PP_PARAM_INT: text = std::to_string(value.int_value); break;
      case PP_PARAM_FLOAT: text = number_text(value.float_value); break;
      case PP_PARAM_BOOL: text = value.bool_value ? "true" : "false"; break;
      default: text = value.string_value; break;
    }
    texts.emplace_back(value.name, text);
  }
  return texts;
}

std::string ParamValues::summary() const {
  std::string text;
  for (const auto& [name, value] : texts()) text += (text.empty() ? "" : " ") + name + "=" + value;
  return text;
}

}  // namespace paraplan::host
