// hardware/toml/profile_reader.cc: TOML -> ProfileSpec -> pp_hardware_profile.
//
// Reading happens in two passes over what the file says. The first checks the shape of the
// document as it is read: every table admits a fixed set of keys, each key one type, required
// keys must be there. The second is check_profile(), the same rules the bundled profiles are held
// to; its verdict names a key, and the reader remembers where each key was written so that the
// message points at it.
#include "hardware/toml/profile_reader.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "hardware/internal/profile_builder.h"
#include "paraplan/sdk.hpp"

namespace paraplan::hardware {
namespace {

// Defaults of the optional keys; docs/hardware.md gives the reasons. An absent
// gemm.half_efficiency_gflop is derived from kGemmFixedOverheadUs by the profile builder, an
// absent host.op_overhead_us is kHostOpOverheadUs, an absent overlap.compute_slowdown
// kOverlapComputeSlowdown, an absent fleet.speed_variation kSpeedVariation.
constexpr double kDefaultMemoryEfficiency = 0.85;
constexpr double kDefaultGemmEfficiencyMax = 0.64;  // the H100 profile's in-training plateau
constexpr double kDefaultAttentionEfficiency = 0.81;  // on the full-square FLOP count
constexpr double kDefaultTierEfficiency = 0.80;

struct Location {
  uint32_t line = 1;
  uint32_t column = 1;
};

Location location_of(const toml::source_region& region) {
  // toml++ numbers lines and columns from 1; 0 means unknown (e.g. an implicitly created table).
  return {region.begin.line == 0 ? 1u : region.begin.line, region.begin.column == 0 ? 1u : region.begin.column};
}

std::string_view type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
    case toml::node_type::time:
    case toml::node_type::date_time:
      return "a date or time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

// The file being read: its name for messages, and where each key was written.
class ProfileFile {
 public:
  explicit ProfileFile(std::string path) : path_(std::move(path)) {}

  // Keys a base profile supplied (their source is `marker`) are reported at the file's `base`.
  void set_base(std::string name, std::string marker, Location where) {
    base_name_ = std::move(name);
    base_marker_ = std::move(marker);
    base_where_ = where;
  }
  bool from_base(const toml::source_region& region) const {
    return !base_marker_.empty() && region.path && *region.path == base_marker_;
  }
  Location locate(const toml::source_region& region) const {
    return from_base(region) ? base_where_ : location_of(region);
  }

  [[noreturn]] void fail(Location where, std::string_view key, std::string_view message) const {
    std::ostringstream text;
    text << path_ << ':' << where.line << ':' << where.column << ": ";
    if (!key.empty()) text << key << ": ";
    text << message;
    throw InvalidArgument(text.str());
  }

  // `canonical` is the key path check_profile() would name; `written` the key as the file spells it.
  void remember(const std::string& canonical, std::string written, const toml::source_region& region) {
    written_[canonical] = Written{std::move(written), locate(region), from_base(region)};
  }

  // Messages about `canonical` point where `written` was written.
  void alias(const std::string& canonical, const std::string& written) {
    if (auto found = written_.find(written); found != written_.end()) written_[canonical] = found->second;
  }

  [[noreturn]] void fail_at(const std::string& canonical, std::string_view message) const {
    auto found = written_.find(canonical);
    if (found == written_.end()) fail(Location{}, canonical, message);
    if (found->second.from_base)
      fail(found->second.where, found->second.key,
           std::string(message) + " (the value of base '" + base_name_ + "', with this file's keys)");
    fail(found->second.where, found->second.key, message);
  }

 private:
  struct Written {
    std::string key;
    Location where;
    bool from_base = false;
  };
  std::string path_;
  std::map<std::string, Written> written_;
  std::string base_name_;
  std::string base_marker_;
  Location base_where_;
};

// One TOML table and the keys it admits. Unknown keys fail on construction, before any lookup,
// so that a misspelt key is reported as unknown rather than as the required key it stood for.
class TableReader {
 public:
  TableReader(ProfileFile& file, const toml::table& table, std::string prefix,
              std::initializer_list<std::string_view> known_keys)
      : file_(file), table_(table), prefix_(std::move(prefix)) {
    for (auto&& [key, value] : table_) {
      bool known = false;
      for (std::string_view name : known_keys) known = known || key.str() == name;
      if (known) continue;
      std::string expected;
      for (std::string_view name : known_keys) expected += (expected.empty() ? "" : ", ") + std::string(name);
      file_.fail(file_.locate(key.source()), path_of(key.str()), "unknown key (expected one of: " + expected + ")");
    }
  }

