#include "host/validate/prediction_intervals.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>

#include "host/core/errors.h"
#include "host/plan/hardware_binding.h"
#include "host/recipe/input_file.h"
#include "paraplan/sdk.hpp"

namespace paraplan::host {

// The compiled-in recipes/validation/prediction_intervals.json (shipped_intervals.cc, generated).
const char* shipped_interval_table_text();

namespace {

constexpr int64_t kLargeScaleGpus = 512;
constexpr size_t kMaxIntervalFileBytes = 1u << 20;

// The class with its first `kept` traits (family, generation, precision, scale); the rest any.
ComparableClass truncated(const ComparableClass& of, int kept) {
  ComparableClass out;
  if (kept > 0) out.family = of.family;
  if (kept > 1) out.generation = of.generation;
  if (kept > 2) out.precision = of.precision;
  if (kept > 3) out.scale = of.scale;
  return out;
}

// A sample's quantile p, every source weighing the same: a value's weight is 1 / (its source's
// values in the sample). Values sorted, each at the middle of its cumulative weight, linearly
// interpolated between them (with equal weights, Hazen's rule, Hyndman and Fan's type 5).
struct Sample {
  double value;
  double weight;
};
double weighted_quantile(std::vector<Sample> sample, double p) {
  std::sort(sample.begin(), sample.end(), [](const Sample& a, const Sample& b) { return a.value < b.value; });
  double total = 0;
  for (const Sample& entry : sample) total += entry.weight;
  double before = 0, previous_position = 0, previous_value = sample.front().value;
  for (size_t i = 0; i < sample.size(); ++i) {
    const double position = (before + sample[i].weight / 2) / total;
    if (p <= position) {
      if (i == 0) return sample[i].value;
      const double t = (p - previous_position) / (position - previous_position);
      return previous_value + t * (sample[i].value - previous_value);
    }
    before += sample[i].weight, previous_position = position, previous_value = sample[i].value;
  }
  return sample.back().value;
}

// A class as a key for maps: its traits joined.
std::string key_of(const ComparableClass& of) {
  return of.family + "|" + of.generation + "|" + of.precision + "|" + of.scale;
}

[[noreturn]] void malformed(const std::string& file, const std::string& key, const std::string& problem) {
  throw InputError(file + ": " + key + ": " + problem);
}

double positive_number(const nlohmann::json& value, const std::string& file, const std::string& key) {
  if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() <= 0)
    malformed(file, key, "expected a positive number");
  return value.get<double>();
}

// A count: a whole number from `minimum` to a billion (so the cast to size_t is defined).
size_t count(const nlohmann::json& value, const std::string& file, const std::string& key, double minimum = 1) {
  if (!value.is_number() || !(value.get<double>() >= minimum && value.get<double>() <= 1e9) ||
      value.get<double>() != std::floor(value.get<double>()))
    malformed(file, key, "expected a whole number from " + std::to_string(static_cast<int>(minimum)) + " to 1e9");
  return static_cast<size_t>(value.get<double>());
}

std::string trait(const nlohmann::json& entry, const char* name, const std::set<std::string>& allowed,
                  const std::string& file, const std::string& where) {
  if (!entry.contains(name)) return "";
  const nlohmann::json& value = entry.at(name);
  if (!value.is_string() || !allowed.count(value.get<std::string>())) {
    std::string names;
    for (const std::string& option : allowed) names += (names.empty() ? "" : "|") + option;
    malformed(file, where + "." + name, "expected one of " + names);
  }
  return value.get<std::string>();
}

}  // namespace

bool ComparableClass::covers(const ComparableClass& run) const {
  return (family.empty() || family == run.family) && (generation.empty() || generation == run.generation) &&
         (precision.empty() || precision == run.precision) && (scale.empty() || scale == run.scale);
}

ComparableClass comparable_class(const Recipe& recipe, const HardwareBinding& hardware) {
  return comparable_class(recipe, hardware.profile(), gpus_per_node(recipe, hardware));
}

