#include "host/validate/run_recipe.h"

#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <sstream>

#include "host/core/errors.h"
#include "host/core/toml_quote.h"
#include "host/recipe/recipe_reader.h"
#include "paraplan/names.h"

namespace paraplan::host {
namespace {

// The product, or INT64_MAX where it would overflow (a CSV's degrees have no upper bound).
int64_t saturating_product(std::initializer_list<int64_t> factors) {
  int64_t product = 1;
  for (int64_t factor : factors)
    if (__builtin_mul_overflow(product, factor, &product)) return INT64_MAX;
  return product;
}

// The row's etp, or where it is blank the one Megatron-LM allows: tp's degree (its default), or 1
// when ep x tp does not divide tp x cp x dp but ep does (etp x ep must divide it).
int64_t expert_tensor_parallel_size(const MeasuredRun& run) {
  if (run.etp) return *run.etp;
  const int64_t stage = saturating_product({run.tp, run.cp, run.dp});
  if (run.tp > 1 && stage % saturating_product({run.ep, run.tp}) != 0 && stage % run.ep == 0) return 1;
  return run.tp;
}

// Rows the bundled strategies cannot express, with the reason.
void check_expressible(const MeasuredRun& run) {
  auto refuse = [&](const std::string& reason) { throw PlanError(run_recipe_name(run) + ": " + reason); };
  if (!run.vocab) refuse("the vocabulary size is not published (column 'vocab' is blank)");
  const int64_t product = saturating_product({run.tp, run.pp, run.dp, run.cp});
  if (product != run.num_gpus)
    refuse("tp x pp x dp x cp = " + std::to_string(run.tp) + " x " + std::to_string(run.pp) + " x " +
           std::to_string(run.dp) + " x " + std::to_string(run.cp) + " = " + std::to_string(product) +
           ", not num_gpus = " + std::to_string(run.num_gpus));
  // Megatron-LM carves expert parallelism out of cp x dp, and out of tp x cp x dp with etp = 1.
  const int64_t etp = expert_tensor_parallel_size(run);
  const int64_t carved = saturating_product({etp == 1 ? run.tp : 1, run.cp, run.dp});
  if (run.ep > 1 && carved % run.ep != 0)
    refuse("ep = " + std::to_string(run.ep) + " does not divide " + (etp == 1 && run.tp > 1 ? "tp x " : "") +
           "cp x dp = " + std::to_string(carved) + " (the ranks expert parallelism is carved out of)");
  if (run.pp == 1 && run.vpp.value_or(1) > 1)
    refuse("vpp = " + std::to_string(*run.vpp) + " needs pipeline parallelism, but pp = 1");
  // Experts split like attention (etp = tp, Megatron-LM's default) or whole (etp = 1).
  if (run.ep > 1 && etp != 1 && etp != run.tp)
    refuse("etp = " + std::to_string(etp) + " is neither 1 nor tp = " + std::to_string(run.tp) +
           ": an expert tensor-parallel group of its own size is not modelled");
  if (run.fsdp) {
    if (run.zero_stage != 3) refuse("fsdp = " + std::to_string(*run.fsdp) + " is a shard group of ZeRO-3, but zero_stage is not 3");
    if (run.dp % *run.fsdp != 0)
      refuse("fsdp = " + std::to_string(*run.fsdp) + " does not divide dp = " + std::to_string(run.dp));
  }
}

// TOML array of strings.
std::string string_array(const std::vector<std::string>& items) {
  std::string out = "[";
  for (const std::string& item : items) out += (out.size() > 1 ? ", " : "") + toml_quoted(item);
  return out + "]";
}

// TOML text written key by key; an absent optional writes nothing (the search's default).
class RecipeText {
 public:
  void table(const char* header) { text_ << (text_.tellp() > 0 ? "\n" : "") << header << "\n"; }
  void raw(const char* key, const std::string& toml) { text_ << key << " = " << toml << "\n"; }
  void integer(const char* key, int64_t value) { raw(key, std::to_string(value)); }
  void optional_integer(const char* key, const std::optional<int64_t>& value) {
    if (value) integer(key, *value);
  }
  void boolean(const char* key, bool value) { raw(key, value ? "true" : "false"); }
  void string(const char* key, const std::string& value) { raw(key, toml_quoted(value)); }
  void optional_string(const char* key, const std::optional<std::string>& value) {
    if (value) string(key, *value);
  }
  void strategy(const char* name) {
    table("[[strategy]]");
    string("name", name);
  }
  std::string str() const { return text_.str(); }

