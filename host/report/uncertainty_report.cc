#include "host/report/uncertainty_report.h"

namespace paraplan::host {

void add_uncertainty(ResultTree& results, const IntervalTable& table, const std::string& executor,
                     const ComparableClass& plan_class) {
  results.set("uncertainty.class", describe_class(plan_class));
  if (table.executor != executor) {
    results.set("uncertainty.note", "no interval: the table holds the residuals of executor '" + table.executor +
                                        "', not '" + executor + "'");
    return;
  }
  const std::optional<double> step = results.number("time.step_s"), tokens = results.number("throughput.tokens_per_s_per_gpu"),
                              mfu = results.number("throughput.mfu");
  const PredictionInterval interval =
      prediction_interval(table, plan_class, step.value_or(0), tokens.value_or(0), mfu.value_or(0));
  if (!interval.of) {
    results.set("uncertainty.note", "no interval: no comparable class holds " + std::to_string(table.min_runs) + " runs from " +
                                        std::to_string(table.min_sources) + " sources");
  } else {
    results.set("uncertainty.comparable_class", describe_class(interval.of->of));
    results.set("uncertainty.comparable_runs", static_cast<double>(interval.of->runs));
    results.set("uncertainty.coverage_fraction", table.coverage);
    const auto set_range = [&](const std::string& figure, double low, double high) {
      results.set("uncertainty." + figure + ".low", low);
      results.set("uncertainty." + figure + ".high", high);
    };
    if (step) set_range("step_s", interval.step_low, interval.step_high);
    if (tokens) set_range("tokens_per_s_per_gpu", interval.tokens_low, interval.tokens_high);
    if (mfu) set_range("mfu", interval.mfu_low, interval.mfu_high);
  }
  const std::optional<double> memory = results.number("memory.per_gpu_bytes"), capacity = results.number("memory.capacity_bytes");
  if (memory && capacity) {
    if (const std::optional<double> risk = out_of_memory_risk(table, *memory, *capacity)) {
      results.set("uncertainty.out_of_memory_risk_fraction", *risk);
      results.set("uncertainty.memory_runs", static_cast<double>(table.memory_ratios.size()));
    }
  }
}

const IntervalClass* applicable_interval(const IntervalTable& table, const std::string& executor,
                                         const ComparableClass& plan_class) {
  return table.executor == executor ? table.comparable(plan_class) : nullptr;
}

const IntervalTable& interval_table(const std::string& file, IntervalTable& storage) {
  if (file.empty()) return shipped_interval_table();
  storage = read_interval_table(file);
  return storage;
}

}  // namespace paraplan::host
