// paraplan/sdk.hpp: the C++ authoring layer. Header-only, compiled into the plugin.
//
// A plugin author writes an ordinary class and one macro; this header generates the C entry point,
// the parameter schema, the create/destroy pairs and trampolines that turn every C++ exception
// into a pp_status plus message, so nothing but plain C ever crosses the boundary.
//
//   class Doubler : public paraplan::Strategy {
//    public:
//     static paraplan::PluginInfo info() {
//       return {"doubler", "1.0.0", "Doubles every GEMM (an example)",
//               {paraplan::ParamSpec::Float("factor", 2.0, "multiplier").range(1.0, 8.0)}};
//     }
//     explicit Doubler(const paraplan::Params& params) : factor_(params.float_value("factor")) {}
//     void apply(const paraplan::StrategyContext& context, paraplan::PlanEditor& plan) override {...}
//    private:
//     double factor_;
//   };
//   PARAPLAN_PLUGIN(Doubler)
//
// A strategy may also declare what `paraplan search` tries (strategy.h, search cases):
//     static std::vector<paraplan::SearchCase> search_space() {
//       return {paraplan::SearchCase::degrees(2).choose("factor", {"2", "4"})};
//     }
//
// Any plugin may log through the host (ABI 1.5): paraplan::log_info("read 12 entries"); messages
// go to stderr behind -v/-q, prefixed with the plugin's name (host.h). Never print to stdout: it
// carries the report.
//
// Hardware plugins derive from paraplan::Hardware, executors from paraplan::Executor. A hardware
// class may define `double gemm_time(double m, double n, double k, pp_dtype)` and/or
// `double collective_time(pp_collective, double bytes, int64_t group, int64_t stride)`; when it
// does, the host uses them instead of the default cost model.
#ifndef PARAPLAN_SDK_HPP
#define PARAPLAN_SDK_HPP

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "paraplan/plugin.h"
#include "paraplan/token_routing.hpp"

namespace paraplan {

namespace detail {
// The host's services for this plugin, set by attach_host (hidden: one per plugin library, even
// when a plugin is built with default visibility).
__attribute__((visibility("hidden"))) inline const pp_host_v1* host_services = nullptr;
__attribute__((visibility("hidden"))) inline const char* plugin_name = "plugin";
}  // namespace detail

// Sends one line to the host's log (paraplan/host.h). Before the host attached (or under a host
// older than ABI 1.5) the line goes to stderr in the host's format.
inline void log(pp_log_level level, const std::string& message) noexcept {
  if (const pp_host_v1* host = detail::host_services; host && host->log) {
    host->log(host->context, level, message.c_str());
    return;
  }
  const char* names[] = {"debug", "info", "warning", "error"};
  const int index = level >= PP_LOG_DEBUG && level <= PP_LOG_ERROR ? level - 1 : 3;
  if (level >= PP_LOG_WARNING) std::fprintf(stderr, "paraplan: %s: %s: %s\n", names[index], detail::plugin_name, message.c_str());
}
// In a process whose report is not wanted (all MPI ranks but one, say): the host prints none.
// Returns false under a host older than ABI 1.5, which cannot be asked.
inline bool withhold_report() noexcept {
  const pp_host_v1* host = detail::host_services;
  if (!host || host->struct_size < sizeof(pp_host_v1) || !host->withhold_report) return false;
  host->withhold_report(host->context);
  return true;
}
inline void log_debug(const std::string& message) noexcept { log(PP_LOG_DEBUG, message); }
inline void log_info(const std::string& message) noexcept { log(PP_LOG_INFO, message); }
inline void log_warning(const std::string& message) noexcept { log(PP_LOG_WARNING, message); }
inline void log_error(const std::string& message) noexcept { log(PP_LOG_ERROR, message); }

// Throw to report a failure with a specific status; any other exception becomes
// PP_ERROR_INTERNAL with its what() as the message.
class Error : public std::runtime_error {
 public:
  Error(pp_status status, const std::string& message) : std::runtime_error(message), status_(status) {}
  pp_status status() const { return status_; }

 private:
  pp_status status_;
};

// The plan is valid input but cannot work (e.g. "tp=3 must divide heads=32").
class ConstraintError : public Error {
 public:
  explicit ConstraintError(const std::string& message) : Error(PP_ERROR_CONSTRAINT, message) {}
};

class InvalidArgument : public Error {
 public:
  explicit InvalidArgument(const std::string& message) : Error(PP_ERROR_INVALID_ARGUMENT, message) {}
};

// One declared recipe key. Build with the named constructors, refine with range()/doc().
struct ParamSpec {
  std::string name;
  pp_param_type type = PP_PARAM_INT;
  std::string doc;
  int64_t default_int = 0;
  double default_float = 0.0;
  bool default_bool = false;
  std::string default_string;
  bool has_min = false, has_max = false;
  double min = 0.0, max = 0.0;
  std::vector<std::string> enum_values;

  static ParamSpec Int(std::string name, int64_t value, std::string doc) {
    ParamSpec spec = named(std::move(name), PP_PARAM_INT, std::move(doc));
    spec.default_int = value;
    return spec;
  }
  static ParamSpec Float(std::string name, double value, std::string doc) {
    ParamSpec spec = named(std::move(name), PP_PARAM_FLOAT, std::move(doc));
    spec.default_float = value;
    return spec;
  }
  static ParamSpec Bool(std::string name, bool value, std::string doc) {
    ParamSpec spec = named(std::move(name), PP_PARAM_BOOL, std::move(doc));
    spec.default_bool = value;
    return spec;
  }
  static ParamSpec String(std::string name, std::string value, std::string doc) {
    ParamSpec spec = named(std::move(name), PP_PARAM_STRING, std::move(doc));
    spec.default_string = std::move(value);
    return spec;
  }
  static ParamSpec Enum(std::string name, std::vector<std::string> values, std::string value,
                        std::string doc) {
    ParamSpec spec = named(std::move(name), PP_PARAM_ENUM, std::move(doc));
    spec.enum_values = std::move(values);
    spec.default_string = std::move(value);
    return spec;
  }
  ParamSpec& range(double low, double high) {
    has_min = has_max = true;
    min = low;
    max = high;
    return *this;
  }
  ParamSpec& at_least(double low) {
    has_min = true;
    min = low;
    return *this;
  }

 private:
  static ParamSpec named(std::string name, pp_param_type type, std::string doc) {
    ParamSpec spec;
    spec.name = std::move(name);
    spec.type = type;
    spec.doc = std::move(doc);
    return spec;
  }
};

// One region of a strategy's search space (pp_search_case): degrees from min_degree to
// max_degree (0: no limit) that divide what the strategy may take, times every combination of
// the listed parameter values (written as in a recipe).
struct SearchCase {
  int64_t min_degree = 1;
  int64_t max_degree = 0;
  std::vector<std::pair<std::string, std::vector<std::string>>> choices;

