// paraplan/host/report/result_tree.h: the results of a command, as dotted keys in order.
//
// Executors report through pp_result_sink_v1 ("time.step_s" = 1.25); the host adds its own keys
// ("plan.mesh.tp" = 8). The tree renders as nested JSON ({"time": {"step_s": 1.25}}) for
// programs and as a sectioned text report for people (text_report.h).
//
// What a plugin reports is checked at the sink (plugin_key_problem): a key is 1-256 characters of
// dotted segments of letters, digits, '_' and '-'; it may not enter a section the host reserved
// (the host's "plan" section) nor turn an existing key into a section or a section into a leaf;
// texts become valid UTF-8; a number that is not finite is kept (JSON null) but warned about.
// Every refusal or warning joins warnings(), which the report shows under "warnings".
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>

#include "paraplan/executor.h"

namespace paraplan::host {

using ResultValue = std::variant<double, bool, std::string>;

class ResultTree {
 public:
  // The host's own keys: a later value replaces an earlier one.
  void set(const std::string& key, ResultValue value);
  const ResultValue* find(const std::string& key) const;
  // The value of `key` when it is a number (a text); empty when absent or of another type.
  std::optional<double> number(const std::string& key) const;
  std::optional<std::string> text(const std::string& key) const;
  // True when some key starts with `prefix` ("comm.").
  bool has_prefix(const std::string& prefix) const;
  const std::vector<std::pair<std::string, ResultValue>>& entries() const { return entries_; }

  // A section plugins may not write to ("plan").
  void reserve_section(const std::string& section) { reserved_.insert(section); }
  const std::vector<std::string>& warnings() const { return warnings_; }
  void warn(const std::string& message) { warnings_.push_back(message); }

  nlohmann::ordered_json to_json() const;

  // A sink whose callbacks write into this tree through the checks above; valid while the tree
  // lives. `reporter` names the plugin in warnings ("executor 'simulate'").
  pp_result_sink_v1 sink(const std::string& reporter = "the executor");

 private:
  // Why a plugin may not report `key` ("" when it may).
  std::string plugin_key_problem(const char* key) const;
  void set_from_plugin(const char* key, ResultValue value);

  std::vector<std::pair<std::string, ResultValue>> entries_;
  std::unordered_map<std::string, size_t> index_;      // key -> position in entries_
  std::unordered_set<std::string> sections_;           // every proper dotted prefix of a key
  std::unordered_set<std::string> reserved_;
  std::vector<std::string> warnings_;
  std::string reporter_ = "the executor";
};

}  // namespace paraplan::host