ComparableClass comparable_class(const Recipe& recipe, const pp_hardware_profile& profile, int64_t gpus_per_node) {
  ComparableClass of;
  of.family = recipe.model.shape.moe_experts > 0 ? "moe" : "dense";
  // By the formats the tensor cores run: block-scaled formats came with Blackwell, FP8 with Hopper.
  // (The host's copy of a profile is zero past what an older plugin described.)
  const bool block_scaled = profile.peak_flops_mxfp8 > 0 || profile.peak_flops_nvfp4 > 0;
  of.generation = block_scaled ? "blackwell-class" : profile.peak_flops[PP_DTYPE_FP8] > 0 ? "hopper-class" : "ampere-class";
  of.precision = paraplan::quantised_precision(recipe.training.precision) ? "fp8" : "bf16";
  const int64_t gpus = recipe.cluster.num_gpus;
  of.scale = gpus <= gpus_per_node ? "one-node" : gpus <= kLargeScaleGpus ? "up-to-512" : "over-512";
  return of;
}

std::string describe_class(const ComparableClass& of) {
  std::string text;
  for (const std::string* part : {&of.family, &of.generation, &of.precision, &of.scale})
    if (!part->empty()) text += (text.empty() ? "" : ", ") + *part;
  return text.empty() ? "any" : text;
}

const IntervalClass* IntervalTable::comparable(const ComparableClass& run) const& {
  for (int kept = 4; kept >= 0; --kept) {
    const ComparableClass wanted = truncated(run, kept);
    for (const IntervalClass& entry : classes)
      if (entry.of == wanted) return &entry;
  }
  return nullptr;
}

IntervalTable build_interval_table(const std::vector<Residual>& residuals, const std::string& executor) {
  IntervalTable table;
  table.executor = executor;
  table.runs = residuals.size();
  // A team's own runs may all come from one source: their table then stands on that one.
  std::set<std::string> sources;
  for (const Residual& residual : residuals) sources.insert(residual.source);
  table.min_sources = std::clamp<size_t>(sources.size(), 1, table.min_sources);
  // Every run counts in its class at each level; a level's classes in first-seen order.
  std::map<std::string, size_t> index;
  std::vector<std::pair<ComparableClass, std::vector<const Residual*>>> groups;
  for (int kept = 4; kept >= 0; --kept) {
    for (const Residual& residual : residuals) {
      const ComparableClass of = truncated(residual.of, kept);
      auto [at, added] = index.emplace(key_of(of), groups.size());
      if (added) groups.push_back({of, {}});
      groups[at->second].second.push_back(&residual);
    }
  }
  for (const auto& [of, members] : groups) {
    if (members.size() < table.min_runs) continue;
    // One source's many rows (vTrain's 1440) must not stand for every source's error.
    std::map<std::string, double> per_source;
    for (const Residual* member : members) ++per_source[member->source];
    if (per_source.size() < table.min_sources) continue;
    std::vector<Sample> sample;
    for (const Residual* member : members) sample.push_back({member->step_ratio, 1.0 / per_source[member->source]});
    table.classes.push_back({of, members.size(), weighted_quantile(sample, table.low_quantile),
                             weighted_quantile(sample, table.high_quantile)});
  }
  for (const Residual& residual : residuals)
    if (residual.memory_ratio) table.memory_ratios.push_back(*residual.memory_ratio);
  std::sort(table.memory_ratios.begin(), table.memory_ratios.end());
  return table;
}

