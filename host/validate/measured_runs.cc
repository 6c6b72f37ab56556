#include "host/validate/measured_runs.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "host/core/edit_distance.h"
#include "host/core/errors.h"
#include "host/core/joined.h"
#include "paraplan/sdk.hpp"
#include "host/model/position_embedding_names.h"
#include "host/core/trimmed.h"
#include "host/model/precision_names.h"
#include "host/validate/csv_records.h"
#include "host/recipe/input_file.h"

namespace paraplan::host {
namespace {

// Which field of a record holds each column, from the header.
class Header {
 public:
  Header(const CsvRecord& record, const std::string& file) {
    std::vector<std::string> known = standard_columns();
    known.insert(known.end(), optional_columns().begin(), optional_columns().end());
    for (size_t index = 0; index < record.fields.size(); ++index) {
      const std::string name = trimmed(record.fields[index]);
      const std::string where = file + ":" + std::to_string(record.line) + ": header: ";
      if (std::find(known.begin(), known.end(), name) == known.end())
        throw InputError(where + "unknown column '" + name + "'" + did_you_mean(name, known));
      if (!columns_.emplace(name, index).second) throw InputError(where + "column '" + name + "' appears twice");
    }
    for (const std::string& name : standard_columns())
      if (!columns_.count(name)) throw InputError(file + ": header: missing column '" + name + "'");
    width_ = record.fields.size();
  }

  size_t width() const { return width_; }
  std::optional<size_t> index(const std::string& column) const {
    auto found = columns_.find(column);
    return found == columns_.end() ? std::nullopt : std::optional<size_t>(found->second);
  }

 private:
  std::map<std::string, size_t> columns_;
  size_t width_ = 0;
};

// Typed reads of one record's fields; a malformed one throws with the file, line and column.
class RowReader {
 public:
  RowReader(const CsvRecord& record, const Header& header, const std::string& file)
      : record_(record), header_(header), file_(file) {}

  [[noreturn]] void fail(const std::string& column, const std::string& problem) const {
    throw InputError(file_ + ":" + std::to_string(record_.line) + ": column '" + column + "': " + problem);
  }

  // The field, without surrounding spaces; "" for a blank field or an absent optional column.
  std::string text(const std::string& column) const {
    auto index = header_.index(column);
    return index ? trimmed(record_.fields[*index]) : "";
  }
  std::string required_text(const std::string& column) const {
    std::string value = text(column);
    if (value.empty()) fail(column, "is blank, but required");
    return value;
  }

  std::optional<int64_t> integer(const std::string& column, int64_t minimum, int64_t maximum = INT64_MAX) const {
    const std::string value = text(column);
    if (value.empty()) return std::nullopt;
    int64_t number = 0;
    auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (error != std::errc() || end != value.data() + value.size() || number < minimum || number > maximum)
      fail(column, "'" + value + "' is not an integer " +
                       (maximum == INT64_MAX ? ">= " + std::to_string(minimum)
                                             : "in [" + std::to_string(minimum) + ", " + std::to_string(maximum) + "]"));
    return number;
  }
  int64_t required_integer(const std::string& column, int64_t minimum) const {
    required_text(column);
    return *integer(column, minimum);
  }

  std::optional<bool> boolean(const std::string& column) const {
    const std::string value = text(column);
    if (value.empty()) return std::nullopt;
    if (value != "true" && value != "false") fail(column, "'" + value + "' is not true or false");
    return value == "true";
  }

  std::optional<std::string> choice(const std::string& column, const std::vector<std::string>& allowed) const {
    const std::string value = text(column);
    if (value.empty()) return std::nullopt;
    if (std::find(allowed.begin(), allowed.end(), value) == allowed.end())
      fail(column, "'" + value + "' is not one of " + joined(allowed, "|") + did_you_mean(value, allowed));
    return value;
  }

  // "a,b,c": names of lower-case letters and underscores; empty for a blank field.
  std::vector<std::string> name_list(const std::string& column) const {
    std::vector<std::string> names;
    const std::string value = text(column);
    std::istringstream items(value);
    for (std::string item; std::getline(items, item, ',');) {
      item = trimmed(item);
      const bool name = !item.empty() && std::all_of(item.begin(), item.end(), [](char c) { return (c >= 'a' && c <= 'z') || c == '_'; });
      if (!name) fail(column, "'" + value + "' is not a comma-separated list of names");
      names.push_back(item);
    }
    return names;
  }

  std::optional<double> optional_positive_number(const std::string& column) const {
    if (text(column).empty()) return std::nullopt;
    return positive_number(column);
  }

  double positive_number(const std::string& column) const {
    const std::string value = required_text(column);
    double number = 0;
    auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (error != std::errc() || end != value.data() + value.size() || !std::isfinite(number) || !(number > 0))
      fail(column, "'" + value + "' is not a positive number");
    return number;
  }