 private:
  std::ostringstream text_;
};

}  // namespace

std::string run_recipe_name(const MeasuredRun& run) {
  return run.file + ":" + std::to_string(run.line) + " (row " + run.id + ")";
}

std::vector<std::string> unlisted_strategies_tried(const MeasuredRun& run) {
  if (!run.sequence_parallel && run.tp > 1 && run.cp == 1) return {"sp"};
  return {};
}

std::string run_recipe_text(const MeasuredRun& run) {
  check_expressible(run);
  RecipeText recipe;
  recipe.string("description", "measured run " + run.id + " (" + run.file + ":" + std::to_string(run.line) + ")");

  recipe.table("[model]");
  recipe.integer("layers", run.layers);
  recipe.integer("hidden", run.hidden);
  recipe.integer("heads", run.heads);
  recipe.optional_integer("kv_heads", run.kv_heads);
  recipe.optional_integer("head_dim", run.head_dim);
  recipe.optional_integer("ffn_hidden", run.ffn_hidden);
  if (!run.ffn_type.empty()) recipe.string("ffn_type", run.ffn_type);
  recipe.integer("vocab", *run.vocab);
  recipe.integer("seq_len", run.seq_len);
  recipe.optional_integer("moe_experts", run.moe_experts);
  recipe.optional_integer("moe_top_k", run.moe_top_k);
  recipe.optional_integer("moe_ffn_hidden", run.moe_ffn_hidden);
  recipe.optional_integer("moe_shared_experts", run.moe_shared_experts);
  if (!run.attention.empty()) recipe.string("attention", run.attention);
  if (!run.layer_pattern.empty()) recipe.string("layer_pattern", run.layer_pattern);
  for (const auto& [key, value] : run.layer_stack) recipe.integer(key.c_str(), value);
  recipe.optional_string("position_embedding", run.position_embedding);
  if (run.linear_bias) recipe.boolean("linear_bias", *run.linear_bias);
  if (run.activation_clamp) recipe.raw("activation_clamp", std::to_string(*run.activation_clamp));
  // Published runs of these families train without dropout (their configs' hidden_dropout 0).
  if (run.layered()) recipe.raw("dropout", "0.0");

  recipe.table("[training]");
  recipe.integer("global_batch", run.global_batch);
  recipe.optional_integer("micro_batch", run.micro_batch);  // blank: searched
  recipe.optional_string("recompute", run.recompute);       // blank: searched
  recipe.string("precision", run.precision);
  recipe.optional_string("main_grads", run.main_grads);  // blank: the recipe's fp32
  recipe.optional_string("master_weights", run.master_weights);  // blank: separate
  if (!run.recompute_modules.empty()) recipe.raw("recompute_modules", string_array(run.recompute_modules));
  if (!run.cuda_graph_modules.empty()) recipe.raw("cuda_graph_modules", string_array(run.cuda_graph_modules));
  if (run.flash_attention == false) recipe.boolean("flash_attention", false);
  recipe.optional_string("attention_kernel", run.attention_kernel);  // blank: tuned
  recipe.optional_string("elementwise_kernels", run.elementwise_kernels);  // blank: fused
  if (run.fp8_attention == true) recipe.boolean("fp8_attention", true);
  if (run.moe_fused_mlp == true) recipe.boolean("moe_fused_mlp", true);
  recipe.optional_integer("cpu_offloading_num_layers", run.cpu_offloading_num_layers);  // blank: none
  recipe.optional_integer("recompute_num_layers", run.recompute_num_layers);  // blank: searched with full

  recipe.table("[cluster]");
  recipe.string("hardware", run.hardware_path.empty() ? run.hardware : run.hardware_path);
  recipe.integer("num_gpus", run.num_gpus);
  recipe.optional_integer("gpus_per_node", run.gpus_per_node);
  // Megatron-LM's layout, which the published runs used; left out, the search would try every order.
  recipe.raw("mesh_order", "[\"tp\", \"cp\", \"ep\", \"dp\", \"pp\"]");

  // The published plan is held; of the strategies it does not list, only these are tried.
  recipe.table("[search]");
  recipe.raw("try_unlisted", string_array(unlisted_strategies_tried(run)));

  if (run.tp > 1) {
    recipe.strategy("tp");
    recipe.integer("degree", run.tp);
    if (run.tp_comm_overlap == true) recipe.boolean(PP_TP_PARAM_OVERLAP, true);
    if (run.tp_overlap_method) recipe.string(PP_TP_PARAM_OVERLAP_METHOD, *run.tp_overlap_method);
  }
  if (run.cp > 1) {
    // Context parallelism as Megatron-LM runs it (ring attention, cp-comm-type p2p), with
    // Megatron SP over the tp ranks when published, both ways when blank.
    recipe.strategy("sp");
    recipe.string("mode", "ring");
    recipe.integer("degree", run.cp);
    if (run.tp > 1 && run.sequence_parallel != false)
      recipe.raw("megatron_sp", run.sequence_parallel ? "true" : "[false, true]");
  } else if (run.sequence_parallel == true && run.tp > 1) {
    recipe.strategy("sp");
    recipe.string("mode", "megatron");
  }
  if (run.pp > 1) {
    recipe.strategy("pp");
    recipe.integer("degree", run.pp);
    // Layer counts pp does not divide are split as Megatron-LM's uneven first and last stages are
    // (Llama 3 405B: 7, 8 x 14, 7); a count it divides is split evenly either way. Layers of
    // several kinds are split by their cost, the ends weighing a layer each.
    recipe.boolean("trim_ends", true);
    if (!run.vpp) {
      recipe.raw("schedule", "[\"1f1b\", \"interleaved-1f1b\"]");  // and virtual_stages: the plugin's cases
    } else if (*run.vpp == 1) {
      recipe.string("schedule", "1f1b");
    } else {
      recipe.string("schedule", "interleaved-1f1b");
      recipe.integer("virtual_stages", *run.vpp);
    }
  }
  if (run.ep > 1) {
    recipe.strategy("ep");
    recipe.integer("degree", run.ep);
    // Blank is Megatron's default (the all-to-all dispatcher, no overlap), not a choice to search.
    recipe.string("dispatcher", run.moe_dispatcher.value_or("alltoall"));
    recipe.boolean("overlap", run.moe_a2a_overlap.value_or(false));
    // Forced balance is Megatron's dropless routing with the router's choice overridden
    // (moe_router_force_load_balancing): no capacity, no imbalance. Blank keeps ep's capacity
    // buffers, as the token-dropping rows ran.
    if (run.forced_balance) recipe.raw("capacity_factor", "0.0");
    // Without tp the experts are whole whatever etp says (ep refuses a redundant etp = 1).
    if (run.tp > 1) recipe.integer("etp", expert_tensor_parallel_size(run));
  }
  if (run.fsdp && *run.fsdp < run.dp) {
    // ZeRO-3 inside groups of `fsdp` ranks, replicated across them (FSDP's HYBRID_SHARD).
    recipe.strategy(PP_STRATEGY_HSDP);
    recipe.integer("degree", run.dp);
    recipe.integer("shard_group", *run.fsdp);
    recipe.integer("stage", 3);
    if (run.dp_comm_overlap == false) recipe.boolean("overlap", false);
    return recipe.str();
  }
  recipe.strategy("fsdp");
  recipe.integer("degree", run.dp);
  recipe.optional_integer("stage", run.zero_stage);  // blank: searched
  if (run.dp_comm_overlap == false) recipe.boolean("overlap", false);
  return recipe.str();
}

std::unique_ptr<Recipe> run_recipe(const MeasuredRun& run) {
  RecipeReaderOptions options;
  options.search = true;
  return parse_recipe(run_recipe_text(run), run_recipe_name(run), options);
}

}  // namespace paraplan::host
