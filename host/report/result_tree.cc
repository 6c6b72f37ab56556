#include "host/report/result_tree.h"

#include <cmath>
#include <sstream>

namespace paraplan::host {

void ResultTree::set(const std::string& key, ResultValue value) {
  for (auto& entry : entries_) {
    if (entry.first == key) {
      entry.second = std::move(value);
      return;
    }
  }
  entries_.emplace_back(key, std::move(value));
}

const ResultValue* ResultTree::find(const std::string& key) const {
  for (const auto& entry : entries_)
    if (entry.first == key) return &entry.second;
  return nullptr;
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

nlohmann::ordered_json ResultTree::to_json() const {
  nlohmann::ordered_json root = nlohmann::ordered_json::object();
  for (const auto& [key, value] : entries_) {
    nlohmann::ordered_json* node = &root;
    std::stringstream parts(key);
    std::string part;
    std::vector<std::string> path;
    while (std::getline(parts, part, '.')) path.push_back(part);
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
  return root;
}

pp_result_sink_v1 ResultTree::sink() {
  pp_result_sink_v1 sink{};
  sink.struct_size = sizeof(sink);
  sink.context = this;
  sink.number = [](void* context, const char* key, double value) {
    if (key) static_cast<ResultTree*>(context)->set(key, value);
  };
  sink.boolean = [](void* context, const char* key, int32_t value) {
    if (key) static_cast<ResultTree*>(context)->set(key, value != 0);
  };
  sink.text = [](void* context, const char* key, const char* value) {
    if (key) static_cast<ResultTree*>(context)->set(key, std::string(value ? value : ""));
  };
  return sink;
}

}  // namespace paraplan::host
