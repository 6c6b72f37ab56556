// torchtitan exporter: the plan as a torchtitan job config.
//
// Files:
//   torchtitan_job.toml       the job config ([job], [model], [training], [parallelism],
//                             [activation_checkpoint]), written through toml++
//   torchtitan_overrides.txt  the same settings as command-line overrides, one per line
//                             (--parallelism.tensor_parallel_degree 8), for runs without the file
//   run_torchtitan.sh         torchrun over the cluster's nodes, -m torchtitan.train --job.config_file
//
// Keys follow torchtitan/config/job_config.py of the TOML-configured releases (2025: Training has
// local_batch_size and global_batch_size, Parallelism has pipeline_parallel_layers_per_stage and
// pipeline_parallel_first/last_stage_less_layers); schedule names are those of
// torch.distributed.pipelining.schedules.get_schedule_class.
//
// Mapping (the plan's mesh axes and the strategies' settings):
//   fsdp stage 3 -> data_parallel_shard_degree = dp (FSDP2); stage 0 -> data_parallel_replicate_degree
//   = dp (DDP); stages 1 and 2 -> FSDP2 with fsdp_reshard_after_forward = "never" (parameters stay
//   gathered between forward and backward, as ZeRO-1/2 keep them whole), reported as unexpressed
//   hsdp -> data_parallel_replicate_degree = replicas, data_parallel_shard_degree = shard group
//   tp -> tensor_parallel_degree (torchtitan's TP always shards the norms' activations along the
//   sequence, Megatron-style sequence parallelism); tp overlap -> enable_async_tensor_parallel
//   (needs training.compile, set with it)
//   elementwise_kernels fused -> training.compile = true (torch.compile fuses the norms, rotary
//   and GLU); eager -> false
//   sp ring -> context_parallel_degree; ulysses -> unexpressed (torchtitan's CP is ring attention)
//   pp -> pipeline_parallel_degree, _schedule, _microbatch_size, _layers_per_stage
//   ep -> expert_parallel_degree (torchtitan's "dp2ep": experts over data-parallel ranks, as the
//   plan's ep axis subdivides dp)
//   recompute none/selective/full -> [activation_checkpoint] mode
#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include <toml++/toml.h>

#include "paraplan/host_issue.hpp"
#include "paraplan/sdk.hpp"
#include "plugins/exporters/internal/gradient_buckets.h"

namespace {

using Strings = std::vector<std::string>;
using Value = std::variant<int64_t, bool, std::string, Strings, std::vector<Strings>>;

struct Entry {
  std::string key;
  Value value;
  std::string comment;  // appended as "# ..." after the value
};

struct Section {
  std::string name;
  std::vector<Entry> entries;
  void set(std::string key, Value value, std::string comment = {}) {
    entries.push_back({std::move(key), std::move(value), std::move(comment)});
  }
};

toml::array string_array(const Strings& values) {
  toml::array array;
  for (const std::string& value : values) array.push_back(value);
  return array;
}

// "key = value" as toml++ writes it (quoting and escaping are the library's).
std::string toml_line(const Entry& entry) {
  toml::table table;
  std::visit(
      [&](const auto& value) {
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, Strings>) {
          table.insert(entry.key, string_array(value));
        } else if constexpr (std::is_same_v<T, std::vector<Strings>>) {
          toml::array outer;
          for (const Strings& inner : value) outer.push_back(string_array(inner));
          table.insert(entry.key, std::move(outer));
        } else {
          table.insert(entry.key, value);
        }
      },
      entry.value);
  std::ostringstream out;
  out << table;
  std::string line = out.str();
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  if (!entry.comment.empty()) line += "  # " + entry.comment;
  return line;
}

bool plain_word(const std::string& text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("_.,:/+-=").find(c) != std::string_view::npos;
  });
}

