// The analytic executor's batched figures for the search (pp_executor_v1.evaluate, implemented in
// plugins/executors/analytic/plan_figures.cc) against its run() (analytic.cc): run() reports the
// same figures for the plan's own layout, and its breakdown, summed by stage and owner in
// stage_cost.cc (an independent walk over every op), must add up to the batched step time: on
// every shipped recipe, under the plan's own mesh layout and under permuted ones, and with no
// layout at all (memory only).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "host/plan/plan.h"
#include "test_support.h"

namespace paraplan::host {
namespace {

std::vector<std::filesystem::path> shipped_recipes() {
  std::vector<std::filesystem::path> files;
  for (const std::filesystem::path& directory :
       {std::filesystem::path(PARAPLAN_RECIPES_DIR), std::filesystem::path(PARAPLAN_RECIPES_DIR) / "scenarios"})
    for (const auto& entry : std::filesystem::directory_iterator(directory))
      if (entry.is_regular_file() && entry.path().extension() == ".toml") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

double number(const ResultTree& results, const std::string& key) {
  const ResultValue* value = results.find(key);
  if (!value || !std::holds_alternative<double>(*value)) throw std::runtime_error("run() reported no number " + key);
  return std::get<double>(*value);
}

void expect_near(double batched, double run, const std::string& what) {
  EXPECT_LE(std::abs(batched - run), 1e-9 * std::max(std::abs(batched), std::abs(run)))
      << what << ": evaluate() " << batched << ", run() " << run;
}

// One recipe composed as `paraplan evaluate` composes it, with an analytic executor instance
// configured by the recipe's [executor.analytic] table.
struct Fixture {
  std::unique_ptr<Recipe> recipe;
  std::unique_ptr<HardwareBinding> hardware;
  ComposedPlan composed;
  const LoadedPlugin* executor = nullptr;
  std::unique_ptr<PluginInstance> instance;

  explicit Fixture(std::unique_ptr<Recipe> read) : recipe(std::move(read)) {
    const PluginCatalog& catalog = test::bundled_catalog();
    hardware = open_hardware(*recipe, catalog);
    executor = &catalog.require("analytic", PP_KIND_EXECUTOR);
    composed = compose_plan(*recipe, catalog, gpus_per_node(*recipe, *hardware),
                            executor->metadata->executor->flags & PP_EXECUTOR_WALKS_SCHEDULE);
    const toml::table* table = recipe->executor_table ? recipe->executor_table->get_as<toml::table>("analytic") : nullptr;
    instance = std::make_unique<PluginInstance>(
        *executor, ParamValues::bind(*executor->metadata, table, "executor.analytic", recipe->file), "analytic");
  }

  ResultTree run(const pp_plan_view_v1& view) const {
    ResultTree results;
    pp_result_sink_v1 sink = results.sink();
    pp_hardware_binding_v1 binding = hardware->binding();
    instance->invoke([&](pp_error* error) {
      return executor->metadata->executor->run(instance->handle(), &view, &binding, &sink, error);
    });
    return results;
  }

  void evaluate(const pp_plan_view_v1& view, const int64_t* strides, uint32_t layouts, pp_plan_figures* figures) const {
    pp_hardware_binding_v1 binding = hardware->binding();
    instance->invoke([&](pp_error* error) {
      return executor->metadata->executor->evaluate(instance->handle(), &view, &binding, strides, layouts, figures, error);
    });
  }
};

void expect_same_figures(const pp_plan_figures& batched, const ResultTree& run, const std::string& what) {
  expect_near(batched.step_s, number(run, "time.step_s"), what + " time.step_s");
  expect_near(batched.memory_per_gpu_bytes, number(run, "memory.per_gpu_bytes"), what + " memory.per_gpu_bytes");
  expect_near(batched.memory_capacity_bytes, number(run, "memory.capacity_bytes"), what + " memory.capacity_bytes");
  expect_near(batched.mfu, number(run, "throughput.mfu"), what + " throughput.mfu");
  expect_near(batched.tokens_per_s_per_gpu, number(run, "throughput.tokens_per_s_per_gpu"),
              what + " throughput.tokens_per_s_per_gpu");
  // The breakdown adds up to the step: compute, the GPU's waits for the host, what overlapped
  // communication slows it by, the bubble, the exposed communication of every owner and the
  // optimizer update.
  double parts = number(run, "time.compute_s") + number(run, "time.host_wait_s") + number(run, "time.bubble_s") +
                 number(run, "time.overlap_contention_s") + number(run, "time.optimizer_s");
  for (const auto& [key, value] : run.entries())
    if (key.starts_with("time.exposed_comm_s.")) parts += std::get<double>(value);
  expect_near(batched.step_s, parts, what + " the breakdown's sum");
  // So does the fullest stage's memory (activations as reported: times the sets in flight).
  const double memory = number(run, "memory.parameters_bytes") + number(run, "memory.gradients_bytes") +
                        number(run, "memory.optimizer_bytes") + number(run, "memory.activations_bytes") +
                        number(run, "memory.other_bytes");
  expect_near(batched.memory_per_gpu_bytes, memory, what + " the memory breakdown's sum");
}

// Layout 0 is the plan's own strides; then one layout per order of its top-level axes (the
// identity order among them), all in one batched call, each checked against run() on a copy of
// the plan's axes carrying that layout's strides. Returns how many layouts changed the step time.
size_t expect_every_layout_agrees(const Fixture& fixture) {
  const Plan& plan = *fixture.composed.plan;
  const std::vector<pp_mesh_axis>& axes = plan.axes();
  const size_t n = axes.size();
  std::vector<size_t> order;
  for (size_t i = 0; i < n; ++i)
    if (axes[i].parent[0] == '\0') order.push_back(i);
  std::vector<int64_t> strides;
  for (const pp_mesh_axis& axis : axes) strides.push_back(axis.stride);
  std::vector<std::string> names = {"own layout"};
  do {
    strides.resize(strides.size() + n);
    mesh_strides(axes, order, plan.cluster().num_gpus, strides.data() + strides.size() - n);
    std::string name;
    for (size_t i : order) name += (name.empty() ? "" : "-") + std::string(axes[i].name);
    names.push_back(name);
  } while (std::next_permutation(order.begin(), order.end()));

  const uint32_t layouts = static_cast<uint32_t>(names.size());
  const pp_plan_view_v1 view = plan.view();
  std::vector<pp_plan_figures> figures(layouts);
  fixture.evaluate(view, strides.data(), layouts, figures.data());
  const double own_step = number(fixture.run(view), "time.step_s");
  size_t changed = 0;
  for (uint32_t layout = 0; layout < layouts; ++layout) {
    std::vector<pp_mesh_axis> laid = axes;
    for (size_t i = 0; i < n; ++i) laid[i].stride = strides[layout * n + i];
    pp_plan_view_v1 laid_view = view;
    laid_view.axes = laid.data();
    const ResultTree results = fixture.run(laid_view);
    expect_same_figures(figures[layout], results, names[layout]);
    if (std::abs(number(results, "time.step_s") - own_step) > 1e-6 * own_step) ++changed;
  }
  return changed;
}

TEST(SearchFigures, TheAnalyticExecutorHasTheBatchedCall) {
  const LoadedPlugin& executor = test::bundled_catalog().require("analytic", PP_KIND_EXECUTOR);
  ASSERT_GE(executor.metadata->executor->struct_size, sizeof(pp_executor_v1));
  EXPECT_NE(executor.metadata->executor->evaluate, nullptr);
}

TEST(SearchFigures, BatchedFiguresAgreeWithRunOnEveryShippedRecipe) {
  const std::vector<std::filesystem::path> recipes = shipped_recipes();
  ASSERT_GE(recipes.size(), 8u);
  size_t recipes_where_layout_matters = 0;
  for (const std::filesystem::path& file : recipes) {
    SCOPED_TRACE(file.string());
    if (expect_every_layout_agrees(Fixture(read_recipe(file))) > 0) ++recipes_where_layout_matters;
  }
  // Otherwise the comparison would prove nothing about the per-layout communication.
  EXPECT_GE(recipes_where_layout_matters, 3u);
}

// What the shipped recipes leave out: interleaved, zero-bubble and GPipe schedules, context
// parallelism (ring and Ulysses), overlapped tp, ZeRO-2, hybrid sharding, a pipeline split the
// Llama 3 way, expert parallelism with a shared expert, fp8 and every recompute mode.
const char* const kFeatureRecipes[] = {
    // interleaved 1F1B, tp, ZeRO-2, selective recompute; 2 nodes
    "[model]\nlayers = 16\nhidden = 2048\nheads = 16\nvocab = 32000\nseq_len = 2048\n"
    "[training]\nglobal_batch = 64\nmicro_batch = 1\nrecompute = \"selective\"\n"
    "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 16\n"
    "[[strategy]]\nname = \"tp\"\ndegree = 2\n"
    "[[strategy]]\nname = \"pp\"\ndegree = 4\nschedule = \"interleaved-1f1b\"\nvirtual_stages = 2\n"
    "[[strategy]]\nname = \"fsdp\"\nstage = 2\n",
    // zero-bubble, ring attention, overlapped tp, ZeRO-1, full recompute; 4 nodes
    "[model]\nlayers = 12\nhidden = 2048\nheads = 16\nkv_heads = 4\nffn_type = \"swiglu\"\nffn_hidden = 5632\n"
    "vocab = 32000\nseq_len = 8192\n"
    "[training]\nglobal_batch = 32\nmicro_batch = 1\nrecompute = \"full\"\n"
    "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 32\n"
    "[[strategy]]\nname = \"tp\"\ndegree = 4\noverlap = true\n"
    "[[strategy]]\nname = \"sp\"\ndegree = 2\nmode = \"ring\"\n"
    "[[strategy]]\nname = \"pp\"\ndegree = 2\nschedule = \"zero-bubble\"\n"
    "[[strategy]]\nname = \"fsdp\"\nstage = 1\n",
    // Ulysses, ZeRO-3, GPipe with trimmed end stages (14 layers on 4 stages: 3, 4, 4, 3), fp8
    "[model]\nlayers = 14\nhidden = 2048\nheads = 16\nvocab = 32000\nseq_len = 4096\n"
    "[training]\nglobal_batch = 32\nmicro_batch = 2\nprecision = \"fp8\"\n"
    "[cluster]\nhardware = \"h200-sxm\"\nnum_gpus = 32\n"
    "[[strategy]]\nname = \"sp\"\ndegree = 4\nmode = \"ulysses\"\n"
    "[[strategy]]\nname = \"pp\"\ndegree = 4\nschedule = \"gpipe\"\ntrim_ends = true\n"
    "[[strategy]]\nname = \"fsdp\"\nstage = 3\n",
    // hybrid sharding (shard groups of 8, replicated 4 times) with megatron sp over tp
    "[model]\nlayers = 8\nhidden = 4096\nheads = 32\nvocab = 32000\nseq_len = 2048\n"
    "[training]\nglobal_batch = 64\nmicro_batch = 1\n"
    "[cluster]\nhardware = \"a100-sxm-80g\"\nnum_gpus = 64\n"
    "[[strategy]]\nname = \"tp\"\ndegree = 2\n"
    "[[strategy]]\nname = \"sp\"\nmode = \"megatron\"\n"
    "[[strategy]]\nname = \"hsdp\"\nstage = 3\nshard_group = 8\n",
    // experts over ep = 4 inside dp = 16, a shared expert, tp = 2; 4 nodes of B200
    "[model]\nlayers = 4\nhidden = 2048\nheads = 16\nvocab = 32000\nseq_len = 2048\nffn_type = \"swiglu\"\n"
    "ffn_hidden = 1408\nmoe_experts = 16\nmoe_top_k = 2\nmoe_shared_experts = 1\n"
    "[training]\nglobal_batch = 64\nmicro_batch = 2\n"
    "[cluster]\nhardware = \"b200\"\nnum_gpus = 32\n"
    "[[strategy]]\nname = \"tp\"\ndegree = 2\n"
    "[[strategy]]\nname = \"ep\"\ndegree = 4\n"
    "[[strategy]]\nname = \"fsdp\"\nstage = 3\n",
};

TEST(SearchFigures, BatchedFiguresAgreeWithRunOnEveryStrategyFeature) {
  size_t index = 0;
  for (const char* text : kFeatureRecipes) {
    SCOPED_TRACE("kFeatureRecipes[" + std::to_string(index++) + "]");
    EXPECT_GT(expect_every_layout_agrees(Fixture(parse_recipe(text, "feature.toml"))), 0u);
  }
}

TEST(SearchFigures, NoLayoutFillsOnlyTheMemory) {
  std::vector<std::unique_ptr<Recipe>> recipes;
  for (const std::filesystem::path& file : shipped_recipes()) recipes.push_back(read_recipe(file));
  for (const char* text : kFeatureRecipes) recipes.push_back(parse_recipe(text, "feature.toml"));
  for (std::unique_ptr<Recipe>& recipe : recipes) {
    SCOPED_TRACE(recipe->file);
    Fixture fixture(std::move(recipe));
    const pp_plan_view_v1 view = fixture.composed.plan->view();
    pp_plan_figures figures[2];
    std::memset(figures, 0xA5, sizeof(figures));  // any byte a plugin would not write
    pp_plan_figures untouched;
    std::memset(&untouched, 0xA5, sizeof(untouched));
    fixture.evaluate(view, nullptr, 0, figures);
    const ResultTree run = fixture.run(view);
    expect_near(figures[0].memory_per_gpu_bytes, number(run, "memory.per_gpu_bytes"), "memory.per_gpu_bytes");
    expect_near(figures[0].memory_capacity_bytes, number(run, "memory.capacity_bytes"), "memory.capacity_bytes");
    EXPECT_EQ(std::memcmp(&figures[1], &untouched, sizeof(untouched)), 0) << "figures[1] was written";
  }
}

}  // namespace
}  // namespace paraplan::host
