#include "host/search/search_report.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "host/core/joined.h"
#include "host/core/number_format.h"
#include "host/report/text_report.h"

namespace paraplan::host {
namespace {

// 1234567 -> "1,234,567".
std::string grouped(uint64_t value) {
  std::string digits = std::to_string(value), text;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) text += ',';
    text += digits[i];
  }
  return text;
}

std::string bytes(double value) { return format_value("bytes", value); }

double days_to_train(const pp_plan_figures& figures, const SearchReportContext& context) {
  double tokens_per_s = figures.tokens_per_s_per_gpu * static_cast<double>(context.recipe.cluster.num_gpus);
  return tokens_per_s > 0 ? context.train_tokens / tokens_per_s / 86400.0 : 0.0;
}

std::vector<std::pair<std::string, const Rejection*>> by_count(const SearchResult& result) {
  std::vector<std::pair<std::string, const Rejection*>> reasons;
  for (const auto& [reason, rejection] : result.rejected) reasons.emplace_back(reason, &rejection);
  std::stable_sort(reasons.begin(), reasons.end(),
                   [](const auto& a, const auto& b) { return a.second->plans > b.second->plans; });
  return reasons;
}

std::string reason_detail(const std::string& reason, const Rejection& rejection, const SearchResult& result) {
  if (reason == "memory")
    return "need more than " + format_number("%.3f GB", result.usable_memory_bytes / 1e9) +
           " per GPU (capacity less headroom); the smallest needs " +
           format_number("%.3f GB", result.smallest_rejected_memory_bytes / 1e9);
  return rejection.example;
}

// A plan's step-time range: its step times the interval's low and high ratios (call with an interval).
std::pair<double, double> step_range_s(const RankedPlan& plan, const SearchReportContext& context) {
  return {plan.figures.step_s * context.interval->low, plan.figures.step_s * context.interval->high};
}

std::string step_range_text(const RankedPlan& plan, const SearchReportContext& context) {
  if (!context.interval) return "";
  const auto [low, high] = step_range_s(plan, context);
  return format_number("%.3f", low) + "-" + format_number("%.3f", high);
}

}  // namespace

bool ties_with_winner(const SearchResult& result, const SearchReportContext& context, const RankedPlan& plan) {
  if (!context.interval || result.top.empty() || context.settings.objective == Objective::kMemory) return false;
  return step_range_s(plan, context).first <= step_range_s(result.top.front(), context).second;
}

const char* objective_name(Objective objective) {
  switch (objective) {
    case Objective::kMemory: return "memory";
    case Objective::kTimeToTrain: return "time-to-train";
    default: return "throughput";
  }
}

std::string ranked_plan_recipe(const SearchResult& result, const RankedPlan& plan) {
  std::string text;
  for (size_t level = 0; level < result.space.slots.size(); ++level) {
    if (plan.degrees[level] == 0) continue;
    const StrategyOption& option = result.space.slots[level].options[plan.options[level]];
    text += "[[strategy]]\nname = \"" + option.plugin->name() + "\"\ndegree = " + std::to_string(plan.degrees[level]) + "\n";
    for (const auto& [key, node] : option.values) {
      std::string value = scalar_text(*node);
      text += key + " = " + (node->is_string() ? "\"" + value + "\"" : value) + "\n";
    }
  }
  std::vector<std::string> quoted;
  for (const std::string& axis : plan.mesh_order) quoted.push_back("\"" + axis + "\"");
  text += "# [training] micro_batch = " + std::to_string(plan.micro_batch) + ", recompute = \"" +
          recompute_name(plan.recompute) + "\"" +
          (plan.recompute_num_layers > 0 ? ", recompute_num_layers = " + std::to_string(plan.recompute_num_layers) : "") +
          "\n# [cluster] mesh_order = [" + joined(quoted, ", ") + "]\n";
  return text;
}

