#include "host/report/result_tree.h"

#include <cmath>
#include <cstring>
#include <sstream>

#include "host/core/text_sanitizer.h"

namespace paraplan::host {
namespace {

constexpr size_t kMaxKeyLength = 256;
constexpr size_t kMaxTextLength = 1 << 20;

bool key_character(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

}  // namespace

void ResultTree::set(const std::string& key, ResultValue value) {
  auto found = index_.find(key);
  if (found != index_.end()) {
    entries_[found->second].second = std::move(value);
    return;
  }
  index_.emplace(key, entries_.size());
  for (size_t dot = key.find('.'); dot != std::string::npos; dot = key.find('.', dot + 1)) sections_.insert(key.substr(0, dot));
  entries_.emplace_back(key, std::move(value));
}

const ResultValue* ResultTree::find(const std::string& key) const {
  auto found = index_.find(key);
  return found == index_.end() ? nullptr : &entries_[found->second].second;
}

std::optional<double> ResultTree::number(const std::string& key) const {
  const ResultValue* value = find(key);
  if (value && std::holds_alternative<double>(*value)) return std::get<double>(*value);
  return std::nullopt;
}

std::optional<std::string> ResultTree::text(const std::string& key) const {
  const ResultValue* value = find(key);
  if (value && std::holds_alternative<std::string>(*value)) return std::get<std::string>(*value);
  return std::nullopt;
}

bool ResultTree::has_prefix(const std::string& prefix) const {
  for (const auto& entry : entries_)
    if (entry.first.starts_with(prefix)) return true;
  return false;
}

std::string ResultTree::plugin_key_problem(const char* key) const {
  if (!key) return "a key that is NULL";
  const std::string text = bounded_string(key, kMaxKeyLength + 1);
  const std::string shown = "the key '" + one_line(text, 80) + "'";
  if (text.empty()) return "an empty key";
  if (text.size() > kMaxKeyLength) return shown + ", longer than 256 characters";
  size_t segment = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == '.') {
      if (i == segment) return shown + ", which has an empty segment";
      segment = i + 1;
    } else if (!key_character(text[i])) {
      return shown + ", which is not dotted segments of letters, digits, '_' and '-'";
    }
  }
  const std::string first = text.substr(0, text.find('.'));
  if (reserved_.count(first)) return shown + " in the host's own section '" + first + "'";
  if (sections_.count(text)) return shown + ", which is already a section of the report";
  if (!index_.count(text))
    for (size_t dot = text.find('.'); dot != std::string::npos; dot = text.find('.', dot + 1))
      if (index_.count(text.substr(0, dot)))
        return shown + ", inside '" + text.substr(0, dot) + "', which is already a value";
  return "";
}

void ResultTree::set_from_plugin(const char* key, ResultValue value) {
  if (std::string problem = plugin_key_problem(key); !problem.empty()) {
    warn(reporter_ + " reported " + problem + "; it was left out");
    return;
  }
  if (auto* number = std::get_if<double>(&value); number && !std::isfinite(*number))
    warn(reporter_ + " reported " + key + " = " + (std::isnan(*number) ? "NaN" : "infinity") +
         " (shown as null)");
  if (auto* text = std::get_if<std::string>(&value)) {
    if (text->size() > kMaxTextLength) {
      warn(reporter_ + " reported a text of " + std::to_string(text->size()) + " bytes for " + key + "; it was cut to 1 MiB");
      text->resize(kMaxTextLength);
    }
    *text = valid_utf8(*text);
  }
  set(key, std::move(value));
}

nlohmann::ordered_json ResultTree::to_json() const {
  nlohmann::ordered_json root = nlohmann::ordered_json::object();
  for (const auto& [key, value] : entries_) {
    nlohmann::ordered_json* node = &root;
    std::stringstream parts(key);
    std::string part;
    std::vector<std::string> path;
    while (std::getline(parts, part, '.')) path.push_back(part);
    if (path.empty()) continue;
    for (size_t i = 0; i + 1 < path.size(); ++i) {
      nlohmann::ordered_json& child = (*node)[path[i]];
      if (!child.is_object()) child = nlohmann::ordered_json::object();  // a later key wins over a leaf
      node = &child;
    }
    std::visit(
        [&](const auto& leaf) {
          using Leaf = std::decay_t<decltype(leaf)>;
          if constexpr (std::is_same_v<Leaf, double>) {
            // JSON has no NaN/Inf; an undefined figure is null rather than an invalid document.
            (*node)[path.back()] = std::isfinite(leaf) ? nlohmann::ordered_json(leaf) : nlohmann::ordered_json();
          } else {
            (*node)[path.back()] = leaf;
          }
        },
        value);
  }
  if (!warnings_.empty()) root["warnings"] = warnings_;
  return root;
}

pp_result_sink_v1 ResultTree::sink(const std::string& reporter) {
  reporter_ = reporter;
  pp_result_sink_v1 sink{};
  sink.struct_size = sizeof(sink);
  sink.context = this;
  // No exception may unwind into the plugin: a failure here (memory) loses the key, nothing else.
  sink.number = [](void* context, const char* key, double value) {
    try {
      static_cast<ResultTree*>(context)->set_from_plugin(key, value);
    } catch (...) {
    }
  };
  sink.boolean = [](void* context, const char* key, int32_t value) {
    try {
      static_cast<ResultTree*>(context)->set_from_plugin(key, value != 0);
    } catch (...) {
    }
  };
  sink.text = [](void* context, const char* key, const char* value) {
    try {
      static_cast<ResultTree*>(context)->set_from_plugin(key, bounded_string(value, kMaxTextLength + 1));
    } catch (...) {
    }
  };
  return sink;
}

}  // namespace paraplan::host