  static SearchCase degrees(int64_t min, int64_t max = 0) {
    SearchCase region;
    region.min_degree = min;
    region.max_degree = max;
    return region;
  }
  SearchCase& choose(std::string param, std::vector<std::string> values) {
    choices.emplace_back(std::move(param), std::move(values));
    return *this;
  }
};

struct PluginInfo {
  std::string name;
  std::string version;
  std::string description;
  std::vector<ParamSpec> params;
};

// Typed access to the validated, defaults-filled parameters the host passes in.
class Params {
 public:
  explicit Params(const pp_param_set* set) : set_(set) {}
  int64_t int_value(std::string_view name) const { return find(name, PP_PARAM_INT).int_value; }
  double float_value(std::string_view name) const { return find(name, PP_PARAM_FLOAT).float_value; }
  bool bool_value(std::string_view name) const { return find(name, PP_PARAM_BOOL).bool_value != 0; }
  std::string string_value(std::string_view name) const {
    const pp_param_value& value = find(name, PP_PARAM_STRING);
    return value.string_value ? value.string_value : "";
  }

 private:
  const pp_param_value& find(std::string_view name, pp_param_type type) const {
    for (uint32_t i = 0; set_ && i < set_->count; ++i) {
      const pp_param_value& value = set_->values[i];
      bool same_type = value.type == type || (type == PP_PARAM_STRING && value.type == PP_PARAM_ENUM);
      if (name == value.name && same_type) return value;
    }
    throw InvalidArgument("parameter '" + std::string(name) + "' is not in the plugin's schema");
  }
  const pp_param_set* set_;
};

struct StrategyContext {
  int64_t degree;
  const pp_model& model;
  const pp_training& training;
  const pp_cluster& cluster;
  bool wants_schedule;  // false: the executor ignores schedule steps (pp_strategy_context)
};

// Copies a string into a fixed-size ABI name field, always NUL-terminated.
template <size_t N>
inline void copy_name(char (&field)[N], std::string_view text) {
  size_t length = text.size() < N - 1 ? text.size() : N - 1;
  std::memcpy(field, text.data(), length);
  field[length] = '\0';
}

inline pp_op make_op(pp_op_kind kind, pp_phase phase, pp_scope scope, std::string_view name,
                     std::string_view owner) {
  pp_op op{};
  op.struct_size = sizeof(pp_op);
  op.kind = kind;
  op.phase = phase;
  op.scope = scope;
  op.frequency = PP_PER_MICRO_BATCH;
  op.dtype = PP_DTYPE_BF16;
  op.axis = -1;
  op.repeat = 1;
  copy_name(op.name, name);
  copy_name(op.owner, owner);
  return op;
}

inline pp_memory_item make_memory_item(pp_memory_kind kind, pp_scope scope, std::string_view name,
                                       std::string_view owner, double bytes) {
  pp_memory_item item{};
  item.struct_size = sizeof(pp_memory_item);
  item.kind = kind;
  item.scope = scope;
  copy_name(item.name, name);
  copy_name(item.owner, owner);
  item.bytes = bytes;
  return item;
}

// The layers of chunk `chunk` of a stage that holds `layers` in `chunks` model chunks when only
// the stage's count is known: split in order as evenly as they go, the first chunks taking one
// more each until the remainder is spent. The host fills a 1.5 strategy's stages so, and an
// exporter that writes per-stage counts relies on the engine splitting them so.
inline int64_t even_chunk_layers(int64_t layers, int64_t chunks, int64_t chunk) {
  return layers / chunks + (chunk < layers % chunks ? 1 : 0);
}

// The virtual stage (place in the model's layer order, 0 first) that chunk `chunk` of pipeline
// stage `stage` runs: Megatron-LM's interleaving loops the chunks round the stages (c·p + s);
// DualPipe-V folds two chunks into a V, the second coming back from the last stage (2p - 1 - s).
inline int64_t virtual_stage_of(const pp_pipeline& pipeline, int64_t stage, int64_t chunk) {
  const int64_t p = pipeline.stages;
  if (pipeline.schedule == PP_SCHEDULE_DUALPIPE_V && chunk == 1) return 2 * p - 1 - stage;
  return chunk * p + stage;
}

// Its inverse: the stage and chunk that run virtual stage `virtual_stage`.
struct StageChunk {
  int64_t stage, chunk;
};
inline StageChunk stage_chunk_of(const pp_pipeline& pipeline, int64_t virtual_stage) {
  const int64_t p = pipeline.stages;
  const StageChunk looped{virtual_stage % p, virtual_stage / p};
  if (pipeline.schedule == PP_SCHEDULE_DUALPIPE_V && looped.chunk == 1) return {p - 1 - looped.stage, 1};
  return looped;
}

// Whether a schedule splits each backward pass into B (input gradient, PP_PHASE_BACKWARD) and W
// (weight gradient, PP_PHASE_WEIGHT_GRADIENT) steps: ZB-H1 and DualPipe-V do.
inline bool splits_backward(pp_schedule_kind schedule) {
  return schedule == PP_SCHEDULE_ZERO_BUBBLE || schedule == PP_SCHEDULE_DUALPIPE_V;
}

// The pp_recompute_module bits a training recomputes: every one under full recomputation, the
// recipe's modules under selective (none named: the attention core, Korthikanti et al.'s
// selective recompute), none otherwise. A 1.5 host's pp_training has no modules: the core.
inline uint32_t recomputed_modules(const pp_training& training) {
  switch (training.recompute) {
    case PP_RECOMPUTE_FULL: return 0xFFFFFFFFu;
    case PP_RECOMPUTE_SELECTIVE:
      return training.struct_size >= offsetof(pp_training, recompute_modules) + sizeof(uint32_t) &&
                     training.recompute_modules != 0
                 ? training.recompute_modules
                 : uint32_t{PP_RECOMPUTE_CORE_ATTN};
    default: return 0;
  }
}

// Bytes a weight is kept in between steps (pp_master_weights): 2 with a separate fp32 master copy
// in the optimizer state, 4 when the fp32 weights are the master. Gathered and computed with, a
// weight is always 2 bytes (kComputeWeightBytes). An older host's training has no field: separate.
inline constexpr double kComputeWeightBytes = 2.0;
inline bool master_weights_in_place(const pp_training& training) {
  return training.struct_size >= offsetof(pp_training, master_weights) + sizeof(pp_master_weights) &&
         training.master_weights == PP_MASTER_WEIGHTS_IN_PLACE;
}
inline double stored_weight_bytes(const pp_training& training) { return master_weights_in_place(training) ? 4.0 : 2.0; }

// An enum's names in recipes and validation files, indexed by value, as a list (for a reader's
// choices) and back to the value (`otherwise` for a name not in the table).
template <size_t N>
std::vector<std::string> names_of(const char* const (&names)[N]) {
  return {std::begin(names), std::end(names)};
}
template <typename Enum, size_t N>
Enum value_named(const char* const (&names)[N], std::string_view name, Enum otherwise) {
  for (size_t i = 0; i < N; ++i)
    if (name == names[i]) return static_cast<Enum>(i);
  return otherwise;
}

// training.attention_kernel's names in recipes and validation files, by pp_attention_kernel value.
inline constexpr const char* kAttentionKernelNames[] = {"tuned", "flash2", "triton"};
inline std::vector<std::string> attention_kernel_names() { return names_of(kAttentionKernelNames); }
inline pp_attention_kernel attention_kernel_named(std::string_view name) {
  return value_named(kAttentionKernelNames, name, PP_ATTENTION_KERNEL_TUNED);
}

// training.elementwise_kernels' names in recipes and validation files, by value; an older host's
// training has no field: fused.
inline constexpr const char* kElementwiseKernelNames[] = {"fused", "eager"};
inline std::vector<std::string> elementwise_kernel_names() { return names_of(kElementwiseKernelNames); }
inline pp_elementwise_kernels elementwise_kernels_named(std::string_view name) {
  return value_named(kElementwiseKernelNames, name, PP_ELEMENTWISE_FUSED);
}
inline pp_elementwise_kernels elementwise_kernels(const pp_training& training) {
  return training.struct_size >= offsetof(pp_training, elementwise_kernels) + sizeof(pp_elementwise_kernels)
             ? training.elementwise_kernels
             : PP_ELEMENTWISE_FUSED;
}

// Attention in FP8 (pp_training.fp8_attention); an older host's training has no field: no.
inline bool fp8_attention(const pp_training& training) {
  return training.struct_size >= offsetof(pp_training, fp8_attention) + sizeof(int32_t) && training.fp8_attention != 0;
}

// The routed experts as one fused grouped MLP (pp_training.moe_fused_mlp); an older host's
// training has no field: separate kernels.
inline bool moe_fused_mlp(const pp_training& training) {
  return training.struct_size >= offsetof(pp_training, moe_fused_mlp) + sizeof(int32_t) && training.moe_fused_mlp != 0;
}

// The attention kernel the recipe runs (pp_attention_kernel); an older host's training has no
// field: the GPU's tuned kernel.
inline pp_attention_kernel attention_kernel(const pp_training& training) {
  return training.struct_size >= offsetof(pp_training, attention_kernel) + sizeof(pp_attention_kernel)
             ? training.attention_kernel
             : PP_ATTENTION_KERNEL_TUNED;
}

// With full recomputation, how many layers of each pipeline chunk re-run their forward in
// backward: the chunk's first N (pp_training.recompute_num_layers, Megatron-LM's block method).
// 0: every layer does, which is also the answer for any other recompute setting and for an older
// host's training, which has no field.
inline int64_t recompute_num_layers(const pp_training& training) {
  if (training.recompute != PP_RECOMPUTE_FULL ||
      training.struct_size < offsetof(pp_training, recompute_num_layers) + sizeof(int64_t))
    return 0;
  return std::max<int64_t>(0, training.recompute_num_layers);
}

// How many layers of each pipeline chunk copy their activations to host memory and back
// (pp_training.cpu_offloading_num_layers): the chunk's first N; 0 for none or an older host.
inline int64_t cpu_offloading_num_layers(const pp_training& training) {
  if (training.struct_size < offsetof(pp_training, cpu_offloading_num_layers) + sizeof(int64_t)) return 0;
  return std::max<int64_t>(0, training.cpu_offloading_num_layers);
}

// The layers of each chunk treated apart from the rest, the chunk's first N: recomputed under
// partial recomputation, offloaded under activation offloading (Megatron-LM allows one or the
// other); 0 when every layer is treated alike.
inline int64_t first_layers_apart(const pp_training& training) {
  const int64_t offloaded = cpu_offloading_num_layers(training);
  return offloaded > 0 ? offloaded : recompute_num_layers(training);
}

// Megatron-LM's --recompute-modules names of the pp_recompute_module bits, in bit order: the
// recipe's `recompute_modules` and what the Megatron exporter writes; then torchtitan's op policy
// (1.8), which Megatron-LM has no module for.
struct RecomputeModuleName {
  std::string_view name;
  uint32_t module;
};
inline constexpr RecomputeModuleName kRecomputeModuleNames[] = {
    {"core_attn", PP_RECOMPUTE_CORE_ATTN}, {"mla_up_proj", PP_RECOMPUTE_MLA_UP_PROJ},
    {"layernorm", PP_RECOMPUTE_LAYERNORM}, {"moe_act", PP_RECOMPUTE_MOE_ACT},
    {"moe", PP_RECOMPUTE_MOE},             {"mlp", PP_RECOMPUTE_MLP},
    {"torchtitan_op", PP_RECOMPUTE_TORCHTITAN_OP},
};

// A mesh axis's parent as the top-level axes it subdivides: "dp" is one axis, "tp*cp*dp" a region
// of neighbouring axes, innermost first (plan.h, pp_mesh_axis), whose ranks its children share.
inline std::vector<std::string_view> axis_region(const char* parent) {
  std::vector<std::string_view> names;
  std::string_view rest(parent ? parent : "");
  while (!rest.empty()) {
    const size_t star = rest.find('*');
    names.push_back(rest.substr(0, star));
    if (star == std::string_view::npos) break;
    rest.remove_prefix(star + 1);
  }
  return names;
}

// Whether an op's or memory item's `name` starts with `prefix` (names.h: PP_OP_PREFIX_PARAM),
// letter by letter up to the first difference, without measuring the name (searches ask this of
// every op of every plan).
inline bool has_prefix(const char* name, std::string_view prefix) {
  // A shorter name's NUL differs from the prefix's letter there, so no read passes its end.
  for (size_t i = 0; i < prefix.size(); ++i)
    if (name[i] != prefix[i]) return false;
  return true;
}

// Whether an op's or memory item's `name` is `literal` (names.h), compared as has_prefix does.
inline bool is_named(const char* name, std::string_view literal) {
  return has_prefix(name, literal) && name[literal.size()] == '\0';
}

// The model's kinds of layer (ABI 1.6; model.h), indexed with the host's stride.
class LayerKinds {
 public:
  explicit LayerKinds(const pp_model& model) : model_(model) {}
  uint32_t size() const { return model_.layer_kind_count; }
  const pp_layer_kind& operator[](uint32_t index) const {
    const auto* base = reinterpret_cast<const unsigned char*>(model_.layer_kinds);
    return *reinterpret_cast<const pp_layer_kind*>(base + static_cast<size_t>(index) * model_.layer_kind_stride);
  }
  // The kind of the model's `index`-th layer (0 = first; MTP modules after the decoder layers).
  uint32_t kind_of_layer(int64_t index) const { return model_.layer_sequence[index]; }