  Location where() const { return file_.locate(table_.source()); }
  std::string path_of(std::string_view key) const { return prefix_ + std::string(key); }

  std::optional<double> optional_number(std::string_view key) {
    const toml::node* node = find(key);
    if (!node) return std::nullopt;
    if (const auto* value = node->as_floating_point()) return value->get();
    if (const auto* value = node->as_integer()) return static_cast<double>(value->get());
    fail_type(key, *node, "a number");
  }
  double number(std::string_view key) {
    std::optional<double> value = optional_number(key);
    if (!value) fail_missing(key);
    return *value;
  }
  double number_or(std::string_view key, double fallback) { return optional_number(key).value_or(fallback); }

  int64_t integer(std::string_view key) {
    const toml::node* node = find(key);
    if (!node) fail_missing(key);
    if (const auto* value = node->as_integer()) return value->get();
    fail_type(key, *node, "an integer");
  }

  std::string text(std::string_view key) {
    const toml::node* node = find(key);
    if (!node) fail_missing(key);
    if (const auto* value = node->as_string()) return value->get();
    fail_type(key, *node, "a string");
  }

  const toml::table* optional_table(std::string_view key) {
    const toml::node* node = find(key);
    if (!node) return nullptr;
    if (const auto* value = node->as_table()) return value;
    fail_type(key, *node, "a table");
  }
  const toml::table& table(std::string_view key) {
    const toml::table* value = optional_table(key);
    if (!value) file_.fail(where(), path_of(key), "missing required table [" + path_of(key) + "]");
    return *value;
  }

  // `[[key]]` sections (or an inline array of tables).
  const toml::array& array_of_tables(std::string_view key) {
    const toml::node* node = find(key);
    if (!node) fail_missing(key);
    const auto* value = node->as_array();
    if (!value || !(value->empty() || value->is_array_of_tables())) {
      fail_type(key, *node, "an array of tables ([[" + std::string(key) + "]] sections)");
    }
    return *value;
  }

  [[noreturn]] void fail_missing(std::string_view key) const {
    file_.fail(where(), path_of(key), "missing required key");
  }

 private:
  // Messages about a key point at the key, where a reader's eye starts, not at its value.
  const toml::node* find(std::string_view key) {
    auto found = table_.find(key);
    if (found == table_.end()) return nullptr;
    file_.remember(path_of(key), path_of(key), found->first.source());
    return &found->second;
  }

  [[noreturn]] void fail_type(std::string_view key, const toml::node& node, std::string_view expected) const {
    file_.fail_at(path_of(key), "must be " + std::string(expected) + ", not " + std::string(type_name(node)));
  }