nlohmann::ordered_json interval_table_json(const IntervalTable& table) {
  // Ratios to four significant digits: the file is reviewed in diffs, and a regenerated table
  // should change only where the model did.
  auto rounded = [](double value) { return std::round(value * 1e4) / 1e4; };
  nlohmann::ordered_json json;
  json["about"] =
      "paraplan's prediction intervals: measured / predicted step time of validation runs, by comparable "
      "class (docs/validation.md). Written by paraplan validate --write-intervals.";
  json["executor"] = table.executor;
  json["coverage"] = table.coverage;
  json["low_quantile"] = table.low_quantile;
  json["high_quantile"] = table.high_quantile;
  json["min_runs"] = table.min_runs;
  json["min_sources"] = table.min_sources;
  json["runs"] = table.runs;
  nlohmann::ordered_json classes = nlohmann::ordered_json::array();
  for (const IntervalClass& entry : table.classes) {
    nlohmann::ordered_json item;
    if (!entry.of.family.empty()) item["family"] = entry.of.family;
    if (!entry.of.generation.empty()) item["generation"] = entry.of.generation;
    if (!entry.of.precision.empty()) item["precision"] = entry.of.precision;
    if (!entry.of.scale.empty()) item["scale"] = entry.of.scale;
    item["runs"] = entry.runs;
    item["low"] = rounded(entry.low);
    item["high"] = rounded(entry.high);
    classes.push_back(item);
  }
  json["classes"] = classes;
  nlohmann::ordered_json memory = nlohmann::ordered_json::array();
  for (double ratio : table.memory_ratios) memory.push_back(rounded(ratio));
  json["memory_ratios"] = memory;
  return json;
}

IntervalTable parse_interval_table(std::string_view text, const std::string& file) {
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& failure) {
    const size_t at = std::min<size_t>(failure.byte, text.size());
    const size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
    throw InputError(file + ":" + std::to_string(line) + ": not valid JSON");
  }
  if (!json.is_object()) malformed(file, "(top level)", "expected an object");
  static const std::set<std::string> known = {"about", "executor", "coverage", "low_quantile", "high_quantile",
                                              "min_runs", "min_sources", "runs", "classes", "memory_ratios"};
  for (const auto& [key, value] : json.items())
    if (!known.count(key)) malformed(file, key, "unknown key");
  IntervalTable table;
  table.classes.clear();
  if (json.contains("executor")) {
    if (!json["executor"].is_string() || json["executor"].get<std::string>().empty()) malformed(file, "executor", "expected a name");
    table.executor = json["executor"].get<std::string>();
  }
  if (json.contains("coverage")) table.coverage = positive_number(json["coverage"], file, "coverage");
  if (!(table.coverage < 1)) malformed(file, "coverage", "expected a fraction below 1");
  if (json.contains("low_quantile")) table.low_quantile = positive_number(json["low_quantile"], file, "low_quantile");
  if (json.contains("high_quantile")) table.high_quantile = positive_number(json["high_quantile"], file, "high_quantile");
  if (!(table.low_quantile < table.high_quantile && table.high_quantile < 1))
    malformed(file, "high_quantile", "expected 0 < low_quantile < high_quantile < 1");
  if (json.contains("min_runs")) table.min_runs = count(json["min_runs"], file, "min_runs");
  if (json.contains("min_sources"))
    table.min_sources = count(json["min_sources"], file, "min_sources");
  if (json.contains("runs")) table.runs = count(json["runs"], file, "runs", 0);
  if (!json.contains("classes") || !json["classes"].is_array()) malformed(file, "classes", "expected an array");
  for (size_t i = 0; i < json["classes"].size(); ++i) {
    const nlohmann::json& entry = json["classes"][i];
    const std::string where = "classes[" + std::to_string(i) + "]";
    if (!entry.is_object()) malformed(file, where, "expected an object");
    for (const auto& [key, value] : entry.items())
      if (!std::set<std::string>{"family", "generation", "precision", "scale", "runs", "low", "high"}.count(key))
        malformed(file, where + "." + key, "unknown key");
    IntervalClass item;
    item.of.family = trait(entry, "family", {"dense", "moe"}, file, where);
    item.of.generation = trait(entry, "generation", {"ampere-class", "hopper-class", "blackwell-class"}, file, where);
    item.of.precision = trait(entry, "precision", {"bf16", "fp8"}, file, where);
    item.of.scale = trait(entry, "scale", {"one-node", "up-to-512", "over-512"}, file, where);
    for (const char* key : {"runs", "low", "high"})
      if (!entry.contains(key)) malformed(file, where + "." + key, "missing");
    item.runs = count(entry["runs"], file, where + ".runs");
    item.low = positive_number(entry["low"], file, where + ".low");
    item.high = positive_number(entry["high"], file, where + ".high");
    if (item.low > item.high) malformed(file, where + ".high", "smaller than low");
    table.classes.push_back(item);
  }
  if (json.contains("memory_ratios")) {
    if (!json["memory_ratios"].is_array()) malformed(file, "memory_ratios", "expected an array");
    for (size_t i = 0; i < json["memory_ratios"].size(); ++i)
      table.memory_ratios.push_back(
          positive_number(json["memory_ratios"][i], file, "memory_ratios[" + std::to_string(i) + "]"));
    std::sort(table.memory_ratios.begin(), table.memory_ratios.end());
  }
  return table;
}