 private:
  const pp_model& model_;
};

// Fields appended to the 1.6 layer stack after it first shipped, read only where the struct holds
// them (from a host built before them: no biases, no clamp, positions not given).
inline bool linear_bias(const pp_layer_kind& kind) {
  return kind.struct_size >= offsetof(pp_layer_kind, linear_bias) + sizeof(kind.linear_bias) && kind.linear_bias != 0;
}
inline double activation_clamp(const pp_layer_kind& kind) {
  return kind.struct_size >= offsetof(pp_layer_kind, activation_clamp) + sizeof(double) ? kind.activation_clamp : 0.0;
}
inline pp_position_embedding position_embedding(const pp_model& model) {
  return model.struct_size >= offsetof(pp_model, position_embedding) + sizeof(model.position_embedding)
             ? model.position_embedding
             : PP_POSITION_EMBEDDING_UNSPECIFIED;
}

// Megatron-LM's --position-embedding-type names of pp_position_embedding: the recipe's
// `position_embedding` and what the Megatron exporter writes.
struct PositionEmbeddingName {
  std::string_view name;
  pp_position_embedding kind;
};
inline constexpr PositionEmbeddingName kPositionEmbeddingNames[] = {
    {"rope", PP_POSITION_EMBEDDING_ROPE},
    {"yarn", PP_POSITION_EMBEDDING_YARN},
    {"learned_absolute", PP_POSITION_EMBEDDING_LEARNED_ABSOLUTE},
    {"none", PP_POSITION_EMBEDDING_NONE},
};
inline std::string_view position_embedding_name(pp_position_embedding kind) {
  for (const PositionEmbeddingName& entry : kPositionEmbeddingNames)
    if (entry.kind == kind) return entry.name;
  return "";  // unspecified
}

// The name a recipe gives each pp_precision ([training] precision, docs/recipes.md), for
// plugins that report or write one.
struct PrecisionName {
  std::string_view name;
  pp_precision precision;
};
inline constexpr PrecisionName kPrecisionNames[] = {
    {"bf16", PP_PRECISION_BF16},   {"fp16", PP_PRECISION_FP16},   {"fp8", PP_PRECISION_FP8},
    {"mxfp8", PP_PRECISION_MXFP8}, {"nvfp4", PP_PRECISION_NVFP4},
};
inline std::string_view precision_name(pp_precision precision) {
  for (const PrecisionName& entry : kPrecisionNames)
    if (entry.precision == precision) return entry.name;
  return "unknown";
}

// Whether the recipe's GEMMs run in an 8-bit or narrower format (Transformer Engine's FP8,
// MXFP8 or NVFP4 recipes), the activations and the layers outside it staying 16-bit.
inline bool quantised_precision(pp_precision precision) {
  return precision == PP_PRECISION_FP8 || precision == PP_PRECISION_MXFP8 || precision == PP_PRECISION_NVFP4;
}

// The name pp's `schedule` parameter gives each pp_schedule_kind, for plugins that report one.
struct ScheduleName {
  std::string_view name;
  pp_schedule_kind kind;
};
inline constexpr ScheduleName kScheduleNames[] = {
    {"none", PP_SCHEDULE_NONE},
    {"gpipe", PP_SCHEDULE_GPIPE},
    {"1f1b", PP_SCHEDULE_1F1B},
    {"interleaved-1f1b", PP_SCHEDULE_INTERLEAVED_1F1B},
    {"zero-bubble", PP_SCHEDULE_ZERO_BUBBLE},
    {"dualpipe-v", PP_SCHEDULE_DUALPIPE_V},
};
inline std::string_view schedule_name(pp_schedule_kind kind) {
  for (const ScheduleName& entry : kScheduleNames)
    if (entry.kind == kind) return entry.name;
  return "unknown";
}

// Why `model` is more than a uniform transformer (one kind of layer: attention over the full
// sequence, a dense or MoE MLP whose shared experts are as wide as the routed ones, no
// multi-token prediction), or "" when it is one: what a consumer that reads only the 1.5 model
// fields (an exporter writing an engine's flags) can express faithfully. Group-limited routing is
// in no 1.5 field either; a consumer that writes it itself (the router's groups, from the kind's
// router_groups) says so with `writes_router_groups`.
inline std::string beyond_uniform_transformer(const pp_model& model, bool writes_router_groups = false) {
  if (model.layer_kind_count > 1) return std::to_string(model.layer_kind_count) + " kinds of layer";
  if (model.layer_kind_count == 0 || !model.layer_kinds) return "";
  const pp_layer_kind& kind = LayerKinds(model)[0];
  if (kind.mixer != PP_MIXER_ATTENTION) return kind.mixer == PP_MIXER_MLA ? "multi-head latent attention" : "Mamba-2 layers";
  if (kind.sliding_window > 0) return "sliding-window attention";
  if (kind.mlp == PP_MLP_NONE) return "layers without an MLP";
  if (kind.mlp == PP_MLP_MOE && kind.shared_ffn_hidden != kind.shared_experts * kind.expert_ffn_hidden)
    return "shared experts of their own width";
  if (kind.mlp == PP_MLP_MOE && !writes_router_groups && routing::of(kind).groups > 1) return "group-limited routing";
  if (kind.ffn_type == PP_FFN_SQUARED_RELU) return "a squared-ReLU MLP";
  if (model.mtp_layers > 0) return "multi-token prediction";
  if (linear_bias(kind)) return "biases on the linear layers";
  if (activation_clamp(kind) > 0) return "a clamped GLU";
  if (position_embedding(model) == PP_POSITION_EMBEDDING_YARN) return "YaRN-scaled rotary embeddings";
  return "";
}

// Which of a chunk's layers an op or memory item of scope LAYER counts on (PlanView::op_share):
// all of them, or where the chunk's first N layers are set apart (first_layers_apart: partially
// recomputed or offloaded) those first ones or the rest.
enum class LayerShare { kAll, kFirst, kRest };

// A read-only plan snapshot with spans instead of pointer+count pairs.
class PlanView {
 public:
  explicit PlanView(const pp_plan_view_v1& view) : view_(view) {}
  const pp_model& model() const { return *view_.model; }
  const pp_training& training() const { return *view_.training; }
  const pp_cluster& cluster() const { return *view_.cluster; }
  const pp_pipeline& pipeline() const { return *view_.pipeline; }
  std::span<const pp_mesh_axis> axes() const { return {view_.axes, view_.axis_count}; }
  std::span<const pp_op> ops() const { return {view_.ops, view_.op_count}; }
  std::span<const pp_memory_item> memory() const { return {view_.memory, view_.memory_count}; }
  std::span<const pp_stage> stages() const { return {view_.stages, view_.stage_count}; }
  std::span<const pp_schedule_step> steps() const { return {view_.steps, view_.step_count}; }
  int64_t data_parallel_size() const { return view_.data_parallel_size; }
  // Index of the named axis, or -1.
  int32_t axis_index(std::string_view name) const {
    for (uint32_t i = 0; i < view_.axis_count; ++i)
      if (name == view_.axes[i].name) return static_cast<int32_t>(i);
    return -1;
  }
  // The index of the first op named `name` (names.h) in `phase`, or -1.
  int64_t find_op(std::string_view name, pp_phase phase) const {
    for (uint32_t i = 0; i < view_.op_count; ++i)
      if (view_.ops[i].phase == phase && is_named(view_.ops[i].name, name)) return i;
    return -1;
  }
  // The indices of every op named `name`, all phases, in plan order.
  std::vector<uint32_t> ops_named(std::string_view name) const {
    std::vector<uint32_t> found;
    for (uint32_t i = 0; i < view_.op_count; ++i)
      if (is_named(view_.ops[i].name, name)) found.push_back(i);
    return found;
  }
  // The index of the memory item named `name` in `scope`, or -1.
  int64_t find_memory(std::string_view name, pp_scope scope) const {
    for (uint32_t i = 0; i < view_.memory_count; ++i)
      if (view_.memory[i].scope == scope && name == view_.memory[i].name) return i;
    return -1;
  }
  // The degree of the named axis, 1 when the plan has none.
  int64_t axis_degree(std::string_view name) const {
    const int32_t index = axis_index(name);
    return index < 0 ? 1 : view_.axes[static_cast<uint32_t>(index)].degree;
  }
  // The layer stack (ABI 1.6): the model's kinds, the kind each LAYER op and item belongs to
  // (PP_EVERY_LAYER_KIND: all of them), and the layers of each kind on each stage and chunk.
  LayerKinds layer_kinds() const { return LayerKinds(*view_.model); }
  uint32_t op_layer_kind(size_t op) const { return view_.op_layer_kinds[op]; }
  uint32_t memory_layer_kind(size_t item) const { return view_.memory_layer_kinds[item]; }
  int64_t layers_on_chunk(size_t stage, size_t chunk, uint32_t kind) const {
    const size_t kinds = view_.layer_kind_count, virtual_stage = chunk * view_.stage_count + stage;
    if (kind == PP_EVERY_LAYER_KIND) {
      int64_t total = 0;
      for (size_t k = 0; k < kinds; ++k) total += view_.layer_counts[virtual_stage * kinds + k];
      return total;
    }
    return view_.layer_counts[virtual_stage * kinds + kind];
  }
  // With no layers set apart every share is all of them.
  int64_t layers_on_chunk(size_t stage, size_t chunk, uint32_t kind, LayerShare share) const {
    if (share == LayerShare::kAll || !splits_layers()) return layers_on_chunk(stage, chunk, kind);
    const int64_t first = first_layers_on_chunk(stage, chunk, kind);
    return share == LayerShare::kFirst ? first : layers_on_chunk(stage, chunk, kind) - first;
  }
  int64_t layers_on_stage(size_t stage, uint32_t kind, LayerShare share = LayerShare::kAll) const {
    int64_t total = 0;
    const size_t chunks = static_cast<size_t>(view_.pipeline->virtual_stages);
    for (size_t chunk = 0; chunk < chunks; ++chunk) total += layers_on_chunk(stage, chunk, kind, share);
    return total;
  }
  // How often an op or item of `scope` and layer kind `kind` counts on `stage` per micro-batch:
  // the stage's layers of that kind (LAYER; `share` of them), 1 or 0 (EMBEDDING, HEAD), 1 (STEP).
  double multiplicity(pp_scope scope, uint32_t kind, size_t stage, LayerShare share = LayerShare::kAll) const {
    const pp_stage& held = view_.stages[stage];
    switch (scope) {
      case PP_SCOPE_LAYER: return static_cast<double>(layers_on_stage(stage, kind, share));
      case PP_SCOPE_EMBEDDING: return held.has_embedding ? 1.0 : 0.0;
      case PP_SCOPE_HEAD: return held.has_head ? 1.0 : 0.0;
      case PP_SCOPE_STEP: return 1.0;
    }
    return 0.0;
  }
  // Each chunk's first N layers set apart (paraplan::first_layers_apart > 0) split its layers in
  // two. Partial recomputation: the first N re-run their forward (the RECOMPUTE ops) and keep
  // only their input (PP_MEMORY_ACT_LAYER_INPUT); the others keep every other activation item and
  // recompute nothing. Activation offloading: the first N copy their activations out and back
  // (PP_OP_ACTIVATION_OFFLOAD, _RELOAD) and hold none of them at the peak, which Transformer
  // Engine's schedule keeps to the other layers' activations (cpu_offload.py); the others keep
  // theirs. Which of a chunk's layers an op or item counts on:
  LayerShare op_share(size_t op) const {
    const pp_op& held = view_.ops[op];
    if (!splits_layers() || held.scope != PP_SCOPE_LAYER) return LayerShare::kAll;
    const bool offload = std::string_view(held.name) == PP_OP_ACTIVATION_OFFLOAD ||
                         std::string_view(held.name) == PP_OP_ACTIVATION_RELOAD;
    return offload || held.phase == PP_PHASE_RECOMPUTE ? LayerShare::kFirst : LayerShare::kAll;
  }
  LayerShare memory_share(size_t item) const {
    const pp_memory_item& held = view_.memory[item];
    if (!splits_layers() || held.scope != PP_SCOPE_LAYER || held.kind != PP_MEMORY_ACTIVATIONS)
      return LayerShare::kAll;
    if (cpu_offloading_num_layers(*view_.training) > 0) return LayerShare::kRest;
    return std::string_view(held.name) == PP_MEMORY_ACT_LAYER_INPUT ? LayerShare::kFirst : LayerShare::kRest;
  }
  // How often op `op` or item `item` counts on `stage` per micro-batch (multiplicity, its share).
  double op_multiplicity(size_t op, size_t stage) const {
    return multiplicity(view_.ops[op].scope, view_.op_layer_kinds[op], stage, op_share(op));
  }
  double memory_multiplicity(size_t item, size_t stage) const {
    return multiplicity(view_.memory[item].scope, view_.memory_layer_kinds[item], stage, memory_share(item));
  }
  bool splits_layers() const { return first_layers_apart(*view_.training) > 0; }
  // The layers of `kind` among a chunk's first first_layers_apart, walking the chunk's layers in
  // the model's order (the virtual stages hold consecutive layers, in virtual-stage order).
  int64_t first_layers_on_chunk(size_t stage, size_t chunk, uint32_t kind) const {
    const int64_t held = layers_on_chunk(stage, chunk, PP_EVERY_LAYER_KIND);
    const int64_t apart = std::min(held, first_layers_apart(*view_.training));
    if (apart == 0 || kind == PP_EVERY_LAYER_KIND) return apart;
    const pp_pipeline& pipeline = *view_.pipeline;
    const int64_t virtual_stage = virtual_stage_of(pipeline, static_cast<int64_t>(stage), static_cast<int64_t>(chunk));
    int64_t chunk_start = 0;  // the model index of the chunk's first layer
    for (int64_t before = 0; before < virtual_stage; ++before) {
      const StageChunk at = stage_chunk_of(pipeline, before);
      chunk_start += layers_on_chunk(static_cast<size_t>(at.stage), static_cast<size_t>(at.chunk), PP_EVERY_LAYER_KIND);
    }
    const LayerKinds kinds(*view_.model);
    int64_t of_kind = 0;
    for (int64_t layer = chunk_start; layer < chunk_start + apart; ++layer) of_kind += kinds.kind_of_layer(layer) == kind;
    return of_kind;
  }
  // The indices of the LAYER ops named `name` that belong to `kind` (or to every kind).
  std::vector<uint32_t> ops_named_in(std::string_view name, uint32_t kind) const {
    std::vector<uint32_t> found;
    for (uint32_t i = 0; i < view_.op_count; ++i)
      if (is_named(view_.ops[i].name, name) && (view_.op_layer_kinds[i] == kind || view_.op_layer_kinds[i] == PP_EVERY_LAYER_KIND))
        found.push_back(i);
    return found;
  }
  const pp_plan_view_v1& raw() const { return view_; }

