// The layer stack (ABI 1.6) against independent values: each preset's parameters by a hand
// formula written here from the model's published config, the publishers' headline totals, the
// kinds and their order as the configs place them, and the plan's layers of each kind per stage.
#include "host/model/layer_stack.h"

#include <map>
#include <string>

#include "host/model/parameter_count.h"
#include "host/plan/plan.h"
#include "host/recipe/recipe_reader.h"
#include "paraplan/cost_model.hpp"
#include "paraplan/sdk.hpp"
#include "test_support.h"

namespace paraplan::host {
namespace {

std::unique_ptr<Recipe> preset_recipe(const std::string& preset, const std::string& extra = "") {
  return parse_recipe("[model]\npreset = \"" + preset + "\"\n" + extra +
                          "[training]\nglobal_batch = 64\n[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 8\n",
                      "preset.toml");
}

std::map<std::string, int64_t> kind_counts(const LayerStack& stack) {
  std::map<std::string, int64_t> counts;
  for (const pp_layer_kind& kind : stack.kinds()) counts[kind.name] = kind.count;
  return counts;
}

// Multi-head latent attention's weights per layer (DeepSeek-V2 sec. 2.1): W_DQ, the q latent's
// norm, W_UQ (nope + rope per head), W_DKV with the shared rotary key, the kv latent's norm,
// W_UK and W_UV, W_O.
double mla(double h, double heads, double q_lora, double kv_lora, double nope, double rope, double v) {
  return h * q_lora + q_lora + q_lora * heads * (nope + rope) + h * (kv_lora + rope) + kv_lora +
         kv_lora * heads * (nope + v) + heads * v * h;
}
double gqa(double h, double heads, double kv_heads, double d) { return h * (heads + 2 * kv_heads) * d + heads * d * h; }
double swiglu(double h, double f) { return 3 * h * f; }

TEST(LayerStack, DeepSeekV3MatchesItsConfigAndHeadline) {
  auto recipe = preset_recipe("deepseek-v3");
  const double h = 7168, vocab = 129280;
  const double attention = mla(h, 128, 1536, 512, 128, 64, 128) + 2 * h;  // + the two layer norms
  const double dense = attention + swiglu(h, 18432);
  const double routed = 256 * swiglu(h, 2048), shared = swiglu(h, 2048), router = 256 * h;
  const double moe = attention + router + shared + routed;
  const double mtp = moe + 3 * h + 2 * h * h;  // enorm, hnorm, eh_proj (2h -> h), final norm
  const ModelParameters counted = count_model_parameters(recipe->model.shape);
  EXPECT_DOUBLE_EQ(counted.layers, 3 * dense + 58 * moe);
  EXPECT_DOUBLE_EQ(counted.mtp, mtp);
  EXPECT_DOUBLE_EQ(counted.total_without_mtp(), 3 * dense + 58 * moe + 2 * vocab * h + h);
  // DeepSeek-V3 README: 671B total without the 14B MTP module; 37B activated, embedding and head
  // included (README_WEIGHTS: "36.7B ... including 0.9B for Embedding and 0.9B for the output Head").
  EXPECT_NEAR(counted.total_without_mtp() / 671e9, 1.0, 0.015);
  EXPECT_NEAR(counted.active / 37e9, 1.0, 0.015);
  EXPECT_DOUBLE_EQ(counted.active, 3 * dense + 58 * (attention + router + shared + 8 * swiglu(h, 2048)) + 2 * vocab * h + h);
  // README_WEIGHTS: the MTP module holds 11.5B unique parameters.
  EXPECT_NEAR(counted.mtp / 11.5e9, 1.0, 0.015);
  const std::map<std::string, int64_t> expected{{"mla+dense", 3}, {"mla+moe", 58}, {"mtp:mla+moe", 1}};
  EXPECT_EQ(kind_counts(recipe->model.layers), expected);
  EXPECT_EQ(recipe->model.layers.sequence().size(), 62u);
  EXPECT_EQ(recipe->model.layers.kinds()[recipe->model.layers.sequence()[2]].mlp, PP_MLP_DENSE);
  EXPECT_EQ(recipe->model.layers.kinds()[recipe->model.layers.sequence()[3]].mlp, PP_MLP_MOE);
}

TEST(LayerStack, KimiK2MatchesItsConfigAndHeadline) {
  auto recipe = preset_recipe("kimi-k2");
  const double h = 7168, vocab = 163840;
  const double attention = mla(h, 64, 1536, 512, 128, 64, 128) + 2 * h;
  const double moe = attention + 384 * h + swiglu(h, 2048) + 384 * swiglu(h, 2048);
  const double dense = attention + swiglu(h, 18432);
  const ModelParameters counted = count_model_parameters(recipe->model.shape);
  EXPECT_DOUBLE_EQ(counted.total(), dense + 60 * moe + 2 * vocab * h + h);
  // Moonshot's "1T total, 32B activated" rounds 1.04T (Kimi K2 technical report figures as
  // quoted); against 1.000T the count is 2.6 % over.
  EXPECT_NEAR(counted.total() / 1.04e12, 1.0, 0.015);
  EXPECT_NEAR(counted.active / 32e9, 1.0, 0.03);
}

TEST(LayerStack, Qwen3MoeModelsMatchTheirConfigsAndHeadlines) {
  struct Case {
    const char* preset;
    double layers, h, heads, kv, experts, top_k, f, vocab, total, active;
  };
  // Qwen3 model cards: 30.5B / 3.3B and 235B / 22B (QK norms, 2 x 128 per layer, not counted).
  for (const Case& c : {Case{"qwen3-30b-a3b", 48, 2048, 32, 4, 128, 8, 768, 151936, 30.5e9, 3.3e9},
                        Case{"qwen3-235b-a22b", 94, 4096, 64, 4, 128, 8, 1536, 151936, 235e9, 22e9}}) {
    SCOPED_TRACE(c.preset);
    auto recipe = preset_recipe(c.preset);
    const double attention = gqa(c.h, c.heads, c.kv, 128) + 2 * c.h, router = c.experts * c.h;
    const ModelParameters counted = count_model_parameters(recipe->model.shape);
    EXPECT_DOUBLE_EQ(counted.total(), c.layers * (attention + router + c.experts * swiglu(c.h, c.f)) + 2 * c.vocab * c.h + c.h);
    EXPECT_DOUBLE_EQ(counted.active, c.layers * (attention + router + c.top_k * swiglu(c.h, c.f)) + 2 * c.vocab * c.h + c.h);
    EXPECT_NEAR(counted.total() / c.total, 1.0, 0.015);
    EXPECT_NEAR(counted.active / c.active, 1.0, 0.02);
  }
}

TEST(LayerStack, GptOssAlternatesSlidingAndFullAttention) {
  auto recipe = preset_recipe("gpt-oss-120b");
  const double h = 2880, vocab = 201088;
  const double layer = gqa(h, 64, 8, 64) + 2 * h + 128 * h, experts = 128 * swiglu(h, 2880);
  const ModelParameters counted = count_model_parameters(recipe->model.shape);
  EXPECT_DOUBLE_EQ(counted.total(), 36 * (layer + experts) + 2 * vocab * h + h);
  // openai/gpt-oss README: "117B parameters with 5.1B active"; the active figure counts the
  // unembedding, not the embedding lookup (biases and attention sinks, ~0.1 %, not counted here).
  EXPECT_NEAR(counted.total() / 116.8e9, 1.0, 0.015);
  EXPECT_NEAR((counted.active - vocab * h) / 5.1e9, 1.0, 0.015);
  const LayerStack& stack = recipe->model.layers;
  const std::map<std::string, int64_t> expected{{"gqa-swa+moe", 18}, {"gqa+moe", 18}};
  EXPECT_EQ(kind_counts(stack), expected);
  // Hugging Face layer_types: sliding on even layers (0, 2, ...), full on odd ones.
  EXPECT_EQ(stack.kinds()[stack.sequence()[0]].sliding_window, 128);
  EXPECT_EQ(stack.kinds()[stack.sequence()[1]].sliding_window, 0);
}

TEST(LayerStack, NemotronThreeNanoFollowsItsHybridPattern) {
  auto recipe = preset_recipe("nemotron-3-nano");
  const double h = 2688, vocab = 131072;
  // Megatron-LM's MambaMixer: in_proj h -> 2·d_inner + 2·G·N + H, conv1d over d_inner + 2·G·N
  // channels (kernel 4, with bias), A_log, D, dt_bias, the gated norm, out_proj; plus its norm.
  const double inner = 64 * 64, bc = 2 * 8 * 128;
  const double mamba = h * (2 * inner + bc + 64) + (inner + bc) * 5 + 3 * 64 + inner + inner * h + h;
  const double attention = gqa(h, 32, 2, 128) + h;
  const double moe = 128 * h + 2 * h * 3712 + 128 * 2 * h * 1856 + h;  // squared ReLU: up and down
  const ModelParameters counted = count_model_parameters(recipe->model.shape);
  EXPECT_DOUBLE_EQ(counted.total(), 23 * mamba + 6 * attention + 23 * moe + 2 * vocab * h + h);
  // Nemotron 3 Nano model card: 31.6B total, 3.6B active with embeddings.
  EXPECT_NEAR(counted.total() / 31.6e9, 1.0, 0.015);
  EXPECT_NEAR(counted.active / 3.6e9, 1.0, 0.015);
  const std::map<std::string, int64_t> expected{{"mamba", 23}, {"moe", 23}, {"gqa", 6}};
  EXPECT_EQ(kind_counts(recipe->model.layers), expected);
}

TEST(LayerStack, OtherPresetsMatchTheirHeadlines) {
  struct Case {
    const char* preset;
    double total, active;  // published, embedding and head included
  };
  // Mixtral 8x22B: 141B / 39B (Mistral AI). Llama 4 text models: 108B (Scout's 109B counts the
  // vision encoder) and 400B, 17B active (model card). GPT-OSS-20B: 20.9B (README). Nemotron-4
  // 15B: 12.5B non-embedding + 3.2B embedding (its report, Table 1), dense.
  for (const Case& c : {Case{"mixtral-8x22b", 141e9, 39e9}, Case{"llama4-scout", 107.8e9, 17e9},
                        Case{"llama4-maverick", 400e9, 17e9}, Case{"gpt-oss-20b", 20.9e9, 0},
                        Case{"nemotron4-15b", 15.7e9, 15.7e9}}) {
    SCOPED_TRACE(c.preset);
    const ModelParameters counted = count_model_parameters(preset_recipe(c.preset)->model.shape);
    EXPECT_NEAR(counted.total() / c.total, 1.0, 0.015);
    if (c.active > 0) {
      EXPECT_NEAR(counted.active / c.active, 1.0, 0.03);
    }
  }
  // Llama 4 Maverick: interleave_moe_layer_step 2, so layers 1, 3, ..., 47 are the MoE ones.
  auto maverick = preset_recipe("llama4-maverick");
  const LayerStack& stack = maverick->model.layers;
  EXPECT_EQ(stack.kinds()[stack.sequence()[0]].mlp, PP_MLP_DENSE);
  EXPECT_EQ(stack.kinds()[stack.sequence()[1]].mlp, PP_MLP_MOE);
  EXPECT_EQ(kind_counts(stack), (std::map<std::string, int64_t>{{"gqa+dense", 24}, {"gqa+moe", 24}}));
}

// DeepSeek-V3's config: n_group 8, topk_group 4 on every MoE kind, none on the dense ones. A
// uniform model that limits its routing is more than the 1.5 fields say, unless the reader writes
// the groups itself.
TEST(LayerStack, RouterGroupsAreOnTheMoeKinds) {
  auto deepseek = preset_recipe("deepseek-v3");
  for (const pp_layer_kind& kind : deepseek->model.layers.kinds()) {
    EXPECT_EQ(kind.router_groups, kind.mlp == PP_MLP_MOE ? 8 : 0) << kind.name;
    EXPECT_EQ(kind.router_group_topk, kind.mlp == PP_MLP_MOE ? 4 : 0) << kind.name;
  }
  auto mixtral = preset_recipe("mixtral-8x7b", "moe_router_groups = 4\nmoe_router_group_topk = 2\n");
  EXPECT_EQ(paraplan::beyond_uniform_transformer(mixtral->model.shape), "group-limited routing");
  EXPECT_EQ(paraplan::beyond_uniform_transformer(mixtral->model.shape, /*writes_router_groups=*/true), "");
  EXPECT_EQ(paraplan::beyond_uniform_transformer(preset_recipe("mixtral-8x7b")->model.shape), "");
}

TEST(LayerStack, AUniformRecipeIsOneKind) {
  auto recipe = preset_recipe("llama3-70b");
  ASSERT_EQ(recipe->model.layers.kinds().size(), 1u);
  EXPECT_EQ(recipe->model.layers.kinds()[0].count, 80);
  EXPECT_STREQ(recipe->model.layers.kinds()[0].name, "gqa+dense");
  EXPECT_EQ(paraplan::beyond_uniform_transformer(recipe->model.shape), "");
  EXPECT_EQ(paraplan::beyond_uniform_transformer(preset_recipe("deepseek-v3")->model.shape), "3 kinds of layer");
  // What the 1.5 fields cannot say, even of one kind: the exporters refuse it rather than write
  // a model without it.
  EXPECT_EQ(paraplan::beyond_uniform_transformer(preset_recipe("llama3-70b", "linear_bias = true\n")->model.shape),
            "biases on the linear layers");
  EXPECT_EQ(paraplan::beyond_uniform_transformer(preset_recipe("llama3-70b", "activation_clamp = 7.0\n")->model.shape),
            "a clamped GLU");
  EXPECT_EQ(paraplan::beyond_uniform_transformer(preset_recipe("llama3-70b", "position_embedding = \"yarn\"\n")->model.shape),
            "YaRN-scaled rotary embeddings");
}

TEST(LayerStack, MalformedLayerKeysNameTheKey) {
  struct Case {
    const char* keys;
    const char* message;
  };
  for (const Case& c : {
           Case{"attention = \"mla\"\n", "model.kv_lora_rank: is required with attention = \"mla\""},
           Case{"kv_lora_rank = 512\n", "model.kv_lora_rank: the MLA shapes need attention = \"mla\""},
           Case{"dense_layers = 2\n", "model.dense_layers: leading dense layers need moe_experts > 0"},
           Case{"layer_pattern = \"M*\"\n", "model.layer_pattern: has 2 letters, but layers = 80"},
           Case{"full_attention_every = 2\n", "model.full_attention_every: needs sliding_window > 0"},
           Case{"attention = \"flash\"\n", "model.attention: 'flash' is not one of mha|gqa|mla"},
           Case{"dropout = 1.5\n", "model.dropout: must be a number in [0, 0.99], got 1.5"},
           Case{"position_embedding = \"alibi\"\n", "model.position_embedding: 'alibi' is not one of"},
       }) {
    SCOPED_TRACE(c.keys);
    try {
      preset_recipe("llama3-70b", c.keys);
      ADD_FAILURE() << "accepted";
    } catch (const InputError& error) {
      EXPECT_NE(std::string(error.what()).find(c.message), std::string::npos) << error.what();
    }
  }
  // Group-limited routing by Megatron-Core's rules (TransformerConfig), on Mixtral's 8 experts, top-2.
  for (const Case& c : {
           Case{"moe_router_groups = 3\nmoe_router_group_topk = 1\n", "model.moe_router_groups: 3 must divide moe_experts = 8"},
           Case{"moe_router_groups = 4\nmoe_router_group_topk = 5\n", "model.moe_router_group_topk: 5 exceeds moe_router_groups = 4"},
           Case{"moe_router_groups = 4\nmoe_router_group_topk = 3\n", "model.moe_router_group_topk: 3 exceeds moe_top_k = 2"},
           Case{"moe_router_groups = 8\nmoe_router_group_topk = 1\n", "1 groups of 1 experts hold fewer than moe_top_k = 2"},
           Case{"moe_router_groups = 4\n", "model.moe_router_groups: needs moe_router_group_topk"},
           Case{"moe_router_group_topk = 2\n", "model.moe_router_group_topk: needs moe_router_groups"},
       }) {
    SCOPED_TRACE(c.keys);
    try {
      preset_recipe("mixtral-8x7b", c.keys);
      ADD_FAILURE() << "accepted";
    } catch (const InputError& error) {
      EXPECT_NE(std::string(error.what()).find(c.message), std::string::npos) << error.what();
    }
  }
  try {
    preset_recipe("llama3-70b", "moe_router_groups = 4\nmoe_router_group_topk = 2\n");
    ADD_FAILURE() << "accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("model.moe_router_groups: needs moe_experts > 0"), std::string::npos) << error.what();
  }
  // A pattern letter Megatron-LM's hybrid models do not have, with its position.
  try {
    preset_recipe("nemotron-3-nano", "layer_pattern = \"MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEMX\"\n");
    ADD_FAILURE() << "accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("letter 52 is 'X'"), std::string::npos) << error.what();
  }
}

// A 1.5 pipeline plugin places layer counts only: the host fills each stage in the model's order
// and leaves the MTP module on the last stage. DeepSeek-V3 on 16 stages as Megatron-Bridge splits
// it (4 layers each, 1 on the last with the MTP module).
TEST(LayerStack, StagesHoldTheirKindsInModelOrder) {
  auto recipe = preset_recipe("deepseek-v3");
  pp_training training = recipe->training;
  pp_cluster cluster{sizeof(pp_cluster), 16, 8};
  Plan plan(recipe->model.shape, training, cluster, 1);
  std::vector<pp_stage> stages(16, pp_stage{sizeof(pp_stage), 4, 0, 0, 0.0});
  stages.front().has_embedding = 1;
  stages.back().layers = 1, stages.back().has_head = 1;
  pp_pipeline pipeline{sizeof(pp_pipeline), PP_SCHEDULE_1F1B, 16, 1, 4, 0.0, 1.0};
  ASSERT_EQ(plan.api().set_pipeline(plan.api().plan, &pipeline, stages.data(), 16), PP_OK) << plan.refusal();
  const pp_plan_view_v1 view = plan.view();
  const paraplan::PlanView shown(view);
  auto kind = [&](const char* name) {
    for (uint32_t i = 0; i < view.layer_kind_count; ++i)
      if (std::string(shown.layer_kinds()[i].name) == name) return i;
    return PP_EVERY_LAYER_KIND;
  };
  EXPECT_EQ(shown.layers_on_stage(0, kind("mla+dense")), 3);
  EXPECT_EQ(shown.layers_on_stage(0, kind("mla+moe")), 1);
  EXPECT_EQ(shown.layers_on_stage(7, kind("mla+moe")), 4);
  EXPECT_EQ(shown.layers_on_stage(15, kind("mla+moe")), 1);
  EXPECT_EQ(shown.layers_on_stage(15, kind("mtp:mla+moe")), 1);
  EXPECT_EQ(view.stages[15].layers, 2);  // the MTP module joined the last stage
  // A layer count that disagrees with set_pipeline's is refused with the host's reason.
  std::vector<int64_t> counts(view.layer_count_entries, 0);
  EXPECT_NE(plan.api().set_layer_counts(plan.api().plan, counts.data(), counts.size()), PP_OK);
  EXPECT_NE(plan.refusal().find("set_layer_counts: stage 0 holds 0 layers by kind, but 4"), std::string::npos)
      << plan.refusal();
}

// A recipe for `preset` on `gpus` H100s with the given pipeline keys (and ep over the rest).
std::string pipelined(const std::string& preset, int64_t gpus, const std::string& pp_keys) {
  return "[model]\npreset = \"" + preset + "\"\n[training]\nglobal_batch = 512\nrecompute = \"full\"\n"
         "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = " + std::to_string(gpus) + "\n"
         "[[strategy]]\nname = \"pp\"\n" + pp_keys + "[[strategy]]\nname = \"fsdp\"\nstage = 1\n";
}

uint32_t kind_named(const paraplan::PlanView& view, const std::string& name) {
  for (uint32_t i = 0; i < view.raw().layer_kind_count; ++i)
    if (view.layer_kinds()[i].name == name) return i;
  return PP_EVERY_LAYER_KIND;
}

// Megatron-LM's documented DeepSeek-V3 layout on PP16 x VPP2 (docs/user-guide/features/
// pipeline_parallel_layout.md): the embedding and 3 layers, then 29 pairs, the MTP module, the loss.
TEST(LayerStack, AMegatronLayoutPlacesEveryLayer) {
  test::Evaluated run = test::evaluate_recipe(
      pipelined("deepseek-v3", 32,
                "degree = 16\nschedule = \"interleaved-1f1b\"\nlayout = \"Et*3|(tt|)*29,m|L\"\n"));
  const pp_plan_view_v1 raw = run.composed.plan->view();
  const paraplan::PlanView view(raw);
  ASSERT_EQ(raw.pipeline->virtual_stages, 2);
  const uint32_t dense = kind_named(view, "mla+dense"), moe = kind_named(view, "mla+moe"),
                 mtp = kind_named(view, "mtp:mla+moe");
  // Virtual stage 0 (stage 0, chunk 0): the 3 dense layers.
  EXPECT_EQ(view.layers_on_chunk(0, 0, dense), 3);
  EXPECT_EQ(view.layers_on_chunk(0, 0, moe), 0);
  // Virtual stages 1-29 hold two MoE layers each: stage 1's chunk 0 and chunk 1.
  EXPECT_EQ(view.layers_on_chunk(1, 0, moe), 2);
  EXPECT_EQ(view.layers_on_chunk(1, 1, moe), 2);
  // Virtual stage 30 (stage 14, chunk 1) holds the MTP module; 31 (stage 15, chunk 1) only the loss.
  EXPECT_EQ(view.layers_on_chunk(14, 1, mtp), 1);
  EXPECT_EQ(view.layers_on_chunk(15, 1, PP_EVERY_LAYER_KIND), 0);
  EXPECT_EQ(raw.stages[15].layers, 2);  // chunk 0: virtual stage 15, two MoE layers
  int64_t placed = 0;
  for (uint32_t stage = 0; stage < 16; ++stage) placed += raw.stages[stage].layers;
  EXPECT_EQ(placed, 62);
}

TEST(LayerStack, ABrokenLayoutSaysWhy) {
  test::expect_error<std::exception>([] { test::evaluate_recipe(pipelined("deepseek-v3", 16, "degree = 16\nlayout = \"Et*60|m|L\"\n")); },
                     {"places 60 decoder layers 't', the model has 61"});
  test::expect_error<std::exception>(
      [] { test::evaluate_recipe(pipelined("deepseek-v3", 16, "degree = 16\nlayout = \"E(t*4|)*15tXmL\"\n")); },
      {"'X' is not E (embedding)"});
}

// Without a layout, a stack of kinds that cost differently is split by cost: no split of the
// layers into consecutive stages has a smaller busiest stage (checked against every split by a
// dynamic program here, over the same per-layer costs).
TEST(LayerStack, LayersOfDifferentCostSplitByCost) {
  test::Evaluated run = test::evaluate_recipe(pipelined("nemotron-3-nano", 8, "degree = 8\n"));
  const pp_plan_view_v1 raw = run.composed.plan->view();
  const paraplan::PlanView view(raw);
  const paraplan::LayerKinds kinds = view.layer_kinds();
  std::vector<double> costs;
  for (int64_t i = 0; i < raw.model->layer_sequence_length; ++i)
    costs.push_back(paraplan::cost::layer_flops_per_token(kinds[kinds.kind_of_layer(i)], *raw.model));
  const size_t n = costs.size(), parts = 8;
  std::vector<double> prefix(n + 1, 0.0);
  for (size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + costs[i];
  // best[k][i]: the smallest busiest stage placing the first i layers on k stages.
  std::vector<std::vector<double>> best(parts + 1, std::vector<double>(n + 1, 1e300));
  best[0][0] = 0;
  for (size_t k = 1; k <= parts; ++k)
    for (size_t i = k; i <= n; ++i)
      for (size_t j = k - 1; j < i; ++j) best[k][i] = std::min(best[k][i], std::max(best[k - 1][j], prefix[i] - prefix[j]));
  double busiest = 0;
  size_t next = 0;
  for (uint32_t stage = 0; stage < raw.stage_count; ++stage) {
    double sum = 0;
    for (int64_t i = 0; i < raw.stages[stage].layers; ++i) sum += costs[next++];
    busiest = std::max(busiest, sum);
  }
  EXPECT_EQ(next, n);
  EXPECT_NEAR(busiest, best[parts][n], best[parts][n] * 1e-9);
}

// Megatron-LM's tensor parallelism on MLA (down projections duplicated, up projections
// column-parallel) and on Mamba-2 (in_proj column-, out_proj row-parallel): what each rank
// computes, and one all-reduce per row-parallel output forward, per kind of layer.
TEST(LayerStack, TensorParallelismSplitsEachKindAsMegatronDoes) {
  const std::string tp2 = "[[strategy]]\nname = \"tp\"\ndegree = 2\n";
  auto forward = [](const test::Evaluated& run, const std::string& name, const std::string& kind) {
    const pp_plan_view_v1 raw = run.composed.plan->view();
    const paraplan::PlanView view(raw);
    const uint32_t index = kind_named(view, kind);
    for (uint32_t i : view.ops_named_in(name, index))
      if (view.ops()[i].phase == PP_PHASE_FORWARD && view.op_layer_kind(i) == index) return view.ops()[i];
    ADD_FAILURE() << "no forward " << name << " in " << kind;
    return pp_op{};
  };
  auto reduces = [](const test::Evaluated& run, const std::string& kind) {
    const pp_plan_view_v1 raw = run.composed.plan->view();
    const paraplan::PlanView view(raw);
    int count = 0;
    for (uint32_t i : view.ops_named_in(PP_OP_TP_ALL_REDUCE, kind_named(view, kind)))
      count += view.ops()[i].phase == PP_PHASE_FORWARD && view.op_layer_kind(i) == kind_named(view, kind);
    return count;
  };
  const test::Evaluated deepseek = test::evaluate_recipe(
      "[model]\npreset = \"deepseek-v3\"\n[training]\nglobal_batch = 64\n[cluster]\nhardware = \"h100-sxm\"\n"
      "num_gpus = 2\n" + tp2);
  EXPECT_EQ(forward(deepseek, PP_OP_MLA_Q_DOWN, "mla+moe").n, 1536);      // replicated
  EXPECT_EQ(forward(deepseek, PP_OP_MLA_Q_UP, "mla+moe").n, 128 * 192 / 2);
  EXPECT_EQ(forward(deepseek, PP_OP_MLA_KV_UP, "mla+dense").n, 128 * 256 / 2);
  EXPECT_EQ(forward(deepseek, PP_OP_ATTN_OUT, "mla+dense").k, 128 * 128 / 2);
  EXPECT_EQ(reduces(deepseek, "mla+dense"), 2);
  EXPECT_EQ(reduces(deepseek, "mla+moe"), 2);
  const test::Evaluated nemotron = test::evaluate_recipe(
      "[model]\npreset = \"nemotron-3-nano\"\n[training]\nglobal_batch = 64\n[cluster]\nhardware = \"h100-sxm\"\n"
      "num_gpus = 2\n" + tp2);
  EXPECT_EQ(forward(nemotron, PP_OP_MAMBA_IN_PROJ, "mamba").n, (2 * 4096 + 2 * 8 * 128 + 64) / 2);
  EXPECT_EQ(forward(nemotron, PP_OP_MAMBA_OUT_PROJ, "mamba").k, 4096 / 2);
  EXPECT_EQ(reduces(nemotron, "mamba"), 1);  // a mixer-only layer: one row-parallel output
  EXPECT_EQ(reduces(nemotron, "moe"), 1);
  EXPECT_EQ(reduces(nemotron, "gqa"), 1);
}

// DeepSeek-V3 as DeepSeek trained it (arXiv 2412.19437, sec. 3.2-3.3): 2048 H800, PP16, EP64
// over 8 nodes, ZeRO-1 over the data-parallel rest, FP8, 4K sequences, and "recomputation of
// RMSNorm and MLA up-projection" with the MoE SwiGLU's output recomputed from its cached input
// (Megatron-LM: --recompute-modules mla_up_proj layernorm moe_act). It fits in 80 GB, as it did;
// keeping those activations instead would not.
TEST(LayerStack, DeepSeekV3FitsOnItsPublishedLayout) {
  auto recipe = [](const std::string& modules) {
    return "[model]\npreset = \"deepseek-v3\"\n[training]\nglobal_batch = 15360\nprecision = \"fp8\"\n"
           "recompute = \"selective\"\n" + modules +
           "[cluster]\nhardware = \"h800-sxm\"\nnum_gpus = 2048\n"
           "[[strategy]]\nname = \"pp\"\ndegree = 16\n[[strategy]]\nname = \"ep\"\ndegree = 64\n"
           "[[strategy]]\nname = \"fsdp\"\nstage = 1\n";
  };
  const test::Evaluated trained =
      test::evaluate_recipe(recipe("recompute_modules = [\"mla_up_proj\", \"layernorm\", \"moe_act\"]\n"));
  EXPECT_LT(trained.number("memory.per_gpu_bytes"), 80e9);
  const test::Evaluated kept = test::evaluate_recipe(recipe(""));
  EXPECT_GT(kept.number("memory.per_gpu_bytes"), 80e9);
  // The recomputed modules' activations are what differs: Q, K, V of every MLA layer, the norms'
  // outputs, the experts' activation outputs; the model state is the same (stage 1: four MoE
  // layers either way; which stage is the fullest may differ).
  EXPECT_DOUBLE_EQ(trained.number("stages.1.parameters_bytes"), kept.number("stages.1.parameters_bytes"));
  EXPECT_LT(trained.number("stages.1.activations_bytes"), kept.number("stages.1.activations_bytes"));
}

// The rank programs (simulate, MPI, Chakra) walk each layer's own kind: its ops and its
// activations. Without overlap the simulator runs the same per-kind work as the analytic model
// (compute time equal), holds the same memory, and differs in the step only by how the
// pipeline's fill and drain are counted (closed form vs the schedule run: 1.2 % on a uniform
// Llama 3 8B at this setting), on stages that hold different mixes of kinds.
TEST(LayerStack, RankProgramsRunEachLayersOwnKind) {
  for (const char* preset : {"nemotron-3-nano", "gpt-oss-20b"}) {
    SCOPED_TRACE(preset);
    const std::string recipe = std::string("[model]\npreset = \"") + preset +
                               "\"\nseq_len = 4096\n[training]\nglobal_batch = 128\nrecompute = \"selective\"\n"
                               "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 8\n"
                               "[[strategy]]\nname = \"pp\"\ndegree = 4\n"
                               "[[strategy]]\nname = \"fsdp\"\nstage = 1\noverlap = false\n";
    const test::Evaluated analytic = test::evaluate_recipe(recipe, "analytic");
    const test::Evaluated simulated = test::evaluate_recipe(recipe, "simulate");
    const paraplan::PlanView view(simulated.composed.plan->view());
    ASSERT_GT(view.raw().layer_kind_count, 1u);
    EXPECT_NEAR(simulated.number("time.compute_s") / analytic.number("time.compute_s"), 1.0, 1e-9);
    EXPECT_NEAR(simulated.number("memory.per_gpu_bytes") / analytic.number("memory.per_gpu_bytes"), 1.0, 1e-9);
    EXPECT_NEAR(simulated.number("time.step_s") / analytic.number("time.step_s"), 1.0, 0.03);
  }
}

// The per-stage memory table of the three scenarios docs/cost-model.md works by hand ("Memory
// per stage, by hand"): the same formulas, written out again here from the models' configs.
TEST(LayerStack, PerStageMemoryIsTheHandCalculation) {
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  auto scenario = [](const char* name) {
    return test::evaluate_file(std::string(PARAPLAN_RECIPES_DIR) + "/scenarios/" + name, "analytic");
  };
  auto expect_stage = [](const test::Evaluated& run, int stage, double replicated, double routed, double dp, double edp,
                         double activations) {
    SCOPED_TRACE("stage " + std::to_string(stage));
    const std::string key = "stages." + std::to_string(stage) + ".";
    const double parameters = replicated + routed;
    EXPECT_NEAR(run.number(key + "parameters_bytes"), 2 * parameters, 1.0);
    EXPECT_NEAR(run.number(key + "gradients_bytes"), 4 * parameters, 1.0);
    EXPECT_NEAR(run.number(key + "optimizer_bytes"), 12 * replicated / dp + 12 * routed / edp, 1.0);
    EXPECT_NEAR(run.number(key + "activations_bytes"), activations, activations * 1e-9);
    EXPECT_NEAR(run.number(key + "other_bytes"), kGiB, 1.0);
    EXPECT_NEAR(run.number(key + "per_gpu_bytes"), 18 * parameters - 12 * replicated * (1 - 1 / dp) -
                                                       12 * routed * (1 - 1 / edp) + activations + kGiB,
                1e3);
  };
  {  // DeepSeek-V3, stage 3 of 16: 4 MoE layers, FP8, mla_up_proj + layernorm + moe_act recomputed.
    const double h = 7168, a = 128, q_lora = 1536, kv_lora = 512, nope = 128, rope = 64, v = 128, tokens = 4096;
    const double per_layer = mla(h, a, q_lora, kv_lora, nope, rope, v) + 2 * h + h * 256 + swiglu(h, 2048);
    const double routed = 256 * swiglu(h, 2048) / 64;
    // The 8 routed copies keep their FP8 input and SwiGLU's two bf16 halves (moe_act recomputed);
    // the shared expert keeps its halves and its FP8 product: 2 x 2 + 1 bytes per element.
    const double kept = 2 * h + 2 * (q_lora + kv_lora) + 2 * rope + 1 * a * v + 2 * h + 4 * 256 + 1 * 8 * h +
                        2 * 2 * 8 * 2048 + (2 * 2 + 1) * 2048;
    // DualPipe-V: chunk 0 (virtual stage 3, 2 layers) holds 2p - s = 29 sets, chunk 1 (virtual
    // stage 28, 2 layers) s + 1 = 4.
    expect_stage(scenario("deepseek-v3-2048xh800.toml"), 3, 4 * per_layer, 4 * routed, 128, 2,
                 kept * tokens * 2 * (29 + 4));
  }
  {  // GPT-OSS-120B, stage 0 of 4: the embedding and 9 layers, bf16, layernorm + moe_act recomputed.
    const double h = 2880, q = 64 * 64, kv = 8 * 64, tokens = 4096, vocab = 201088;
    const double per_layer = gqa(h, 64, 8, 64) + 2 * h + h * 128;
    const double kept = 2 * h + 2 * q + 2 * 2 * kv + 2 * q + 2 * h + 4 * 128 + 2 * 4 * h + 2 * 2 * 4 * 2880;
    expect_stage(scenario("gpt-oss-120b-64xh100.toml"), 0, 9 * per_layer + vocab * h, 9 * 128 * swiglu(h, 2880) / 8, 16,
                 2, kept * tokens * 9 * 4);
  }
  {  // Nemotron 3 Nano, one stage on 8 B300: MXFP8, micro-batch 4, nothing recomputed.
    const double h = 2688, D = 64 * 64, H = 64, N = 128, G = 8, E = 128, vocab = 131072, tokens = 4 * 8192;
    const double g = 1 + 1.0 / 32, q = 32 * 128, kv = 2 * 128;
    const double mamba = h * (2 * D + 2 * G * N + H) + (D + 2 * G * N) * 5 + 3 * H + D + D * h + h;
    const double moe_dense = h * E + h + 2 * h * 3712, routed = E * 2 * h * 1856 / 8;
    const double attention = gqa(h, 32, 2, 128) + h;
    const double kept_mamba = 2 * h + g * h + 2 * (2 * D + 2 * G * N + H) + 2 * (D + 2 * G * N) + 4 * H * 64 * N / 128 +
                              2 * D + g * D;
    // 6 routed copies of the input; the routed and the shared experts' hidden (2 + g bytes each).
    const double kept_moe = 2 * h + g * h + 4 * E + g * 6 * h + (2 + g) * (6 * 1856 + 3712);
    const double kept_attention = 2 * h + g * h + 2 * q + 4 * kv + g * q;
    const double activations = (23 * kept_mamba + 23 * kept_moe + 6 * kept_attention + 4 * vocab) * tokens;
    expect_stage(scenario("nemotron-3-nano-8xb300.toml"), 0, 23 * mamba + 23 * moe_dense + 6 * attention + 2 * vocab * h + h,
                 23 * routed, 8, 1, activations);
  }
}

// cost::layer_flops_per_token (what MFU and the pipeline's cost split count) and the workload's
// ops (what the executors price) are written apart; per kind of layer they must agree: every
// forward GEMM and attention core of one layer, per token.
TEST(LayerStack, ModelFlopsPerKindAreTheWorkloadsForwardOps) {
  for (const char* preset : {"deepseek-v3", "gpt-oss-20b", "nemotron-3-nano", "qwen3-30b-a3b", "llama4-maverick"}) {
    SCOPED_TRACE(preset);
    const test::Evaluated run = test::evaluate_recipe(
        std::string("[model]\npreset = \"") + preset + "\"\nseq_len = 2048\n[training]\nglobal_batch = 1\n"
        "[cluster]\nhardware = \"b300\"\nnum_gpus = 1\n");
    const paraplan::PlanView view(run.composed.plan->view());
    const paraplan::LayerKinds kinds = view.layer_kinds();
    std::vector<double> forward(kinds.size(), 0.0);
    const auto ops = view.ops();
    for (size_t i = 0; i < ops.size(); ++i) {
      const pp_op& op = ops[i];
      if (op.scope != PP_SCOPE_LAYER || op.phase != PP_PHASE_FORWARD) continue;
      if (op.kind != PP_OP_GEMM && op.kind != PP_OP_ATTENTION) continue;
      const uint32_t kind = view.op_layer_kind(i);
      for (uint32_t k = 0; k < kinds.size(); ++k)
        if (kind == k || kind == PP_EVERY_LAYER_KIND) forward[k] += op.flops;  // flops: every instance
    }
    const double tokens = 2048;  // one micro-batch of one sequence
    for (uint32_t k = 0; k < kinds.size(); ++k) {
      SCOPED_TRACE(kinds[k].name);
      EXPECT_NEAR(forward[k] / tokens / cost::layer_flops_per_token(kinds[k], view.model()), 1.0, 1e-9);
    }
  }
}

}  // namespace
}  // namespace paraplan::host