 private:
  const CsvRecord& record_;
  const Header& header_;
  const std::string& file_;
};

// A hardware value that names a profile file rather than a plugin (the recipe reader's rule).
bool names_profile_file(const std::string& hardware) {
  return hardware.find('/') != std::string::npos || hardware.ends_with(".toml");
}

MeasuredRun read_run(const CsvRecord& record, const Header& header, const std::string& file) {
  const RowReader row(record, header, file);
  MeasuredRun run;
  run.file = file;
  run.line = record.line;
  run.id = row.required_text("id");
  run.source = row.text("source");
  run.notes = row.text("notes");
  run.model = row.text("model");

  run.layers = row.required_integer("layers", 1);
  run.hidden = row.required_integer("hidden", 1);
  run.heads = row.required_integer("heads", 1);
  run.kv_heads = row.integer("kv_heads", 1);
  run.head_dim = row.integer("head_dim", 1);
  run.ffn_hidden = row.integer("ffn_hidden", 1);
  run.ffn_type = row.choice("ffn_type", {"gelu", "swiglu", "squared_relu"}).value_or("");
  run.vocab = row.integer("vocab", 1);
  run.seq_len = row.required_integer("seq_len", 1);
  run.moe_experts = row.integer("moe_experts", 0);
  run.moe_top_k = row.integer("moe_top_k", 1);
  run.moe_ffn_hidden = row.integer("moe_ffn_hidden", 1);
  run.moe_shared_experts = row.integer("moe_shared_experts", 0);
  run.attention = row.choice("attention", {"mha", "gqa", "mla"}).value_or("");
  run.layer_pattern = row.text("layer_pattern");
  run.position_embedding = row.choice("position_embedding", position_embedding_names());
  run.linear_bias = row.boolean("linear_bias");
  run.activation_clamp = row.optional_positive_number("activation_clamp");
  for (const std::string& column : layer_stack_columns()) {
    const bool may_be_zero = column == "dense_layers" || column == "mtp_layers";
    if (auto value = row.integer(column, may_be_zero ? 0 : 1)) run.layer_stack.emplace_back(column, *value);
  }

  run.hardware = row.required_text("hardware");
  const std::filesystem::path directory = std::filesystem::absolute(file).parent_path();
  if (names_profile_file(run.hardware)) {
    run.hardware_path = (directory / run.hardware).lexically_normal().string();
  } else if (std::error_code missing; std::filesystem::is_regular_file(directory / (run.hardware + ".toml"), missing)) {
    // A GPU no bundled profile describes, shipped as NAME.toml beside the CSV (modern.csv's
    // h100-sxm-hbm2e-96gb-500w).
    run.hardware_path = (directory / (run.hardware + ".toml")).lexically_normal().string();
  }
  run.num_gpus = row.required_integer("num_gpus", 1);
  run.gpus_per_node = row.integer("gpus_per_node", 1);

  run.tp = row.required_integer("tp", 1);
  run.pp = row.required_integer("pp", 1);
  run.dp = row.required_integer("dp", 1);
  run.cp = row.integer("cp", 1).value_or(1);
  run.ep = row.integer("ep", 1).value_or(1);
  run.vpp = row.integer("vpp", 1);
  run.sequence_parallel = row.boolean("sequence_parallel");
  run.zero_stage = row.integer("zero_stage", 0, 3);
  run.etp = row.integer("etp", 1);
  run.fsdp = row.integer("fsdp", 1);
  run.forced_balance = row.choice("moe_balance", {"forced"}).has_value();
  run.moe_dispatcher = row.choice("moe_dispatcher", {"alltoall", "allgather", "flex"});
  run.moe_a2a_overlap = row.boolean("moe_a2a_overlap");

  run.micro_batch = row.integer("micro_batch", 1);
  run.global_batch = row.required_integer("global_batch", 1);
  run.recompute = row.choice("recompute", {"none", "selective", "full"});
  row.required_text("precision");
  run.precision = *row.choice("precision", precision_names());
  run.flash_attention = row.boolean("flash_attention");
  run.tp_comm_overlap = row.boolean("tp_comm_overlap");
  run.tp_overlap_method = row.choice("tp_overlap_method", {PP_TP_OVERLAP_USERBUFFERS, PP_TP_OVERLAP_MICRO_PIPELINE});
  if (run.tp_overlap_method && run.tp_comm_overlap != true)
    row.fail("tp_overlap_method", "says how TP overlap ran, but tp_comm_overlap is not true");
  run.dp_comm_overlap = row.boolean("dp_comm_overlap");
  run.recompute_modules = row.name_list("recompute_modules");
  run.main_grads = row.choice("main_grads", {"fp32", "bf16"});
  run.master_weights = row.choice("master_weights", {"separate", "in_place"});
  run.attention_kernel = row.choice("attention_kernel", paraplan::attention_kernel_names());
  run.elementwise_kernels = row.choice("elementwise_kernels", paraplan::elementwise_kernel_names());
  run.fp8_attention = row.boolean("fp8_attention");
  run.moe_fused_mlp = row.boolean("moe_fused_mlp");
  run.cpu_offloading_num_layers = row.integer("cpu_offloading_num_layers", 1);
  run.recompute_num_layers = row.integer("recompute_num_layers", 1);
  run.cuda_graph_modules = row.name_list("cuda_graph_modules");
  run.measured_memory_gib = row.optional_positive_number("measured_memory_gib");

  const std::vector<std::string> metrics = {metric_name(Metric::kIterationSeconds),
                                            metric_name(Metric::kTokensPerSecondPerGpu)};
  row.required_text("metric");
  run.metric = *row.choice("metric", metrics) == metrics[0] ? Metric::kIterationSeconds : Metric::kTokensPerSecondPerGpu;
  run.value = row.positive_number("value");
  return run;
}

}  // namespace

const char* metric_name(Metric metric) {
  return metric == Metric::kTokensPerSecondPerGpu ? "tokens_per_s_per_gpu" : "iteration_s";
}

double MeasuredRun::iteration_seconds(double metric_value) const {
  if (metric == Metric::kIterationSeconds) return metric_value;
  return static_cast<double>(global_batch) * static_cast<double>(seq_len) /
         (metric_value * static_cast<double>(num_gpus));
}

const std::vector<std::string>& standard_columns() {
  static const std::vector<std::string> columns = {
      "id",         "source",      "confidence", "layers",      "hidden",       "heads",
      "kv_heads",   "head_dim",    "ffn_hidden", "ffn_type",    "vocab",        "seq_len",
      "moe_experts", "moe_top_k",  "moe_ffn_hidden", "moe_shared_experts", "hardware", "num_gpus",
      "gpus_per_node", "tp",       "pp",         "vpp",         "dp",           "cp",
      "ep",         "sequence_parallel", "zero_stage", "micro_batch", "global_batch", "recompute",
      "precision",  "metric",      "value",      "notes"};
  return columns;
}

const std::vector<std::string>& optional_columns() {
  static const std::vector<std::string> columns = [] {
    std::vector<std::string> all = {"flash_attention", "tp_comm_overlap", "tp_overlap_method", "dp_comm_overlap", "attention", "layer_pattern",
                                    "position_embedding", "linear_bias", "activation_clamp",
                                    "etp", "fsdp", "moe_balance", "moe_dispatcher", "moe_a2a_overlap",
                                    "cuda_graph_modules", "model",
                                    "recompute_modules", "main_grads", "master_weights", "attention_kernel", "elementwise_kernels", "fp8_attention", "moe_fused_mlp", "measured_memory_gib",
                                    "cpu_offloading_num_layers", "recompute_num_layers"};
    all.insert(all.end(), layer_stack_columns().begin(), layer_stack_columns().end());
    return all;
  }();
  return columns;
}

const std::vector<std::string>& layer_stack_columns() {
  static const std::vector<std::string> columns = {
      "q_lora_rank",   "kv_lora_rank",  "qk_nope_head_dim", "qk_rope_head_dim",     "v_head_dim",
      "dense_layers",  "moe_layer_freq", "moe_shared_ffn_hidden", "moe_router_groups", "moe_router_group_topk",
      "mtp_layers",   "sliding_window",
      "full_attention_every", "mamba_heads", "mamba_head_dim", "mamba_state",     "mamba_groups"};
  return columns;
}

std::vector<MeasuredRun> parse_measured_runs(std::string_view text, const std::string& file) {
  const std::vector<CsvRecord> records = parse_csv(text, file);
  if (records.empty()) throw InputError(file + ": header: the file is empty (a header row is required)");
  const Header header(records.front(), file);
  std::vector<MeasuredRun> runs;
  for (size_t i = 1; i < records.size(); ++i) {
    const CsvRecord& record = records[i];
    if (record.fields.size() != header.width())
      throw InputError(file + ":" + std::to_string(record.line) + ": expected " + std::to_string(header.width()) +
                       " fields, found " + std::to_string(record.fields.size()));
    runs.push_back(read_run(record, header, file));
  }
  check_unique_ids(runs);
  return runs;
}

std::vector<MeasuredRun> read_measured_runs(const std::filesystem::path& file) {
  return parse_measured_runs(read_bounded_file(file, kMaxCsvBytes, "CSV of measured runs"), file.string());
}

void check_unique_ids(const std::vector<MeasuredRun>& runs) {
  std::map<std::string, const MeasuredRun*> seen;
  for (const MeasuredRun& run : runs) {
    auto [first, inserted] = seen.emplace(run.id, &run);
    if (!inserted)
      throw InputError(run.file + ":" + std::to_string(run.line) + ": column 'id': '" + run.id +
                       "' is already the id of the row at " + first->second->file + ":" +
                       std::to_string(first->second->line));
  }
}

}  // namespace paraplan::host