 private:
  pp_plan_view_v1 view_;
};

// The plan-editing services of the host, with C++ errors instead of status codes.
class PlanEditor {
 public:
  explicit PlanEditor(const pp_plan_api_v1* api) : api_(api) {}

  PlanView view() const {
    pp_plan_view_v1 view{};
    view.struct_size = sizeof(view);
    api_->get_view(api_->plan, &view);
    return PlanView(view);
  }
  int32_t add_axis(std::string_view name, int64_t degree, std::string_view owner,
                   std::string_view parent = {}) {
    std::string name_text(name), owner_text(owner), parent_text(parent);
    int32_t index = api_->add_axis(api_->plan, name_text.c_str(), degree,
                                   parent_text.empty() ? nullptr : parent_text.c_str(), owner_text.c_str());
    if (index < 0) throw InvalidArgument("cannot add mesh axis '" + name_text + "'");
    return index;
  }
  void set_op(uint32_t index, const pp_op& op) { check(api_->set_op(api_->plan, index, &op), "set_op"); }
  void insert_op(uint32_t index, const pp_op& op) {
    check(api_->insert_op(api_->plan, index, &op), "insert_op");
  }
  void append_op(const pp_op& op) { insert_op(view().raw().op_count, op); }
  void remove_op(uint32_t index) { check(api_->remove_op(api_->plan, index), "remove_op"); }
  void set_memory(uint32_t index, const pp_memory_item& item) {
    check(api_->set_memory(api_->plan, index, &item), "set_memory");
  }
  void add_memory(const pp_memory_item& item) { check(api_->add_memory(api_->plan, &item), "add_memory"); }
  void set_pipeline(const pp_pipeline& pipeline, std::span<const pp_stage> stages) {
    check(api_->set_pipeline(api_->plan, &pipeline, stages.data(), static_cast<uint32_t>(stages.size())),
          "set_pipeline");
  }
  void set_schedule(std::span<const pp_schedule_step> steps) {
    check(api_->set_schedule(api_->plan, steps.data(), steps.size()), "set_schedule");
  }
  // ABI 1.6: an op or item of one layer kind (PP_EVERY_LAYER_KIND: all), and the layers of each
  // kind on every virtual stage (pp_plan_view_v1.layer_counts' layout).
  void insert_layer_op(uint32_t index, const pp_op& op, uint32_t kind) {
    check(api_->insert_layer_op(api_->plan, index, &op, kind), "insert_layer_op");
  }
  void add_layer_memory(const pp_memory_item& item, uint32_t kind) {
    check(api_->add_layer_memory(api_->plan, &item, kind), "add_layer_memory");
  }
  void set_layer_counts(std::span<const int64_t> counts) {
    check(api_->set_layer_counts(api_->plan, counts.data(), counts.size()), "set_layer_counts");
  }