void write_search_text(std::ostream& out, const SearchResult& result, const SearchReportContext& context) {
  const Recipe& recipe = context.recipe;
  out << "Search: " << recipe.file << "\n"
      << "  " << recipe.model.name << " on " << recipe.cluster.num_gpus << " x " << context.hardware
      << ", global batch " << recipe.training.global_batch << ", sequence " << recipe.model.shape.seq_len
      << "; objective " << objective_name(context.settings.objective) << "\n"
      << "  " << grouped(result.plans) << " candidate plans, " << grouped(result.valid_plans) << " fit and were timed in "
      << grouped(result.layouts) << " mesh layouts; " << format_number("%.2f", result.seconds) << " s on " << result.threads
      << (result.threads == 1 ? " thread" : " threads") << "\n\n";

  const bool days = context.settings.objective == Objective::kTimeToTrain;
  size_t range_width = 0;
  for (const RankedPlan& plan : result.top) range_width = std::max(range_width, step_range_text(plan, context).size());
  if (range_width) range_width = std::max<size_t>(range_width, 9);
  out << "rank   step time" << (range_width ? "  " + std::string(range_width - 9, ' ') + "range (s)" : "")
      << "  tokens/s/GPU    MFU   memory/GPU" << (days ? "      days" : "") << "  plan\n";
  for (size_t rank = 0; rank < result.top.size(); ++rank) {
    const RankedPlan& plan = result.top[rank];
    char line[200];
    const std::string range = step_range_text(plan, context);
    std::snprintf(line, sizeof(line), "%4zu%c %8.3f s%s%*s  %12.1f  %5.1f%%  %11s", rank + 1,
                  rank > 0 && ties_with_winner(result, context, plan) ? '=' : ' ', plan.figures.step_s,
                  range_width ? "  " : "", static_cast<int>(range_width), range.c_str(), plan.figures.tokens_per_s_per_gpu,
                  100.0 * plan.figures.mfu, bytes(plan.figures.memory_per_gpu_bytes).c_str());
    out << line;
    if (days) out << format_number("  %8.1f", days_to_train(plan.figures, context));
    out << "  " << ranked_plan_text(result.space, plan) << "\n";
  }
  if (context.interval) {
    size_t ties = 0;
    for (size_t rank = 1; rank < result.top.size(); ++rank) ties += ties_with_winner(result, context, result.top[rank]);
    out << "\nRange: where the step time of " << format_number("%.0f", 100.0 * context.interval_coverage)
        << " % of measured runs like these fell (" << describe_class(context.interval->of) << ", " << context.interval->runs
        << " runs; docs/validation.md).\n";
    if (context.settings.objective == Objective::kMemory)
      out << "Ranked by memory: no ties on time.\n";
    else if (ties)
      out << ties << (ties == 1 ? " plan" : " plans")
          << " marked = overlap the winner's range: the cost model cannot rank them against it.\n";
    else
      out << "No other listed plan overlaps the winner's range.\n";
  }
  if (!result.rejected.empty()) {
    out << "\nRejected plans, by reason:\n";
    // The counts line up under the longest reason ("cpu_offloading", "cuda_graph"), 8 at least.
    int width = 8;
    for (const auto& [reason, rejection] : result.rejected) width = std::max(width, static_cast<int>(reason.size()));
    for (const auto& [reason, rejection] : by_count(result)) {
      char counts[128];
      std::snprintf(counts, sizeof(counts), "  %-*s %12s  ", width, reason.c_str(), grouped(rejection->plans).c_str());
      out << counts << reason_detail(reason, *rejection, result) << "\n";
    }
  }
  if (!result.skipped.empty()) {
    out << "\nLeft out (no plan could use them; not counted above):\n";
    for (const SkippedStrategy& skipped : result.skipped) out << "  " << skipped.name << ": " << skipped.reason << "\n";
  }
  if (!result.top.empty()) out << "\nThe winner as recipe text:\n" << ranked_plan_recipe(result, result.top.front());
}

nlohmann::ordered_json search_json(const SearchResult& result, const SearchReportContext& context) {
  nlohmann::ordered_json json;
  json["recipe"] = context.recipe.file;
  json["objective"] = objective_name(context.settings.objective);
  json["memory_headroom"] = context.settings.memory_headroom;
  json["threads"] = result.threads;
  json["seconds"] = result.seconds;
  json["plans"] = result.plans;
  json["valid_plans"] = result.valid_plans;
  json["priced_plans"] = result.priced_plans;
  json["layouts_timed"] = result.layouts;
  json["usable_memory_bytes"] = result.usable_memory_bytes;
  if (context.interval)
    json["interval"] = {{"coverage", context.interval_coverage}, {"comparable_class", describe_class(context.interval->of)},
                        {"comparable_runs", context.interval->runs}};
  else
    json["interval"] = nullptr;
  nlohmann::ordered_json rejected = nlohmann::ordered_json::object();
  for (const auto& [reason, rejection] : by_count(result))
    rejected[reason] = {{"plans", rejection->plans}, {"example", reason_detail(reason, *rejection, result)}};
  json["rejected"] = rejected;
  nlohmann::ordered_json skipped = nlohmann::ordered_json::object();
  for (const SkippedStrategy& strategy : result.skipped) skipped[strategy.name] = strategy.reason;
  json["skipped"] = skipped;
  nlohmann::ordered_json top = nlohmann::ordered_json::array();
  for (size_t rank = 0; rank < result.top.size(); ++rank) top.push_back(ranked_plan_json(result, context, result.top[rank], rank + 1));
  json["top"] = top;
  return json;
}