std::string shell_quote(const std::string& text) {
  if (plain_word(text)) return text;
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// The command-line override of one entry, or "" where the flag's default already says it (false).
std::string override_line(const std::string& section, const Entry& entry) {
  const std::string flag = "--" + section + "." + entry.key;
  if (const bool* flag_value = std::get_if<bool>(&entry.value)) return *flag_value ? flag : "";
  if (const int64_t* number = std::get_if<int64_t>(&entry.value)) return flag + " " + std::to_string(*number);
  if (const std::string* text = std::get_if<std::string>(&entry.value)) return flag + " " + shell_quote(*text);
  if (const Strings* list = std::get_if<Strings>(&entry.value)) {
    std::string joined;
    for (const std::string& item : *list) joined += (joined.empty() ? "" : ",") + item;
    return flag + " " + shell_quote(joined);
  }
  return "";  // lists of lists have no command-line form; the job file carries them
}

int64_t axis_stride(const paraplan::PlanView& plan, std::string_view name) {
  const int32_t index = plan.axis_index(name);
  return index < 0 ? 0 : plan.axes()[static_cast<size_t>(index)].stride;
}

struct ModelFlavor {
  std::string name, flavor;
  bool shipped;
};

// torchtitan's model registry: llama3 ships 8B, 70B and 405B; the others need a flavor registered.
ModelFlavor model_flavor(const std::string& preset, bool moe) {
  if (preset == "llama3-8b") return {"llama3", "8B", true};
  if (preset == "llama3-70b") return {"llama3", "70B", true};
  if (preset == "llama3-405b") return {"llama3", "405B", true};
  return {moe ? "llama4" : "llama3", preset, false};
}

class Torchtitan : public paraplan::Exporter {
 public:
  static paraplan::PluginInfo info() {
    return {"torchtitan",
            "1.0.0",
            "torchtitan job config (TOML), the equivalent command-line overrides and a torchrun launch script",
            {paraplan::ParamSpec::Int("steps", 1000, "training.steps written into the job config").at_least(1),
             paraplan::ParamSpec::String("dataset", "c4", "training.dataset written into the job config"),
             paraplan::ParamSpec::String("tokenizer_path", "./assets/tokenizer",
                                         "model.tokenizer_path written into the job config")}};
  }

  explicit Torchtitan(const paraplan::Params& params)
      : steps_(params.int_value("steps")),
        dataset_(params.string_value("dataset")),
        tokenizer_(params.string_value("tokenizer_path")) {}

  void export_plan(const paraplan::PlanView& plan, const pp_hardware_binding_v1&,
                   const paraplan::ExportContext& context, const paraplan::ArtifactSink& artifacts) override {
    // Only what the 1.5 model fields say is translated so far: refuse the rest, never drop it.
    if (const std::string beyond = paraplan::beyond_uniform_transformer(plan.model()); !beyond.empty())
      throw paraplan::Error(PP_ERROR_UNSUPPORTED, "the model has " + beyond + ", which the torchtitan export does not write yet");
    const pp_model& model = plan.model();
    const pp_training& training = plan.training();
    const pp_cluster& cluster = plan.cluster();
    const pp_pipeline& pipeline = plan.pipeline();
    Strings unexpressed;

    const int64_t tp = plan.axis_degree(PP_AXIS_TP), cp = plan.axis_degree(PP_AXIS_CP);
    const int64_t pp = plan.axis_degree(PP_AXIS_PP);
    const int64_t ep = plan.axis_degree(PP_AXIS_EP);
    const int64_t dp = plan.data_parallel_size();
    const int64_t micro_batches = std::max<int64_t>(1, pipeline.micro_batches);

    Section job{"job", {}}, model_section{"model", {}}, train{"training", {}}, parallel{"parallelism", {}},
        checkpointing{"activation_checkpoint", {}}, mx{"mx", {}};
    job.set("description", "paraplan export of " + context.recipe_name());

    // [model]
    const ModelFlavor flavor = model_flavor(context.model_name(), model.moe_experts > 0);
    model_section.set("name", flavor.name);
    model_section.set("flavor", flavor.flavor);
    model_section.set("tokenizer_path", tokenizer_);
    if (!flavor.shipped)
      unexpressed.push_back("model '" + context.model_name() + "': torchtitan ships no such flavor; register " +
                            flavor.name + " flavor '" + flavor.flavor + "' (" + std::to_string(model.layers) +
                            " layers, hidden " + std::to_string(model.hidden) + ", " + std::to_string(model.heads) +
                            " heads, " + std::to_string(model.kv_heads) + " KV heads) before running");
    if (training.precision == PP_PRECISION_FP8) model_section.set("converters", Strings{"float8"}, "FP8 GEMMs (torchao)");
    if (training.precision == PP_PRECISION_MXFP8) {
      // torchtitan docs/mxfp8.md: torchao's MX linear converter, cuBLAS's MXFP8 GEMMs (SM100+).
      model_section.set("converters", Strings{"mx"}, "MXFP8 GEMMs (torchao, Blackwell)");
      mx.set("recipe_name", std::string("mxfp8_cublas"));
    }
    if (training.precision == PP_PRECISION_NVFP4)
      unexpressed.push_back("precision nvfp4: torchtitan has no NVFP4 training recipe (torchao's is a prototype "
                            "without its performance); exported as bf16");

    // [training]
    const bool pipelined = pp > 1;
    // With a pipeline one step runs all the micro-batches through it (local batch = micro x m,
    // no gradient accumulation); without one, torchtitan accumulates global / (local x dp) times.
    const int64_t local_batch = pipelined ? training.micro_batch * micro_batches : training.micro_batch;
    train.set("dataset", dataset_);
    train.set("local_batch_size", local_batch,
              pipelined ? "micro-batch " + std::to_string(training.micro_batch) + " x " +
                              std::to_string(micro_batches) + " pipeline micro-batches per data-parallel rank"
                        : "one micro-batch; gradient accumulation " + std::to_string(micro_batches) + " steps");
    train.set("global_batch_size", training.global_batch);
    train.set("seq_len", model.seq_len);
    train.set("steps", steps_);
    if (training.precision == PP_PRECISION_FP16)
      unexpressed.push_back(
          "precision fp16: torchtitan mixes precision in bfloat16 or float32 only; exported as bfloat16");
    if (!paraplan::master_weights_in_place(training))
      unexpressed.push_back("training.master_weights = \"separate\": FSDP2 keeps the fp32 weights themselves as the "
                            "master (\"in_place\"): the job holds 2 bytes per parameter less model state than was "
                            "evaluated (no 2-byte copy of the weights between steps)");
    if (paraplan::attention_kernel(training) == PP_ATTENTION_KERNEL_FLASH2)
      unexpressed.push_back("training.attention_kernel = \"flash2\": torchtitan's SDPA tries cuDNN's fused attention "
                            "first (models/common/attention.py) and has no key to put FlashAttention-2 ahead of it: "
                            "the job's attention runs faster than was evaluated");
    if (paraplan::attention_kernel(training) == PP_ATTENTION_KERNEL_TRITON)
      unexpressed.push_back("training.attention_kernel = \"triton\": torchtitan's attention is PyTorch SDPA (cuDNN "
                            "or FlashAttention-2, models/common/attention.py), not the Triton FlashAttention: the "
                            "job's attention runs faster than was evaluated");
    if (model.dropout > 0) {
      std::ostringstream probability;
      probability << model.dropout;
      unexpressed.push_back("model.dropout = " + probability.str() +
                            ": torchtitan's models have no dropout; the job keeps no dropout masks and runs no "
                            "dropout passes, which the plan charged");
    }
    train.set("mixed_precision_param", std::string("bfloat16"));
    train.set("mixed_precision_reduce", std::string("float32"));

    // [parallelism]: data parallelism first
    const auto* fsdp = context.strategy(PP_STRATEGY_FSDP);
    const auto* hsdp = context.strategy(PP_STRATEGY_HSDP);
    int64_t replicate = 1, shard = 1;
    std::string reshard = "default";
    if (hsdp) {
      replicate = plan.axis_degree(PP_AXIS_DP_REPLICATE);
      shard = plan.axis_degree(PP_AXIS_DP);
      const int64_t stage = hsdp->integer(PP_DP_PARAM_STAGE, 3);
      if (stage < 3) {
        reshard = "never";
        unexpressed.push_back("hsdp stage " + std::to_string(stage) +
                              ": torchtitan's FSDP2 always shards parameters within the group; exported as HSDP "
                              "with fsdp_reshard_after_forward = \"never\" (parameters kept gathered through backward)");
      }
      if (!hsdp->flag(PP_DP_PARAM_OVERLAP))
        unexpressed.push_back("hsdp overlap = false: FSDP2 always prefetches and overlaps its collectives");
    } else if (fsdp && dp > 1) {
      const int64_t stage = fsdp->integer(PP_DP_PARAM_STAGE, 0);
      if (stage == 0) {
        replicate = dp;
      } else {
        shard = dp;
        if (stage < 3) {
          reshard = "never";
          unexpressed.push_back("fsdp stage " + std::to_string(stage) + " (ZeRO-" + std::to_string(stage) +
                                "): torchtitan has no optimizer-only or gradient-only sharding; exported as FSDP2 "
                                "over " + std::to_string(dp) +
                                " ranks with fsdp_reshard_after_forward = \"never\" (ZeRO-2-like: parameters "
                                "stay gathered from forward to backward)");
        }
      }
      if (!fsdp->flag(PP_DP_PARAM_OVERLAP))
        unexpressed.push_back("fsdp overlap = false: torchtitan always overlaps gradient reduction and prefetches");
    } else if (dp > 1) {
      replicate = dp;
    }
    // FSDP2 reduces and gathers one TransformerBlock at a time (one fully_shard unit each), the
    // next one prefetched (implicitly, or explicitly with ep: torchtitan/distributed/fsdp.py).
    if (const auto* sharding = hsdp ? hsdp : fsdp; sharding && dp > 1) {
      if (paraplan::exporters::bucket_parameters(*sharding) > 0)
        unexpressed.push_back(sharding->name + " bucket_parameters = " + sharding->setting(PP_DP_PARAM_BUCKET_PARAMETERS) +
                              ": FSDP2 reduces each TransformerBlock's gradients in one collective");
      if (sharding->integer(PP_DP_PARAM_PREFETCH, 1) != 1)
        unexpressed.push_back(sharding->name + " prefetch = " + sharding->setting(PP_DP_PARAM_PREFETCH) +
                              ": torchtitan's FSDP2 prefetches one TransformerBlock ahead");
    }
    parallel.set("data_parallel_replicate_degree", replicate);
    parallel.set("data_parallel_shard_degree", shard);
    if (shard > 1) parallel.set("fsdp_reshard_after_forward", reshard);

    // tensor and sequence parallelism
    const auto* tp_strategy = context.strategy(PP_STRATEGY_TP);
    const auto* sp = context.strategy(PP_STRATEGY_SP);
    const std::string sp_mode = sp ? sp->setting("mode") : "";
    parallel.set("tensor_parallel_degree", tp,
                 tp > 1 ? "torchtitan's TP always runs with sequence parallelism (sharded norms and dropout)" : "");
    const bool async_tp = tp > 1 && tp_strategy && tp_strategy->flag(PP_TP_PARAM_OVERLAP);
    parallel.set("enable_async_tensor_parallel", async_tp);
    if (async_tp && tp_strategy->setting(PP_TP_PARAM_OVERLAP_METHOD) != PP_TP_OVERLAP_MICRO_PIPELINE)
      unexpressed.push_back("tp overlap_method " PP_TP_OVERLAP_USERBUFFERS
                            ": torchtitan's async TP (PyTorch's micro-pipelined TP) hides only the forward passes' "
                            "tensor-parallel collectives; the backward's run exposed, slower than was evaluated "
                            "(overlap_method = \"micro_pipeline\" evaluates what it runs)");
    if (paraplan::fp8_attention(training))
      unexpressed.push_back("training.fp8_attention: torchtitan runs attention (SDPA or FlexAttention) in bf16, slower "
                            "than was evaluated");
    if (paraplan::moe_fused_mlp(training))
      unexpressed.push_back("training.moe_fused_mlp: torchtitan's MoE runs its grouped GEMMs and activation as separate "
                            "kernels, slower than was evaluated");
    const bool eager = paraplan::elementwise_kernels(training) == PP_ELEMENTWISE_EAGER;
    if (async_tp) {
      train.set("compile", true, "async tensor parallelism works only under torch.compile");
      if (eager)
        unexpressed.push_back("elementwise_kernels = \"eager\": torchtitan's async TP runs only under torch.compile, "
                              "which also fuses the norms, rotary and GLU: the job's elementwise work runs faster than "
                              "was evaluated");
    } else {
      train.set("compile", !eager, eager ? "eager PyTorch kernels, as evaluated"
                                         : "torch.compile fuses the norms, rotary and GLU, as evaluated");
    }
    parallel.set("disable_loss_parallel", false);
    if (tp > 1) {
      const bool megatron_sp = sp && (sp_mode == "megatron" || sp->flag("megatron_sp"));
      if (!megatron_sp)
        unexpressed.push_back("tp without sequence parallelism: torchtitan's TP always shards the norms' "
                              "activations along the sequence (less activation memory than the plan assumes)");
    }

    // context parallelism
    parallel.set("context_parallel_degree", cp);
    if (cp > 1) {
      parallel.set("context_parallel_rotate_method", std::string("alltoall"),
                   "ring attention: KV shards passed around the cp group");
      if (sp_mode == "ulysses")
        unexpressed.push_back("sp mode ulysses: torchtitan's context parallelism is ring attention only (no "
                              "all-to-all head scattering); exported as context_parallel_degree = " +
                              std::to_string(cp) + " with ring attention");
    }

    // pipeline parallelism
    parallel.set("pipeline_parallel_degree", pp);
    if (pipelined) pipeline_settings(plan, context, parallel, unexpressed);

    // expert parallelism
    parallel.set("expert_parallel_degree", ep);
    if (ep > 1) {
      const auto* ep_strategy = context.strategy(PP_STRATEGY_EP);
      if (ep < cp || ep > shard * cp)
        unexpressed.push_back("ep " + std::to_string(ep) + ": torchtitan borrows expert parallelism from "
                              "data_parallel_shard_degree x context_parallel_degree and needs cp <= ep <= " +
                              std::to_string(shard * cp) + "; the plan's data parallelism does not shard that far");
      if (ep_strategy && ep_strategy->setting("dispatcher") == "allgather")
        unexpressed.push_back("ep dispatcher allgather: torchtitan dispatches tokens by all-to-all only");
      if (ep_strategy && ep_strategy->setting("dispatcher") == "flex")
        unexpressed.push_back("ep dispatcher flex (DeepEP/HybridEP, one copy per rank): written as torchtitan's "
                              "all-to-all, which sends a copy per chosen expert");
      if (ep_strategy && ep_strategy->flag("overlap"))
        unexpressed.push_back("ep overlap: torchtitan has no batch-level overlap of the expert all-to-alls; "
                              "they run on the critical path");
      const std::string capacity = ep_strategy ? ep_strategy->setting("capacity_factor") : "";
      if (!capacity.empty() && std::stod(capacity) > 0.0)
        unexpressed.push_back("ep capacity_factor = " + capacity +
                              ": torchtitan's MoE is dropless (no expert capacity, tokens never dropped or padded)");
    }

    // [activation_checkpoint]
    switch (training.recompute) {
      case PP_RECOMPUTE_FULL:
        checkpointing.set("mode", std::string("full"));
        if (const int64_t partial = paraplan::recompute_num_layers(training); partial > 0)
          unexpressed.push_back("recompute_num_layers = " + std::to_string(partial) +
                                ": torchtitan checkpoints every layer (mode full) or every k-th layer "
                                "(selective_ac_option = \"k\"), not each stage's first layers; exported as full, "
                                "which recomputes more than was evaluated");
        break;
      case PP_RECOMPUTE_SELECTIVE:
        checkpointing.set("mode", std::string("selective"));
        if (paraplan::recomputed_modules(training) == PP_RECOMPUTE_TORCHTITAN_OP) {
          checkpointing.set("selective_ac_option", std::string("op"), "per-op SAC, as evaluated");
          break;
        }
        checkpointing.set("selective_ac_option", std::string("op"), "per-op SAC: the nearest torchtitan has");
        unexpressed.push_back("recompute selective (Megatron-LM's modules): torchtitan recomputes per layer or per op, "
                              "not by module; exported as its per-op policy (selective_ac_option = \"op\"), which "
                              "keeps fewer activations and recomputes more matmuls than was evaluated (recompute_modules "
                              "= [\"torchtitan_op\"] evaluates that policy)");
        break;
      default:
        checkpointing.set("mode", std::string("none"));
        break;
    }
    if (const int64_t offloaded = paraplan::cpu_offloading_num_layers(training); offloaded > 0)
      unexpressed.push_back("cpu_offloading_num_layers = " + std::to_string(offloaded) +
                            ": torchtitan does not offload activations to host memory; the job holds the "
                            "offloaded layers' activations on the GPU, more memory than was evaluated");
    if (paraplan::issue::cuda_graph_modules(training) != 0)
      unexpressed.push_back("cuda_graph_modules: torchtitan has no CUDA graphs of Megatron-LM's modules; the job "
                            "issues the ops the plan replays from graphs eagerly (slower where the host bounds it)");
    if (training.optimizer == PP_OPTIMIZER_SGD)
      unexpressed.push_back("optimizer sgd: torchtitan builds Adam or AdamW only; exported with its default AdamW");

    layout_check(plan, tp, cp, shard, replicate, pp, unexpressed);

    std::vector<Section> sections = {job, model_section, train, parallel, checkpointing};
    if (!mx.entries.empty()) sections.push_back(mx);
    std::ostringstream job_file, overrides;
    job_file << "# torchtitan job config for " << context.recipe_name() << " (paraplan export)\n"
             << "# " << cluster.num_gpus << " GPUs = tp " << tp << " x cp " << cp << " x pp " << pp << " x dp " << dp
             << (ep > 1 ? " (ep " + std::to_string(ep) + " inside dp)" : "") << "; run with run_torchtitan.sh\n";
    for (const std::string& line : unexpressed) job_file << "# not expressed: " << line << "\n";
    overrides << "# torchtitan command-line overrides for " << context.recipe_name()
              << " (paraplan export): the settings of torchtitan_job.toml, one per line\n";
    for (const Section& section : sections) {
      job_file << "\n[" << section.name << "]\n";
      for (const Entry& entry : section.entries) {
        job_file << toml_line(entry) << "\n";
        const std::string line = override_line(section.name, entry);
        if (!line.empty()) overrides << line << "\n";
      }
    }
    artifacts.text_file("torchtitan_job.toml", job_file.str());
    artifacts.text_file("torchtitan_overrides.txt", overrides.str());
    artifacts.text_file("run_torchtitan.sh", launch_script(context, cluster));
    for (const std::string& line : unexpressed) artifacts.unexpressed(line);
  }

 private:
  static void pipeline_settings(const paraplan::PlanView& plan, const paraplan::ExportContext&, Section& parallel,
                                Strings& unexpressed) {
    const pp_pipeline& pipeline = plan.pipeline();
    const int64_t stages = pipeline.stages, chunks = std::max<int64_t>(1, pipeline.virtual_stages);
    const int64_t layers = plan.model().layers;
    std::string schedule;
    switch (pipeline.schedule) {
      case PP_SCHEDULE_GPIPE:
        schedule = "GPipe";
        break;
      case PP_SCHEDULE_INTERLEAVED_1F1B:
        schedule = "Interleaved1F1B";
        break;
      case PP_SCHEDULE_ZERO_BUBBLE:
        schedule = "1F1B";
        unexpressed.push_back(
            "pp schedule zero-bubble (ZB-H1, one stage per rank): torch.distributed.pipelining has zero-bubble "
            "schedules only for two or more stages per rank (InterleavedZeroBubble, ZBVZeroBubble); exported as 1F1B");
        break;
      case PP_SCHEDULE_DUALPIPE_V:
        // torchtitan places the two stages of a V schedule's rank r as (r, 2p - 1 - r), the plan's V.
        schedule = "DualPipeV";
        break;
      default:
        schedule = "1F1B";
        break;
    }
    parallel.set("pipeline_parallel_schedule", schedule);
    parallel.set("pipeline_parallel_microbatch_size", plan.training().micro_batch,
                 std::to_string(pipeline.micro_batches) + " micro-batches per step");
    bool even = layers % (stages * chunks) == 0;
    for (size_t stage = 0; stage < plan.stages().size(); ++stage)
      for (int64_t chunk = 0; chunk < chunks; ++chunk)
        even = even && plan.layers_on_chunk(stage, static_cast<size_t>(chunk), PP_EVERY_LAYER_KIND) * stages * chunks ==
                           layers;
    if (even) {
      parallel.set("pipeline_parallel_layers_per_stage", layers / (stages * chunks),
                   std::to_string(stages * chunks) + " stages, " + std::to_string(chunks) + " per rank");
      parallel.set("pipeline_parallel_first_stage_less_layers", int64_t{0});
      parallel.set("pipeline_parallel_last_stage_less_layers", int64_t{0});
    } else {
      // Uneven stages: name every model part's modules (llama-style FQNs), the parts in the
      // model's order, which torchtitan maps to ranks as the schedule does (looped or V).
      std::vector<int64_t> part_layers(static_cast<size_t>(stages * chunks), 0);
      for (int64_t stage = 0; stage < stages; ++stage)
        for (int64_t chunk = 0; chunk < chunks; ++chunk)
          part_layers[static_cast<size_t>(paraplan::virtual_stage_of(pipeline, stage, chunk))] =
              plan.layers_on_chunk(static_cast<size_t>(stage), static_cast<size_t>(chunk), PP_EVERY_LAYER_KIND);
      std::vector<Strings> parts;
      int64_t next = 0;
      for (size_t part = 0; part < part_layers.size(); ++part) {
        Strings names;
        if (part == 0) names.push_back("tok_embeddings");
        for (int64_t i = 0; i < part_layers[part]; ++i) names.push_back("layers." + std::to_string(next++));
        if (part + 1 == part_layers.size()) {
          names.push_back("norm");
          names.push_back("output");
        }
        parts.push_back(std::move(names));
      }
      parallel.set("module_fqns_per_model_part", parts, "the plan's uneven stages");
    }
  }

  // torchtitan builds its mesh as (pp, dp_replicate, dp_shard, cp, tp), tp innermost.
  static void layout_check(const paraplan::PlanView& plan, int64_t tp, int64_t cp, int64_t shard, int64_t replicate,
                           int64_t pp, Strings& unexpressed) {
    struct Expected {
      const char* axis;
      int64_t degree, stride;
    };
    const bool hsdp = plan.axis_index(PP_AXIS_DP_REPLICATE) >= 0;
    const std::vector<Expected> expected = {
        {PP_AXIS_TP, tp, 1},
        {PP_AXIS_CP, cp, tp},
        {PP_AXIS_DP, hsdp ? shard : shard * replicate, tp * cp},
        {PP_AXIS_DP_REPLICATE, replicate, tp * cp * shard},
        {PP_AXIS_PP, pp, tp * cp * shard * replicate},
    };
    std::string mismatched;
    for (const Expected& axis : expected) {
      if (axis.degree <= 1 || plan.axis_index(axis.axis) < 0) continue;
      const int64_t stride = axis_stride(plan, axis.axis);
      if (stride != axis.stride)
        mismatched += std::string(mismatched.empty() ? "" : ", ") + axis.axis + " stride " + std::to_string(stride) +
                      " (torchtitan: " + std::to_string(axis.stride) + ")";
    }
    if (!mismatched.empty())
      unexpressed.push_back("rank layout: torchtitan orders its mesh pp, dp_replicate, dp_shard, cp, tp (tp innermost); "
                            "the plan's " + mismatched);
  }

  static std::string launch_script(const paraplan::ExportContext& context, const pp_cluster& cluster) {
    const int64_t per_node = cluster.gpus_per_node > 0 ? std::min(cluster.gpus_per_node, cluster.num_gpus)
                                                       : cluster.num_gpus;
    const int64_t nodes = per_node > 0 ? (cluster.num_gpus + per_node - 1) / per_node : 1;
    std::ostringstream out;
    out << "#!/usr/bin/env bash\n"
        << "# torchtitan launch for " << context.recipe_name() << " (paraplan export): " << nodes
        << " node(s) x " << per_node << " GPUs.\n"
        << "# Run it on every node (or under a scheduler) with MASTER_ADDR / MASTER_PORT naming node 0, from a\n"
        << "# torchtitan checkout. Without the job file, pass the lines of torchtitan_overrides.txt instead.\n"
        << "set -euo pipefail\n"
        << "HERE=\"$(cd \"$(dirname \"${BASH_SOURCE[0]}\")\" && pwd)\"\n"
        << "NNODES=\"${NNODES:-" << nodes << "}\"\n"
        << "NPROC_PER_NODE=\"${NPROC_PER_NODE:-" << per_node << "}\"\n"
        << "CONFIG_FILE=\"${CONFIG_FILE:-$HERE/torchtitan_job.toml}\"\n"
        << "torchrun --nnodes \"$NNODES\" --nproc-per-node \"$NPROC_PER_NODE\" \\\n"
        << "  --rdzv-backend c10d --rdzv-endpoint \"${MASTER_ADDR:-localhost}:${MASTER_PORT:-29500}\" \\\n"
        << "  -m torchtitan.train --job.config_file \"$CONFIG_FILE\" \"$@\"\n";
    return out.str();
  }

  int64_t steps_;
  std::string dataset_, tokenizer_;
};

}  // namespace

PARAPLAN_PLUGIN(Torchtitan)