 private:
  static void check(pp_status status, const char* what) {
    if (status != PP_OK) throw Error(status, std::string("plan edit ") + what + " was refused by the host");
  }
  const pp_plan_api_v1* api_;
};

// Where an executor reports its results.
class ResultSink {
 public:
  explicit ResultSink(const pp_result_sink_v1* sink) : sink_(sink) {}
  void number(const std::string& key, double value) const { sink_->number(sink_->context, key.c_str(), value); }
  void boolean(const std::string& key, bool value) const { sink_->boolean(sink_->context, key.c_str(), value); }
  void text(const std::string& key, const std::string& value) const {
    sink_->text(sink_->context, key.c_str(), value.c_str());
  }

 private:
  const pp_result_sink_v1* sink_;
};

class Strategy {
 public:
  static constexpr pp_plugin_kind kind = PP_KIND_STRATEGY;
  static constexpr int32_t apply_order = 100;
  static constexpr uint32_t flags = 0;
  // Not searched unless a recipe names the strategy; define your own to be searched.
  static std::vector<SearchCase> search_space() { return {}; }
  virtual ~Strategy() = default;
  virtual void validate(const StrategyContext&) {}
  virtual void apply(const StrategyContext& context, PlanEditor& plan) = 0;

  // The refusal validate() or apply() left (see refuse()), taken once by the C trampolines.
  std::string take_refusal() { return std::exchange(refused_, {}); }

