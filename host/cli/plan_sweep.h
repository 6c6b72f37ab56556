// paraplan/host/cli/plan_sweep.h: `evaluate --sweep KEY=V1,V2,...`: the recipe's plan once per
// value of one recipe key (each as --set KEY=V), side by side: step time, throughput, MFU, memory;
// with --html, throughput and MFU against the value as line charts.
#pragma once

#include <string>
#include <vector>

#include "host/cli/plan_command.h"

namespace paraplan::host {

struct Sweep {
  std::string key;
  std::vector<std::string> values;
};

// "cluster.num_gpus=64,128,256" -> {cluster.num_gpus, [64, 128, 256]}; UsageError otherwise.
Sweep parse_sweep(const std::string& text);

// Returns 0 when every value's plan was evaluated and fits, 1 otherwise (each value's outcome is in
// the report); throws the first InputError when no value could be evaluated for it (a bad key).
int report_sweep(const std::string& executor, const CommonOptions& common, const std::string& recipe_file,
                 const std::vector<std::string>& overrides, const Sweep& sweep, const PlanReportOptions& options);

}  // namespace paraplan::host