nlohmann::ordered_json ranked_plan_json(const SearchResult& result, const SearchReportContext& context,
                                        const RankedPlan& plan, size_t rank) {
  nlohmann::ordered_json entry;
  if (rank > 0) entry["rank"] = rank;
  entry["step_s"] = plan.figures.step_s;
  entry["tokens_per_s_per_gpu"] = plan.figures.tokens_per_s_per_gpu;
  entry["mfu"] = plan.figures.mfu;
  entry["memory_per_gpu_bytes"] = plan.figures.memory_per_gpu_bytes;
  if (context.interval) {
    const auto [low, high] = step_range_s(plan, context);
    entry["step_s_range"] = {low, high};
    entry["ties_with_winner"] = rank != 1 && ties_with_winner(result, context, plan);
  }
  if (context.settings.objective == Objective::kTimeToTrain) entry["days_to_train"] = days_to_train(plan.figures, context);
  nlohmann::ordered_json strategies = nlohmann::ordered_json::array();
  for (size_t level = 0; level < result.space.slots.size(); ++level) {
    if (plan.degrees[level] == 0) continue;
    const StrategyOption& option = result.space.slots[level].options[plan.options[level]];
    nlohmann::ordered_json strategy = {{"name", option.plugin->name()}, {"degree", plan.degrees[level]}};
    if (level < plan.axes.size() && !plan.axes[level].empty()) strategy["axis"] = plan.axes[level];
    for (const auto& [key, node] : option.values) strategy[key] = scalar_text(*node);
    strategies.push_back(strategy);
  }
  entry["strategies"] = strategies;
  entry["micro_batch"] = plan.micro_batch;
  entry["recompute"] = recompute_name(plan.recompute);
  entry["recompute_num_layers"] =
      plan.recompute_num_layers > 0 ? nlohmann::ordered_json(plan.recompute_num_layers) : nlohmann::ordered_json(nullptr);
  entry["mesh_order"] = plan.mesh_order;
  entry["layouts_timed"] = plan.layouts;
  entry["plan"] = ranked_plan_text(result.space, plan);
  return entry;
}

nlohmann::ordered_json search_map_json(const SearchResult& result, const SearchReportContext& context) {
  nlohmann::ordered_json front = nlohmann::ordered_json::array();
  for (const RankedPlan& plan : result.front) front.push_back(ranked_plan_json(result, context, plan, 0));
  nlohmann::ordered_json cells = nlohmann::ordered_json::array();
  for (const MappedCell& cell : result.cells)
    cells.push_back({{"step_s", cell.plan.figures.step_s},
                     {"memory_per_gpu_bytes", cell.plan.figures.memory_per_gpu_bytes},
                     {"mfu", cell.plan.figures.mfu},
                     {"tokens_per_s_per_gpu", cell.plan.figures.tokens_per_s_per_gpu},
                     {"plan", ranked_plan_text(result.space, cell.plan)},
                     {"plans", cell.plans}});
  return {{"front", front}, {"cells", cells}};
}

std::string empty_search_message(const SearchResult& result, const Recipe& recipe) {
  if (result.plans == 0)
    return recipe.file + ": the search space is empty: no choice of strategy degrees multiplies to cluster.num_gpus = " +
           std::to_string(recipe.cluster.num_gpus) + " (check the pinned degrees and the strategies' search cases)";
  std::string text = recipe.file + ": no plan survives the search: all " + grouped(result.plans) + " candidate plans were rejected";
  // Memory is checked last, on plans that passed every constraint: when it rejected any, it is
  // what finally empties the space, however many plans fell earlier.
  std::vector<std::pair<std::string, const Rejection*>> reasons = by_count(result);
  std::stable_partition(reasons.begin(), reasons.end(), [](const auto& entry) { return entry.first == "memory"; });
  for (size_t i = 0; i < reasons.size(); ++i) {
    const auto& [reason, rejection] = reasons[i];
    std::string lead = i > 0 ? ", " : reason == "memory" ? "; the last check, " : "; most by ";
    if (i == 1 && reasons[0].first == "memory") lead = "; before it, ";
    text += lead + reason + " (" + grouped(rejection->plans) + ": " + reason_detail(reason, *rejection, result) + ")";
  }
  return text;
}

}  // namespace paraplan::host