  ProfileFile& file_;
  const toml::table& table_;
  std::string prefix_;
};

DenseTflops read_compute(ProfileFile& file, const toml::table& table) {
  TableReader compute(file, table, "compute.",
                      {"fp32_tflops", "tf32_tflops", "bf16_tflops", "fp16_tflops", "fp8_tflops", "mxfp8_tflops",
                       "nvfp4_tflops"});
  DenseTflops tflops;
  tflops.fp32 = compute.number("fp32_tflops");
  tflops.tf32 = compute.number_or("tf32_tflops", 0.0);
  tflops.bf16 = compute.number("bf16_tflops");
  tflops.fp16 = compute.number_or("fp16_tflops", 0.0);
  tflops.fp8 = compute.number_or("fp8_tflops", 0.0);
  tflops.mxfp8 = compute.number_or("mxfp8_tflops", 0.0);
  tflops.nvfp4 = compute.number_or("nvfp4_tflops", 0.0);
  return tflops;
}

TierSpec read_tier(ProfileFile& file, const toml::table& table, size_t index, std::deque<std::string>& names) {
  const std::string prefix = "tiers[" + std::to_string(index) + "].";
  TableReader tier(file, table, prefix,
                   {"name", "domain_size", "bandwidth_gb_s", "bandwidth_gbit_s", "latency_us", "efficiency"});
  TierSpec spec;
  spec.name = names.emplace_back(tier.text("name"));
  spec.domain_size = tier.integer("domain_size");

  // Bandwidth in either unit; check_profile() knows it as bandwidth_gb_s, so point that name at
  // whichever key the file used.
  std::optional<double> gigabytes = tier.optional_number("bandwidth_gb_s");
  std::optional<double> gigabits = tier.optional_number("bandwidth_gbit_s");
  if (gigabytes && gigabits) {
    file.fail_at(prefix + "bandwidth_gbit_s",
                 "give the bandwidth once: bandwidth_gb_s (GB/s) or bandwidth_gbit_s (Gb/s)");
  }
  if (!gigabytes && !gigabits) {
    file.fail(tier.where(), prefix + "bandwidth_gb_s", "missing required key (or bandwidth_gbit_s, in Gb/s)");
  }
  if (gigabits) {
    spec.bandwidth_gb_s = gbit_s_to_gb_s(*gigabits);
    file.alias(prefix + "bandwidth_gb_s", prefix + "bandwidth_gbit_s");
  } else {
    spec.bandwidth_gb_s = *gigabytes;
  }

  spec.latency_us = tier.number("latency_us");
  spec.efficiency = tier.number_or("efficiency", kDefaultTierEfficiency);
  return spec;
}

// Puts `key` = `value` into `into`, replacing what was there, the key as `over` wrote it (its
// position is where messages about it point).
void put(toml::table& into, const toml::key& key, const toml::node& value) {
  into.erase(key.str());
  into.insert(key, value);
}

// The file's keys laid over its base's: a table merges key by key, any other value replaces the
// base's. `[[tiers]]` that each name one of the base's tiers change only the keys they give, the
// base's tiers keeping their order; a tier of another name replaces the base's tiers with the
// file's, which must then be complete.
void overlay(toml::table& into, const toml::table& over) {
  for (auto&& [key, value] : over) {
    toml::node* under = into.get(key.str());
    if (const toml::table* table = value.as_table(); table && under && under->is_table()) {
      overlay(*under->as_table(), *table);
      continue;
    }
    const toml::array* tiers = key.str() == "tiers" ? value.as_array() : nullptr;
    toml::array* base_tiers = key.str() == "tiers" && under ? under->as_array() : nullptr;
    if (tiers && base_tiers && tiers->is_array_of_tables() && base_tiers->is_array_of_tables()) {
      const auto named = [](const toml::node& tier) { return tier.as_table()->get_as<std::string>("name"); };
      std::vector<toml::table*> matches;
      for (const toml::node& tier : *tiers) {
        toml::table* match = nullptr;
        if (const toml::value<std::string>* name = named(tier))
          for (toml::node& candidate : *base_tiers)
            if (const toml::value<std::string>* base_name = named(candidate); base_name && base_name->get() == name->get())
              match = candidate.as_table();
        matches.push_back(match);
      }
      if (std::find(matches.begin(), matches.end(), nullptr) == matches.end()) {
        for (size_t i = 0; i < matches.size(); ++i) {
          // A bandwidth in either unit replaces the base's in both.
          const toml::table& given = *(*tiers)[i].as_table();
          if (given.contains("bandwidth_gb_s") || given.contains("bandwidth_gbit_s")) {
            matches[i]->erase("bandwidth_gb_s");
            matches[i]->erase("bandwidth_gbit_s");
          }
          overlay(*matches[i], given);
        }
        continue;
      }
    }
    put(into, key, value);
  }
}

}  // namespace

pp_hardware_profile parse_toml_profile(std::string_view document, const std::string& path,
                                       std::string_view base_document) {
  ProfileFile file(path);
  toml::table root;
  try {
    root = toml::parse(document, path);
  } catch (const toml::parse_error& error) {
    file.fail(location_of(error.source()), {}, error.description());
  }

  // `base = "NAME"`: the named profile, as paraplan wrote it (base_document), under this file's keys.
  if (auto found = root.find("base"); found != root.end()) {
    const Location where = location_of(found->first.source());
    const toml::value<std::string>* named = found->second.as_string();
    if (!named) file.fail(where, "base", "must be a string, the name of a hardware plugin (paraplan hardware show NAME)");
    const std::string base_name = named->get();  // a copy: the key is erased below
    if (base_document.empty())
      file.fail(where, "base", "names profile '" + base_name +
                                   "', which paraplan supplies when a recipe names this file; the plugin was given none");
    const std::string marker = "<base profile '" + base_name + "'>";
    toml::table merged;
    try {
      merged = toml::parse(base_document, marker);
    } catch (const toml::parse_error& error) {
      file.fail(where, "base", "profile '" + base_name + "' could not be read back: " + std::string(error.description()));
    }
    if (!root.contains("name"))
      file.fail(where, "base", "a profile based on '" + base_name +
                                   "' needs a name of its own (name = \"...\"), so that reports tell the two apart");
    root.erase("base");
    overlay(merged, root);
    root = std::move(merged);
    file.set_base(base_name, marker, where);
  }

  TableReader top(file, root, "",
                  {"name", "gpus_per_node", "compute", "memory", "host_link", "gemm", "attention", "host", "overlap", "fleet", "tiers"});
  ProfileSpec spec;
  const std::string name = top.text("name");
  spec.name = name;
  spec.gpus_per_node = top.integer("gpus_per_node");
  spec.tflops = read_compute(file, top.table("compute"));

  TableReader memory(file, top.table("memory"), "memory.", {"capacity_gb", "bandwidth_gb_s", "efficiency"});
  spec.memory_gb = memory.number("capacity_gb");
  spec.memory_bandwidth_gb_s = memory.number("bandwidth_gb_s");
  spec.memory_efficiency = memory.number_or("efficiency", kDefaultMemoryEfficiency);

  if (const toml::table* table = top.optional_table("host_link")) {
    TableReader host_link(file, *table, "host_link.", {"bandwidth_gb_s"});
    spec.host_link_bandwidth_gb_s = host_link.number("bandwidth_gb_s");
  }

  spec.gemm_efficiency_max = kDefaultGemmEfficiencyMax;
  if (const toml::table* table = top.optional_table("gemm")) {
    TableReader gemm(file, *table, "gemm.",
                     {"efficiency_max", "half_efficiency_gflop", "efficiency_max_fp8", "efficiency_max_fp4"});
    spec.gemm_efficiency_max = gemm.number_or("efficiency_max", kDefaultGemmEfficiencyMax);
    spec.gemm_half_efficiency_gflop = gemm.optional_number("half_efficiency_gflop");
    spec.gemm_efficiency_max_fp8 = gemm.optional_number("efficiency_max_fp8");
    spec.gemm_efficiency_max_fp4 = gemm.optional_number("efficiency_max_fp4");
  }

  spec.attention_efficiency = kDefaultAttentionEfficiency;
  if (const toml::table* table = top.optional_table("attention")) {
    TableReader attention(file, *table, "attention.", {"efficiency", "efficiency_flash2"});
    spec.attention_efficiency = attention.number_or("efficiency", kDefaultAttentionEfficiency);
    spec.attention_efficiency_flash2 = attention.optional_number("efficiency_flash2");
  }

  if (const toml::table* table = top.optional_table("host")) {
    TableReader host(file, *table, "host.", {"op_overhead_us"});
    spec.host_op_overhead_us = host.optional_number("op_overhead_us");
  }

  if (const toml::table* table = top.optional_table("overlap")) {
    TableReader overlap(file, *table, "overlap.", {"compute_slowdown"});
    spec.overlap_compute_slowdown = overlap.optional_number("compute_slowdown");
  }

  if (const toml::table* table = top.optional_table("fleet")) {
    TableReader fleet(file, *table, "fleet.", {"speed_variation"});
    spec.speed_variation = fleet.optional_number("speed_variation");
  }

  const toml::array& tier_tables = top.array_of_tables("tiers");
  std::deque<std::string> tier_names;  // a deque: the spec's string_views must not move
  std::vector<TierSpec> tiers;
  for (size_t index = 0; index < tier_tables.size(); ++index) {
    tiers.push_back(read_tier(file, *tier_tables[index].as_table(), index, tier_names));
  }
  spec.tiers = tiers;

  if (ProfileProblem problem = check_profile(spec); !problem.ok()) {
    std::string key = problem.tier == ProfileProblem::kNoTier
                          ? std::string(problem.key)
                          : "tiers[" + std::to_string(problem.tier) + "]." + std::string(problem.key);
    file.fail_at(key, problem.message);
  }
  return build_profile(spec);
}

pp_hardware_profile read_toml_profile(const std::string& path, std::string_view base_document) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    throw InvalidArgument(path + ": cannot read the hardware profile: " +
                          (error ? error.message() : std::string("not a regular file")));
  }
  // A profile is a few KiB; the host checks the file's size and nesting before it names it here,
  // and this bound keeps the plugin safe on its own.
  constexpr std::uintmax_t kMaxProfileBytes = 4u << 20;
  if (std::filesystem::file_size(path, error) > kMaxProfileBytes)
    throw InvalidArgument(path + ": cannot read the hardware profile: larger than 4 MiB");
  std::ifstream in(path, std::ios::binary);
  std::string document{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (!in.is_open() || in.bad() || document.size() > kMaxProfileBytes) {
    throw InvalidArgument(path + ": cannot read the hardware profile: " + std::strerror(errno));
  }
  return parse_toml_profile(document, path, base_document);
}

}  // namespace paraplan::hardware