 protected:
  // Refuses this plan, a constraint it does not meet, without throwing: call it from validate()
  // or apply() and return. The host sees what a thrown ConstraintError gives (PP_ERROR_CONSTRAINT
  // and the message); the search rejects most plans this way, and an exception for each was a
  // fifth of its time.
  void refuse(std::string message) { refused_ = std::move(message); }

 private:
  std::string refused_;
};

class Hardware {
 public:
  static constexpr pp_plugin_kind kind = PP_KIND_HARDWARE;
  virtual ~Hardware() = default;
  virtual pp_hardware_profile describe() = 0;
};

// An executor may also define the search's batched figures (executor.h, evaluate):
//   void evaluate(const PlanView& plan, const pp_hardware_binding_v1& hardware,
//                 std::span<const int64_t> strides, uint32_t layouts, pp_plan_figures* figures);
// and, when it runs plans on a real machine, the machine's measurement (executor.h, calibrate):
//   void calibrate(const ResultSink& results);
class Executor {
 public:
  static constexpr pp_plugin_kind kind = PP_KIND_EXECUTOR;
  static constexpr uint32_t flags = 0;  // PP_EXECUTOR_WALKS_SCHEDULE for simulators
  virtual ~Executor() = default;
  virtual void run(const PlanView& plan, const pp_hardware_binding_v1& hardware, const ResultSink& results) = 0;
};

// What an exporter sees besides the plan: the strategies the plan was composed from, with their
// settings as text, and the artifacts it writes.
class ExportContext {
 public:
  struct Strategy {
    std::string name;
    int64_t degree = 1;
    std::vector<std::pair<std::string, std::string>> settings;
    // A setting's text ("" when the schema has no such key).
    std::string setting(std::string_view key) const {
      for (const auto& [name_of, value] : settings)
        if (name_of == key) return value;
      return "";
    }
    bool flag(std::string_view key) const { return setting(key) == "true"; }
    int64_t integer(std::string_view key, int64_t fallback = 0) const {
      const std::string text = setting(key);
      return text.empty() ? fallback : std::stoll(text);
    }
  };

