// paraplan/host/validate/measured_runs.h: measured training runs, one per CSV row, read and checked.
//
// The columns are those of recipes/validation/published.csv (their meanings: the MeasuredRun
// fields below); every one must be in the header, in any order.
// Optional columns that may follow: flash_attention, tp_comm_overlap, tp_overlap_method,
// dp_comm_overlap (blank: flash attention on, TP overlap off and as userbuffers run it, DP overlap
// on), and modern.csv's (recipes/validation/
// README.md): the layer stack, each column the [model] key of its name (position_embedding,
// linear_bias and activation_clamp too), etp, fsdp, moe_balance,
// recompute_modules, main_grads, master_weights, attention_kernel and measured_memory_gib, and paraplan's four from modern.csv's notes:
// cpu_offloading_num_layers, recompute_num_layers, elementwise_kernels, fp8_attention, moe_fused_mlp,
// moe_dispatcher (alltoall | allgather | flex), moe_a2a_overlap and cuda_graph_modules, and `model` (its name, for
// the report's per-model accuracy). Every field is checked here, so a malformed
// file fails before anything is evaluated, with "FILE:LINE: column 'tp': 'x' is not an integer
// >= 1" (InputError, exit 3). Whether a well-formed row describes a plan that can run is decided
// later, row by row (run_recipe.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace paraplan::host {

// measured_memory_gib's unit.
inline constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;

enum class Metric { kIterationSeconds, kTokensPerSecondPerGpu };

// "iteration_s" or "tokens_per_s_per_gpu", as the CSV writes it.
const char* metric_name(Metric metric);

struct MeasuredRun {
  std::string file;  // the CSV as named on the command line
  size_t line = 0;   // where the row starts in it
  std::string id, source, notes;
  std::string model;  // the model's name (optional column `model`; blank: not given), for the report's slices

  // [model]
  int64_t layers = 0, hidden = 0, heads = 0;
  std::optional<int64_t> kv_heads, head_dim, ffn_hidden;
  std::string ffn_type;  // "" (the recipe's default), "gelu" or "swiglu"
  std::optional<int64_t> vocab;  // blank: not published, and the row cannot be evaluated
  int64_t seq_len = 0;
  std::optional<int64_t> moe_experts, moe_top_k, moe_ffn_hidden, moe_shared_experts;
  // The layer stack (host/model/layer_stack.h): "" or the column's text, and the integer
  // columns given, by name (layer_stack_columns()).
  std::string attention, layer_pattern;
  std::vector<std::pair<std::string, int64_t>> layer_stack;
  // The model's own features (docs/recipes.md): position_embedding (rope | yarn |
  // learned_absolute | none; blank: not given), linear_bias, activation_clamp.
  std::optional<std::string> position_embedding;
  std::optional<bool> linear_bias;
  std::optional<double> activation_clamp;
  bool layered() const { return !attention.empty() || !layer_pattern.empty() || !layer_stack.empty(); }

  // [cluster]
  std::string hardware;       // as written: a profile name or a profile file
  std::string hardware_path;  // a profile file (the column names one, or NAME.toml lies beside the CSV): absolute
  int64_t num_gpus = 0;
  std::optional<int64_t> gpus_per_node;

  // Parallelism as published; an empty optional is a knob the source did not publish.
  int64_t tp = 1, pp = 1, dp = 1, cp = 1, ep = 1;
  std::optional<int64_t> vpp;
  std::optional<bool> sequence_parallel;
  std::optional<int64_t> zero_stage;
  std::optional<int64_t> etp;   // Megatron-LM's --expert-tensor-parallel-size
  std::optional<int64_t> fsdp;  // with zero_stage 3: ranks one shard group spans (the rest replicate)
  bool forced_balance = false;  // moe_balance = forced: experts got a uniform share of tokens
  std::optional<std::string> moe_dispatcher;  // Megatron's --moe-token-dispatcher-type (flex: DeepEP/HybridEP)
  std::optional<bool> moe_a2a_overlap;        // Megatron's --overlap-moe-expert-parallel-comm

  // [training]
  std::optional<int64_t> micro_batch;
  int64_t global_batch = 0;
  std::optional<std::string> recompute;  // none | selective | full
  std::string precision;                 // a name of host/model/precision_names.h
  std::optional<bool> flash_attention, tp_comm_overlap, dp_comm_overlap;
  std::vector<std::string> recompute_modules;  // Megatron-LM's --recompute-modules
  std::optional<std::string> main_grads;       // fp32 | bf16 (Megatron's grad_reduce_in_fp32); blank: fp32
  std::optional<std::string> master_weights;   // separate | in_place (PyTorch FSDP's fp32 weights); blank: separate
  std::optional<std::string> attention_kernel; // tuned | flash2 | triton (pp_attention_kernel); blank: tuned
  std::optional<std::string> tp_overlap_method;  // userbuffers | micro_pipeline (tp's overlap_method); blank: userbuffers
  std::optional<std::string> elementwise_kernels;  // fused | eager (pp_elementwise_kernels); blank: fused
  std::optional<bool> fp8_attention;  // Megatron-Core's fp8_dot_product_attention; blank: false
  std::optional<bool> moe_fused_mlp;  // Megatron-Core's use_transformer_engine_op_fuser for the experts; blank: false
  std::optional<int64_t> cpu_offloading_num_layers;  // Megatron-LM's --cpu-offloading-num-layers; blank: none
  std::optional<int64_t> recompute_num_layers;  // with recompute full: only each chunk's first N layers; blank: searched
  std::vector<std::string> cuda_graph_modules; // Megatron-LM's --cuda-graph-modules, or full_iteration
  std::optional<double> measured_memory_gib;   // peak memory per GPU the source reports

  Metric metric = Metric::kIterationSeconds;
  double value = 0;  // the measured metric

  // The iteration time a tokens-per-second figure stands for:
  // global_batch x seq_len / (tokens_per_s_per_gpu x num_gpus). An iteration time as it is.
  double iteration_seconds(double metric_value) const;
};

// The header every file must have, in published.csv's order, and the optional columns.
const std::vector<std::string>& standard_columns();
const std::vector<std::string>& optional_columns();
// The integer layer-stack columns, each a [model] key of the same name.
const std::vector<std::string>& layer_stack_columns();

// Every row of one CSV file. Throws InputError for a file that cannot be read, a header that
// lacks a column or names an unknown one, a row of the wrong width, a malformed field, or an id
// already used in the file.
std::vector<MeasuredRun> read_measured_runs(const std::filesystem::path& file);
std::vector<MeasuredRun> parse_measured_runs(std::string_view text, const std::string& file);

// Throws InputError naming both rows when two runs (of any of the files) share an id.
void check_unique_ids(const std::vector<MeasuredRun>& runs);

}  // namespace paraplan::host
