// paraplan/host/report/result_tree.h: the results of a command, as dotted keys in order.
//
// Executors report through pp_result_sink_v1 ("time.step_s" = 1.25); the host adds its own keys
// ("plan.mesh.tp" = 8). The tree renders as nested JSON ({"time": {"step_s": 1.25}}) for
// programs and as a sectioned text report for people (text_report.h).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "paraplan/executor.h"

namespace paraplan::host {

using ResultValue = std::variant<double, bool, std::string>;

class ResultTree {
 public:
  void set(const std::string& key, ResultValue value);
  const ResultValue* find(const std::string& key) const;
  // The value of `key` when it is a number (a text); empty when absent or of another type.
  std::optional<double> number(const std::string& key) const;
  std::optional<std::string> text(const std::string& key) const;
  // True when some key starts with `prefix` ("comm.").
  bool has_prefix(const std::string& prefix) const;
  const std::vector<std::pair<std::string, ResultValue>>& entries() const { return entries_; }

  nlohmann::ordered_json to_json() const;

  // A sink whose callbacks write into this tree; valid while the tree lives.
  pp_result_sink_v1 sink();

 private:
  std::vector<std::pair<std::string, ResultValue>> entries_;
};

}  // namespace paraplan::host