IntervalTable read_interval_table(const std::string& file) {
  return parse_interval_table(read_bounded_file(file, kMaxIntervalFileBytes, "prediction intervals"), file);
}

const IntervalTable& shipped_interval_table() {
  static const IntervalTable table =
      parse_interval_table(shipped_interval_table_text(), "recipes/validation/prediction_intervals.json (compiled in)");
  return table;
}

PredictionInterval prediction_interval(const IntervalTable& table, const ComparableClass& run, double step_s,
                                       double tokens_per_s_per_gpu, double mfu) {
  PredictionInterval interval;
  interval.of = table.comparable(run);
  if (!interval.of) return interval;
  const double low = interval.of->low, high = interval.of->high;
  interval.step_low = step_s * low, interval.step_high = step_s * high;
  // Throughput and MFU scale as 1 / step.
  interval.tokens_low = tokens_per_s_per_gpu / high, interval.tokens_high = tokens_per_s_per_gpu / low;
  interval.mfu_low = mfu / high, interval.mfu_high = mfu / low;
  return interval;
}

std::optional<double> out_of_memory_risk(const IntervalTable& table, double predicted_bytes, double capacity_bytes) {
  if (table.memory_ratios.empty()) return std::nullopt;
  const auto over = std::count_if(table.memory_ratios.begin(), table.memory_ratios.end(),
                                  [&](double ratio) { return predicted_bytes * ratio > capacity_bytes; });
  return static_cast<double>(over) / static_cast<double>(table.memory_ratios.size());
}

CoverageCheck leave_one_source_out(const std::vector<Residual>& residuals) {
  CoverageCheck check;
  check.all.name = "all";
  std::vector<std::string> sources;
  for (const Residual& residual : residuals) {
    if (std::find(sources.begin(), sources.end(), residual.source) == sources.end()) sources.push_back(residual.source);
    auto known = std::find_if(check.files.begin(), check.files.end(),
                              [&](const CoverageCount& count) { return count.name == residual.file; });
    if (known == check.files.end()) check.files.push_back({residual.file});
  }
  for (const std::string& source : sources) {
    std::vector<Residual> others;
    for (const Residual& residual : residuals)
      if (residual.source != source) others.push_back(residual);
    const IntervalTable table = build_interval_table(others, "");
    check.coverage = table.coverage;
    for (const Residual& residual : residuals) {
      if (residual.source != source) continue;
      CoverageCount& file = *std::find_if(check.files.begin(), check.files.end(),
                                          [&](const CoverageCount& count) { return count.name == residual.file; });
      const IntervalClass* of = table.comparable(residual.of);
      for (CoverageCount* count : {&file, &check.all}) {
        ++count->runs;
        if (!of)
          ++count->without_interval;
        else if (residual.step_ratio < of->low)
          ++count->below;
        else if (residual.step_ratio > of->high)
          ++count->above;
        else
          ++count->inside;
      }
    }
  }
  if (sources.empty()) check.coverage = IntervalTable{}.coverage;
  return check;
}

}  // namespace paraplan::host