  explicit ExportContext(const pp_export_context_v1& context)
      : recipe_file_(context.recipe_file ? context.recipe_file : ""),
        model_name_(context.model_name ? context.model_name : "custom") {
    for (uint32_t i = 0; i < context.strategy_count; ++i) {
      const pp_export_strategy& source = context.strategies[i];
      Strategy strategy{source.name ? source.name : "", source.degree, {}};
      for (uint32_t j = 0; j < source.setting_count; ++j)
        strategy.settings.emplace_back(source.settings[j].key, source.settings[j].value);
      strategies_.push_back(std::move(strategy));
    }
  }
  const std::string& recipe_file() const { return recipe_file_; }
  // The recipe file's name without its directories, for comments in what an exporter writes.
  std::string recipe_name() const {
    return recipe_file_.empty() ? "(recipe)" : recipe_file_.substr(recipe_file_.find_last_of('/') + 1);
  }
  const std::string& model_name() const { return model_name_; }
  const std::vector<Strategy>& strategies() const { return strategies_; }
  // The named strategy, or nullptr when the plan does not use it.
  const Strategy* strategy(std::string_view name) const {
    for (const Strategy& strategy : strategies_)
      if (strategy.name == name) return &strategy;
    return nullptr;
  }

 private:
  std::string recipe_file_, model_name_;
  std::vector<Strategy> strategies_;
};

class ArtifactSink {
 public:
  explicit ArtifactSink(const pp_artifact_sink_v1* sink) : sink_(sink) {}
  void text_file(const std::string& name, const std::string& content) const {
    sink_->file(sink_->context, name.c_str(), content.data(), content.size(), 1);
  }
  void binary_file(const std::string& name, const std::string& bytes) const {
    sink_->file(sink_->context, name.c_str(), bytes.data(), bytes.size(), 0);
  }
  void unexpressed(const std::string& message) const { sink_->unexpressed(sink_->context, message.c_str()); }

 private:
  const pp_artifact_sink_v1* sink_;
};

// Writes a plan in a training engine's terms (exporter.h).
class Exporter {
 public:
  static constexpr pp_plugin_kind kind = PP_KIND_EXPORTER;
  static constexpr uint32_t flags = 0;  // PP_EXPORTER_WALKS_SCHEDULE, PP_EXPORTER_NEEDS_DIRECTORY
  virtual ~Exporter() = default;
  virtual void export_plan(const PlanView& plan, const pp_hardware_binding_v1& hardware, const ExportContext& context,
                           const ArtifactSink& artifacts) = 0;
};

namespace detail {

inline void write_error(pp_error* error, const char* message) {
  if (!error || !error->message || error->capacity == 0) return;
  std::snprintf(error->message, error->capacity, "%s", message);
}

// Runs `body`, converting every exception into a status and message: nothing throws across C.
template <typename Body>
pp_status guarded(pp_error* error, Body&& body) noexcept {
  try {
    body();
    return PP_OK;
  } catch (const Error& failure) {
    write_error(error, failure.what());
    return failure.status();
  } catch (const std::exception& failure) {
    write_error(error, failure.what());
    return PP_ERROR_INTERNAL;
  } catch (...) {
    write_error(error, "unknown exception");
    return PP_ERROR_INTERNAL;
  }
}

// A strategy call's status: a refusal it left with Strategy::refuse() is PP_ERROR_CONSTRAINT, as a
// thrown ConstraintError would have been.
inline pp_status refused_or(Strategy& strategy, pp_error* error, pp_status status) {
  const std::string refused = strategy.take_refusal();
  if (status != PP_OK || refused.empty()) return status;
  write_error(error, refused.c_str());
  return PP_ERROR_CONSTRAINT;
}

// Keeps the C view of a PluginInfo alive for the life of the library.
struct StaticSchema {
  PluginInfo info;
  std::deque<std::vector<const char*>> enum_pointers;
  std::vector<pp_param_spec> specs;

  explicit StaticSchema(PluginInfo source) : info(std::move(source)) {
    for (const ParamSpec& param : info.params) {
      std::vector<const char*>& values = enum_pointers.emplace_back();
      for (const std::string& value : param.enum_values) values.push_back(value.c_str());
      pp_param_spec spec{};
      spec.struct_size = sizeof(spec);
      spec.name = param.name.c_str();
      spec.type = param.type;
      spec.doc = param.doc.c_str();
      spec.default_int = param.default_int;
      spec.default_float = param.default_float;
      spec.default_bool = param.default_bool ? 1 : 0;
      spec.default_string = param.default_string.c_str();
      spec.has_min = param.has_min;
      spec.min = param.min;
      spec.has_max = param.has_max;
      spec.max = param.max;
      spec.enum_values = values.empty() ? nullptr : values.data();
      spec.enum_count = static_cast<uint32_t>(values.size());
      specs.push_back(spec);
    }
  }
};

// Keeps the C view of a strategy's search cases alive for the life of the library.
struct StaticSearchSpace {
  std::vector<SearchCase> cases;
  std::deque<std::vector<const char*>> value_pointers;
  std::deque<std::vector<pp_search_choice>> choice_tables;
  std::vector<pp_search_case> c_cases;

  explicit StaticSearchSpace(std::vector<SearchCase> source) : cases(std::move(source)) {
    for (const SearchCase& region : cases) {
      std::vector<pp_search_choice>& choices = choice_tables.emplace_back();
      for (const auto& [param, values] : region.choices) {
        std::vector<const char*>& texts = value_pointers.emplace_back();
        for (const std::string& value : values) texts.push_back(value.c_str());
        choices.push_back(pp_search_choice{sizeof(pp_search_choice), param.c_str(), texts.data(),
                                           static_cast<uint32_t>(texts.size())});
      }
      c_cases.push_back(pp_search_case{sizeof(pp_search_case), region.min_degree, region.max_degree,
                                       choices.empty() ? nullptr : choices.data(),
                                       static_cast<uint32_t>(choices.size())});
    }
  }
};

template <typename Plugin>
pp_status create(const pp_param_set* params, void** instance, pp_error* error) {
  return guarded(error, [&] { *instance = new Plugin(Params(params)); });
}

template <typename Plugin>
void destroy(void* instance) {
  delete static_cast<Plugin*>(instance);
}

inline StrategyContext strategy_context(const pp_strategy_context* context) {
  return StrategyContext{context->degree, *context->model, *context->training, *context->cluster,
                         context->wants_schedule != 0};
}

template <typename Plugin>
const pp_strategy_v1* strategy_table() {
  static const StaticSearchSpace search(Plugin::search_space());
  static const pp_strategy_v1 table = {
      sizeof(pp_strategy_v1),
      Plugin::apply_order,
      Plugin::flags,
      &create<Plugin>,
      &destroy<Plugin>,
      [](void* instance, const pp_strategy_context* context, pp_error* error) {
        Plugin& plugin = *static_cast<Plugin*>(instance);
        return refused_or(plugin, error, guarded(error, [&] { plugin.validate(strategy_context(context)); }));
      },
      [](void* instance, const pp_strategy_context* context, const pp_plan_api_v1* api, pp_error* error) {
        Plugin& plugin = *static_cast<Plugin*>(instance);
        return refused_or(plugin, error, guarded(error, [&] {
          PlanEditor editor(api);
          plugin.apply(strategy_context(context), editor);
        }));
      },
      search.c_cases.empty() ? nullptr : search.c_cases.data(),
      static_cast<uint32_t>(search.c_cases.size()),
  };
  return &table;
}

template <typename Plugin>
const pp_hardware_v1* hardware_table() {
  static pp_hardware_v1 table = [] {
    pp_hardware_v1 functions{};
    functions.struct_size = sizeof(pp_hardware_v1);
    functions.create = &create<Plugin>;
    functions.destroy = &destroy<Plugin>;
    functions.describe = [](void* instance, pp_hardware_profile* profile, pp_error* error) {
      return guarded(error, [&] { *profile = static_cast<Plugin*>(instance)->describe(); });
    };
    if constexpr (requires(Plugin& plugin) { plugin.gemm_time(1.0, 1.0, 1.0, PP_DTYPE_BF16); }) {
      functions.gemm_time = [](void* instance, double m, double n, double k, pp_dtype dtype, double* seconds,
                               pp_error* error) {
        return guarded(error, [&] { *seconds = static_cast<Plugin*>(instance)->gemm_time(m, n, k, dtype); });
      };
    }
    if constexpr (requires(Plugin& plugin) {
                    plugin.collective_time(PP_COLLECTIVE_ALL_REDUCE, 1.0, int64_t{1}, int64_t{1});
                  }) {
      functions.collective_time = [](void* instance, pp_collective kind, double bytes, int64_t group,
                                     int64_t stride, double* seconds, pp_error* error) {
        return guarded(error, [&] {
          *seconds = static_cast<Plugin*>(instance)->collective_time(kind, bytes, group, stride);
        });
      };
    }
    return functions;
  }();
  return &table;
}

template <typename Plugin>
const pp_executor_v1* executor_table() {
  static const pp_executor_v1 table = [] {
    pp_executor_v1 functions{};
    functions.struct_size = sizeof(pp_executor_v1);
    functions.create = &create<Plugin>;
    functions.destroy = &destroy<Plugin>;
    functions.run = [](void* instance, const pp_plan_view_v1* plan, const pp_hardware_binding_v1* hardware,
                       const pp_result_sink_v1* results, pp_error* error) {
      return guarded(error, [&] {
        static_cast<Plugin*>(instance)->run(PlanView(*plan), *hardware, ResultSink(results));
      });
    };
    functions.flags = Plugin::flags;
    if constexpr (requires(Plugin& plugin, const PlanView& plan, const pp_hardware_binding_v1& hardware,
                           pp_plan_figures* figures) {
                    plugin.evaluate(plan, hardware, std::span<const int64_t>{}, uint32_t{0}, figures);
                  }) {
      functions.evaluate = [](void* instance, const pp_plan_view_v1* plan, const pp_hardware_binding_v1* hardware,
                              const int64_t* strides, uint32_t layouts, pp_plan_figures* figures, pp_error* error) {
        return guarded(error, [&] {
          std::span<const int64_t> all(strides, strides ? size_t{layouts} * plan->axis_count : 0);
          static_cast<Plugin*>(instance)->evaluate(PlanView(*plan), *hardware, all, layouts, figures);
        });
      };
    }
    if constexpr (requires(Plugin& plugin, const ResultSink& results) { plugin.calibrate(results); }) {
      functions.calibrate = [](void* instance, const pp_result_sink_v1* results, pp_error* error) {
        return guarded(error, [&] { static_cast<Plugin*>(instance)->calibrate(ResultSink(results)); });
      };
    }
    return functions;
  }();
  return &table;
}

template <typename Plugin>
const pp_exporter_v1* exporter_table() {
  static const pp_exporter_v1 table = [] {
    pp_exporter_v1 functions{};
    functions.struct_size = sizeof(pp_exporter_v1);
    functions.create = &create<Plugin>;
    functions.destroy = &destroy<Plugin>;
    functions.export_plan = [](void* instance, const pp_plan_view_v1* plan, const pp_hardware_binding_v1* hardware,
                               const pp_export_context_v1* context, const pp_artifact_sink_v1* artifacts,
                               pp_error* error) {
      return guarded(error, [&] {
        static_cast<Plugin*>(instance)->export_plan(PlanView(*plan), *hardware, ExportContext(*context),
                                                    ArtifactSink(artifacts));
      });
    };
    functions.flags = Plugin::flags;
    return functions;
  }();
  return &table;
}

template <typename Plugin>
const pp_plugin_v1* describe_plugin() {
  // Built on first call and kept for the life of the library; the entry point is cheap after that.
  static const StaticSchema schema(Plugin::info());
  static const pp_plugin_v1 plugin = [] {
    pp_plugin_v1 metadata{};
    metadata.struct_size = sizeof(pp_plugin_v1);
    metadata.abi_major = PP_ABI_MAJOR;
    metadata.abi_minor = PP_ABI_MINOR;
    metadata.kind = Plugin::kind;
    metadata.name = schema.info.name.c_str();
    metadata.version = schema.info.version.c_str();
    metadata.description = schema.info.description.c_str();
    metadata.params = schema.specs.empty() ? nullptr : schema.specs.data();
    metadata.param_count = static_cast<uint32_t>(schema.specs.size());
    if constexpr (Plugin::kind == PP_KIND_STRATEGY) metadata.strategy = strategy_table<Plugin>();
    if constexpr (Plugin::kind == PP_KIND_HARDWARE) metadata.hardware = hardware_table<Plugin>();
    if constexpr (Plugin::kind == PP_KIND_EXECUTOR) metadata.executor = executor_table<Plugin>();
    if constexpr (Plugin::kind == PP_KIND_EXPORTER) metadata.exporter = exporter_table<Plugin>();
    metadata.attach_host = [](const pp_host_v1* host) { host_services = host; };
    plugin_name = schema.info.name.c_str();
    return metadata;
  }();
  return &plugin;
}

}  // namespace detail
}  // namespace paraplan

// Exports the plugin's entry point, and its alias in the "paraplan" section so the host can
// recognise the file as a paraplan plugin (and its ABI major) without running it.
#define PARAPLAN_PLUGIN(PluginClass)                                                     \
  PP_EXTERN_C PP_EXPORT const pp_plugin_v1* paraplan_plugin_v1(void) {                   \
    try {                                                                                \
      return ::paraplan::detail::describe_plugin<PluginClass>();                          \
    } catch (...) {                                                                      \
      return nullptr;                                                                    \
    }                                                                                    \
  }                                                                                      \
  PP_DECLARE_ENTRY_ALIAS_V1(paraplan_plugin_v1)

#endif  // PARAPLAN_SDK_HPP
