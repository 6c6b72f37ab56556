// paraplan search (host/search): the winner against brute force, rejection counts derived by
// hand, the same ranking on any number of threads, spaces that come out empty, the values a
// recipe lists for a strategy, composing the winner again, and a strategy plugin built against
// ABI 1.0 (no search fields in its table).
//
// The brute force does not share the engine's enumeration: it writes an ordinary recipe (explicit
// degrees, parameters, micro_batch, recompute and mesh_order) for every candidate, as a user
// would, and evaluates it the way `paraplan evaluate` does (compose_plan + the executor's run()),
// not through the search's batched evaluate().
#include "host/search/search_engine.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "../plugins/c_abi_plugin.h"
#include "host/cli/command.h"
#include "host/search/search_report.h"
#include "test_support.h"

namespace paraplan::host {
namespace {

using test::expect_error;

std::unique_ptr<Recipe> search_recipe(const std::string& text) {
  RecipeReaderOptions options;
  options.search = true;
  return parse_recipe(text, "search.toml", options);
}

SearchResult search(const Recipe& recipe, unsigned threads = 1, size_t top = 10,
                    const PluginCatalog& catalog = test::bundled_catalog()) {
  SearchSettings settings;
  settings.threads = threads;
  settings.top = top;
  return run_search(recipe, catalog, settings);
}

uint64_t rejected(const SearchResult& result, const std::string& reason) {
  auto found = result.rejected.find(reason);
  return found == result.rejected.end() ? 0 : found->second.plans;
}

bool near(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)); }

std::string recompute_text(pp_recompute recompute) {
  return recompute == PP_RECOMPUTE_FULL ? "full" : recompute == PP_RECOMPUTE_SELECTIVE ? "selective" : "none";
}

std::string joined(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : ",") + item;
  return text;
}

// A ranked plan as "tp=2 | sp=1 mode=megatron | ... | micro_batch=2 recompute=none | mesh=tp,dp", with
// only the axes in `moving` (those of degree > 1) in the mesh order: the brute force's key format.
std::string key_of(const SearchResult& result, const RankedPlan& plan, const std::set<std::string>& moving) {
  std::string key;
  for (size_t level = 0; level < result.space.slots.size(); ++level) {
    if (plan.degrees[level] == 0) continue;
    const StrategyOption& option = result.space.slots[level].options[plan.options[level]];
    std::vector<std::string> values;
    for (const auto& [name, node] : option.values) values.push_back(name + "=" + scalar_text(*node));
    std::sort(values.begin(), values.end());
    key += option.plugin->name() + "=" + std::to_string(plan.degrees[level]);
    for (const std::string& value : values) key += " " + value;
    key += " | ";
  }
  std::vector<std::string> mesh;
  for (const std::string& axis : plan.mesh_order)
    if (moving.count(axis)) mesh.push_back(axis);
  return key + "micro_batch=" + std::to_string(plan.micro_batch) + " recompute=" + recompute_text(plan.recompute) +
         (plan.recompute_num_layers > 0 ? " recompute_num_layers=" + std::to_string(plan.recompute_num_layers) : "") +
         " | mesh=" + joined(mesh);
}

// ---------------------------------------------------------------------------------------------
// Brute force

// A dense 6.7B-parameter GPT (12·32·4096² + 2·32000·4096): plain data parallelism needs ~107 GB
// of model state per GPU, so memory rejects part of the space; the analytic model's cost does not
// grow with the layer count (identical layers are kept once), so this stays fast.
const std::string kBruteForceModel = "[model]\nlayers = 32\nhidden = 4096\nheads = 32\nvocab = 32000\nseq_len = 2048\n";

// What a brute-force search tries besides the strategies' degrees and schedules.
struct TrainingChoices {
  std::vector<int64_t> micro_batches;
  std::vector<std::string> recomputes;
  std::vector<int> fsdp_stages;
};

// The search: tp and pp from listed sets, sp narrowed to two modes, fsdp's stage from a set, ep
// (unlisted, with search cases) tried and left out, micro-batch, recompute and mesh order searched.
std::string brute_force_search(const TrainingChoices& choices) {
  std::string micro_batches, recomputes, stages;
  for (int64_t size : choices.micro_batches) micro_batches += (micro_batches.empty() ? "" : ", ") + std::to_string(size);
  for (const std::string& mode : choices.recomputes) recomputes += (recomputes.empty() ? "\"" : ", \"") + mode + "\"";
  for (int stage : choices.fsdp_stages) stages += (stages.empty() ? "" : ", ") + std::to_string(stage);
  return kBruteForceModel + "[training]\nglobal_batch = 16\nmicro_batch = [" + micro_batches + "]\nrecompute = [" +
         recomputes + "]\n" +
         "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 16\n"
         "[[strategy]]\nname = \"tp\"\ndegree = [1, 2, 4]\n"
         "[[strategy]]\nname = \"sp\"\nmode = [\"megatron\", \"ring\"]\n"
         "[[strategy]]\nname = \"pp\"\ndegree = [1, 2]\n"
         "schedule = [\"1f1b\", \"zero-bubble\"]\n"
         "[[strategy]]\nname = \"fsdp\"\nstage = [" + stages + "]\n";
}

// One candidate of that space, as the search space's contract (search_space.h) describes it.
struct Candidate {
  int64_t tp = 1;
  std::string sp_mode;  // "megatron" (degree 1: sp's search case for it) or "ring" (degree >= 2)
  int64_t sp = 1;
  int64_t pp = 1;
  std::string schedule;  // pp's search case adds trim_ends = true
  int64_t dp = 1;
  int stage = 0;
  int64_t ep = 0;  // 0: not used; ep is unlisted, its search case takes degrees >= 2 dividing dp
  int64_t micro_batch = 1;
  std::string recompute;
  // Full recomputation of some layers: the brute force tries every count from 1 up and keeps the
  // first that fits (the search's contract: the fewest recomputed layers per chunk that fit).
  bool partial = false;
  int64_t recompute_num_layers = 0;

  // The axes of degree > 1, whose order the search tries.
  std::vector<std::string> moving_axes() const {
    std::vector<std::string> axes;
    if (tp > 1) axes.push_back("tp");
    if (sp_mode == "ring" && sp > 1) axes.push_back("cp");
    if (dp > 1) axes.push_back("dp");
    if (pp > 1) axes.push_back("pp");
    return axes;
  }

  // An ordinary recipe for this candidate with this mesh order.
  std::string recipe(const std::vector<std::string>& mesh) const {
    std::string quoted;
    for (const std::string& axis : mesh) quoted += (quoted.empty() ? "\"" : ", \"") + axis + "\"";
    std::string text = kBruteForceModel + "[training]\nglobal_batch = 16\nmicro_batch = " + std::to_string(micro_batch) +
                       "\nrecompute = \"" + recompute + "\"\n" +
                       (recompute_num_layers > 0 ? "recompute_num_layers = " + std::to_string(recompute_num_layers) + "\n" : "") +
                       "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 16\n" +
                       "mesh_order = [" + quoted + "]\n" + "[[strategy]]\nname = \"tp\"\ndegree = " + std::to_string(tp) +
                       "\n[[strategy]]\nname = \"sp\"\ndegree = " + std::to_string(sp) + "\nmode = \"" + sp_mode +
                       "\"\n[[strategy]]\nname = \"pp\"\ndegree = " + std::to_string(pp) + "\nschedule = \"" + schedule +
                       "\"\ntrim_ends = true\n[[strategy]]\nname = \"fsdp\"\ndegree = " + std::to_string(dp) +
                       "\nstage = " + std::to_string(stage) + "\n";
    if (ep > 0) text += "[[strategy]]\nname = \"ep\"\ndegree = " + std::to_string(ep) + "\n";
    return text;
  }

  // The same format as key_of() (ep first here: a dense model's search leaves it out, so no winner has it).
  std::string key(const std::vector<std::string>& mesh) const {
    std::string text = ep > 0 ? "ep=" + std::to_string(ep) + " | " : "";
    text += "tp=" + std::to_string(tp) + " | sp=" + std::to_string(sp) + " mode=" + sp_mode + " | pp=" +
            std::to_string(pp) + " schedule=" + schedule + " trim_ends=true | fsdp=" + std::to_string(dp) +
            " stage=" + std::to_string(stage) + " | micro_batch=" + std::to_string(micro_batch) +
            " recompute=" + recompute +
            (recompute_num_layers > 0 ? " recompute_num_layers=" + std::to_string(recompute_num_layers) : "") +
            " | mesh=" + joined(mesh);
    return text;
  }
};

std::vector<Candidate> brute_force_candidates(const TrainingChoices& choices) {
  std::vector<Candidate> candidates;
  const int64_t gpus = 16;
  for (int64_t tp : {1, 2, 4})
    for (const auto& [mode, sp] : std::vector<std::pair<std::string, int64_t>>{
             {"megatron", 1}, {"ring", 2}, {"ring", 4}, {"ring", 8}, {"ring", 16}})
      for (int64_t pp : {1, 2}) {
        if (gpus % (tp * sp * pp) != 0) continue;
        const int64_t dp = gpus / (tp * sp * pp);
        std::vector<int64_t> ep_degrees = {0};
        for (int64_t ep = 2; ep <= dp; ++ep)
          if (dp % ep == 0) ep_degrees.push_back(ep);
        for (const char* schedule : {"1f1b", "zero-bubble"})
          for (int stage : choices.fsdp_stages)
            for (int64_t ep : ep_degrees)
              for (int64_t micro_batch : choices.micro_batches)
                for (const std::string& recompute : choices.recomputes) {
                  candidates.push_back({tp, mode, sp, pp, schedule, dp, stage, ep, micro_batch, recompute});
                  if (recompute == "full" && choices.recomputes.size() > 1)
                    candidates.push_back({tp, mode, sp, pp, schedule, dp, stage, ep, micro_batch, recompute, true});
                }
      }
  return candidates;
}

struct BruteForce {
  uint64_t plans = 0, valid = 0, layouts = 0;
  std::map<std::string, uint64_t> rejected;  // "batch", "ep", "memory"
  std::vector<double> best_per_plan;         // each valid plan's best layout, ascending
  std::vector<double> memory_per_plan;       // each valid plan's memory per GPU
  double best = INFINITY;
  std::vector<std::pair<std::string, double>> layouts_timed;  // key, step time

  uint64_t count(const std::string& reason) const {
    auto found = rejected.find(reason);
    return found == rejected.end() ? 0 : found->second;
  }
};

// `paraplan evaluate` on recipe text: read, compose, run the executor (test::evaluate_recipe,
// with the hardware opened once: every candidate runs on the same H100 profile).
class Evaluator {
 public:
  explicit Evaluator(std::string executor) : executor_(std::move(executor)) {
    hardware_ = open_hardware(*search_recipe(brute_force_search({{1}, {"none"}, {0}})), test::bundled_catalog());
  }
  const HardwareBinding& hardware() const { return *hardware_; }

  ResultTree operator()(const std::string& text) const {
    auto recipe = parse_recipe(text, "brute_force.toml");
    ComposedPlan composed = compose_plan(*recipe, test::bundled_catalog(), gpus_per_node(*recipe, *hardware_));
    return run_executor(executor_, *recipe, test::bundled_catalog(), composed, *hardware_);
  }

 private:
  std::string executor_;
  std::unique_ptr<HardwareBinding> hardware_;
};

double number(const ResultTree& results, const std::string& key) {
  const ResultValue* value = results.find(key);
  if (!value || !std::holds_alternative<double>(*value)) throw std::runtime_error("no number " + key);
  return std::get<double>(*value);
}

// Every candidate through compose_plan and `executor`'s run(), one recipe per (plan, layout).
BruteForce brute_force(const TrainingChoices& choices, const std::string& executor) {
  BruteForce found;
  const Evaluator evaluate(executor);
  for (const Candidate& candidate : brute_force_candidates(choices)) {
    ++found.plans;
    std::vector<std::string> mesh = candidate.moving_axes();
    std::sort(mesh.begin(), mesh.end());
    if (candidate.ep > 0) {
      // Every plan with ep is refused (the batch split or ep's own check of the dense model): the
      // search leaves ep out of its space, so these are not among its plans.
      EXPECT_THROW(evaluate(candidate.recipe(mesh)), PlanError) << candidate.key(mesh);
      ++found.rejected["ep"];
      continue;
    }
    ResultTree first;
    Candidate tried = candidate;
    try {
      first = evaluate(tried.recipe(mesh));
      // 32 layers over pp stages of one chunk each: a partial count from 1 to one less than all.
      if (candidate.partial) {
        const int64_t layers_per_chunk = 32 / candidate.pp;
        for (tried.recompute_num_layers = 1; tried.recompute_num_layers < layers_per_chunk; ++tried.recompute_num_layers) {
          first = evaluate(tried.recipe(mesh));
          if (number(first, "memory.per_gpu_bytes") <= 0.9 * evaluate.hardware().profile().memory_bytes) break;
        }
        tried.recompute_num_layers = std::min(tried.recompute_num_layers, layers_per_chunk - 1);
      }
    } catch (const PlanError& failure) {
      const std::string message = failure.what();
      // Composition checks the batch split before any strategy runs.
      if (message.find("is not divisible by micro_batch x data-parallel size") != std::string::npos)
        ++found.rejected["batch"];
      else
        ADD_FAILURE() << candidate.key(mesh) << ": unexpected rejection: " << message;
      continue;
    }
    // A plan must fit in 90% of the GPU's memory (SearchSettings::memory_headroom = 0.10).
    const double memory = number(first, "memory.per_gpu_bytes");
    if (!(memory <= 0.9 * evaluate.hardware().profile().memory_bytes)) {
      ++found.rejected["memory"];
      continue;
    }
    ++found.valid;
    found.memory_per_plan.push_back(memory);
    double best = INFINITY;
    bool first_layout = true;
    do {
      const double step = number(first_layout ? first : evaluate(tried.recipe(mesh)), "time.step_s");
      first_layout = false;
      found.layouts_timed.emplace_back(tried.key(mesh), step);
      best = std::min(best, step);
      ++found.layouts;
    } while (std::next_permutation(mesh.begin(), mesh.end()));
    found.best_per_plan.push_back(best);
    found.best = std::min(found.best, best);
  }
  std::sort(found.best_per_plan.begin(), found.best_per_plan.end());
  return found;
}

// The axes of degree > 1 in a ranked plan of the brute-force space.
std::set<std::string> moving_axes(const SearchResult& result, const RankedPlan& plan) {
  std::set<std::string> moving;
  for (size_t level = 0; level < result.space.slots.size(); ++level) {
    const std::string name = result.space.slots[level].name;
    if (plan.degrees[level] <= 1) continue;
    if (name == "tp") moving.insert("tp");
    if (name == "sp") moving.insert("cp");
    if (name == "pp") moving.insert("pp");
    if (name == "data parallelism") moving.insert("dp");
  }
  return moving;
}

void expect_search_matches(const SearchResult& result, const BruteForce& expected, const TrainingChoices& choices) {
  // The space, counted by hand: (tp, sp, pp) with tp in {1, 2, 4}, sp megatron (1) or ring
  // (2..16), pp in {1, 2} and t·c·p dividing 16 leave dp = 16/(t·c·p); summing 1 + (divisors of
  // dp from 2, ep's degrees) over the 21 triples gives 25 + 16 + 9 = 50 strategy degree choices,
  // each with 2 schedules x the fsdp stages x the micro-batch sizes x the recompute modes, full
  // twice when recompute is searched (of every layer, of the fewest that fit).
  const size_t partial = choices.recomputes.size() > 1 ? std::count(choices.recomputes.begin(), choices.recomputes.end(), "full") : 0;
  EXPECT_EQ(expected.plans, 50u * 2u * choices.fsdp_stages.size() * choices.micro_batches.size() *
                                (choices.recomputes.size() + partial));
  // ep refuses the dense model whatever its degree: the search leaves it out, not counting them.
  EXPECT_EQ(result.plans, expected.plans - expected.count("ep"));
  ASSERT_EQ(result.skipped.size(), 1u);
  EXPECT_EQ(result.skipped[0].name, "ep");
  EXPECT_EQ(result.valid_plans, expected.valid);
  EXPECT_EQ(result.layouts, expected.layouts);
  for (const char* reason : {"batch", "memory"}) EXPECT_EQ(rejected(result, reason), expected.count(reason)) << reason;
  EXPECT_EQ(rejected(result, "ep"), 0u);
  EXPECT_EQ(result.plans, result.valid_plans + rejected(result, "batch") + rejected(result, "memory"));
  // The executor priced every plan that fit and every plan over memory, none of the batch's.
  EXPECT_EQ(result.priced_plans, result.valid_plans + rejected(result, "memory"));

  // The top 10 are the 10 best plans, each at its best layout.
  ASSERT_EQ(result.top.size(), 10u);
  for (size_t rank = 0; rank < result.top.size(); ++rank)
    EXPECT_TRUE(near(result.top[rank].figures.step_s, expected.best_per_plan[rank]))
        << "rank " << rank + 1 << ": " << result.top[rank].figures.step_s << " vs " << expected.best_per_plan[rank];

  // The winner is one of the (plan, layout) pairs that tie for the best step time.
  const RankedPlan& winner = result.top.front();
  EXPECT_TRUE(near(winner.figures.step_s, expected.best));
  std::set<std::string> best_keys;
  for (const auto& [key, step] : expected.layouts_timed)
    if (near(step, expected.best)) best_keys.insert(key);
  ASSERT_FALSE(best_keys.empty());
  const std::string winner_key = key_of(result, winner, moving_axes(result, winner));
  std::string listing;
  for (const std::string& key : best_keys) listing += "\n  " + key;
  EXPECT_TRUE(best_keys.count(winner_key)) << "winner " << winner_key << "\nbrute-force best:" << listing;
}

TEST(Search, WinnerIsTheBestOfEveryCandidateEvaluatedOneByOne) {
  // 1200 candidates: 50 x 2 schedules x micro_batch {1, 2} x recompute {none, full of every
  // layer, full of the fewest that fit} x stage {0, 3}
  // (plain data parallelism, 16 bytes of state per parameter unsharded, is what some cannot fit).
  const TrainingChoices choices{{1, 2}, {"none", "full"}, {0, 3}};
  auto recipe = search_recipe(brute_force_search(choices));
  const SearchResult result = search(*recipe, /*threads=*/2);
  const BruteForce expected = brute_force(choices, "analytic");
  expect_search_matches(result, expected, choices);
  EXPECT_GT(expected.count("memory"), 0u);  // the case exercises the memory pruning
  EXPECT_GT(expected.count("batch"), 0u);
  EXPECT_EQ(result.rejected.size(), 2u);
  EXPECT_DOUBLE_EQ(result.usable_memory_bytes, 0.9 * 80e9);  // H100 SXM: 80 GB less 10%

  // The winner as recipe text (the report's [[strategy]] tables, with its micro-batch size,
  // recompute mode and mesh order) evaluates to the winner's figures.
  const RankedPlan& winner = result.top.front();
  std::string tables = ranked_plan_recipe(result, winner);
  tables = tables.substr(0, tables.find("# [training]"));
  std::string mesh;
  for (const std::string& axis : winner.mesh_order) mesh += (mesh.empty() ? "\"" : ", \"") + axis + "\"";
  test::Evaluated pasted = test::evaluate_recipe(
      kBruteForceModel + "[training]\nglobal_batch = 16\nmicro_batch = " + std::to_string(winner.micro_batch) +
      "\nrecompute = \"" + recompute_text(winner.recompute) + "\"\n" +
      (winner.recompute_num_layers > 0 ? "recompute_num_layers = " + std::to_string(winner.recompute_num_layers) + "\n" : "") +
      "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 16\n" +
      "mesh_order = [" + mesh + "]\n" + tables);
  EXPECT_TRUE(near(pasted.number("time.step_s"), winner.figures.step_s)) << tables;
  EXPECT_TRUE(near(pasted.number("memory.per_gpu_bytes"), winner.figures.memory_per_gpu_bytes)) << tables;

  // Ranked by memory, the winner needs the least memory of every plan that fits.
  SearchSettings by_memory;
  by_memory.objective = Objective::kMemory;
  by_memory.threads = 1;
  const SearchResult frugal = run_search(*recipe, test::bundled_catalog(), by_memory);
  ASSERT_FALSE(frugal.top.empty());
  EXPECT_TRUE(near(frugal.top.front().figures.memory_per_gpu_bytes,
                   *std::min_element(expected.memory_per_plan.begin(), expected.memory_per_plan.end())));
}

TEST(Search, AnExecutorWithoutTheBatchedCallIsAskedThroughRun) {
  // test_good_executor (tests/plugins/good) has no evaluate(): the search calls its run() once
  // per layout and reads time.step_s and memory.per_gpu_bytes from its keys. Its step is the sum
  // of op flops / 1e12, the same under every layout, so the layouts tie and the plans rank by
  // their work alone. 200 candidates: 50 x 2 schedules x stage {0, 3} x micro_batch {2} x
  // recompute {selective}.
  const LoadedPlugin& executor = test::bundled_catalog().require("test_good_executor", PP_KIND_EXECUTOR);
  ASSERT_EQ(executor.metadata->executor->evaluate, nullptr);
  const TrainingChoices choices{{2}, {"selective"}, {0, 3}};
  auto recipe = search_recipe(brute_force_search(choices));
  SearchSettings settings;
  settings.executor = "test_good_executor";
  settings.threads = 2;
  const SearchResult result = run_search(*recipe, test::bundled_catalog(), settings);
  expect_search_matches(result, brute_force(choices, "test_good_executor"), choices);
}

// ---------------------------------------------------------------------------------------------
// Rejections counted by hand

// A tiny GPT: 2 layers, 4 heads of 64, a 1024-wide GELU MLP, 128-token sequences; everything fits.
const std::string kTinyModel = "[model]\nlayers = 2\nhidden = 256\nheads = 4\nvocab = 1000\nseq_len = 128\n";

TEST(Search, RejectionsOfAPinnedSpaceMatchAHandCount) {
  // 8 GPUs, global batch 8. tp in {2, 4, 8}; sp pinned to megatron (degree 1), pp to 1f1b at
  // degree 1; fsdp takes dp = 8 / tp; ep is unlisted, but refuses a dense model at every degree,
  // so the search leaves it out before counting; micro_batch in {1, 2, 4}.
  //   tp = 2, dp = 4: 3 micro-batches = 3 plans. micro_batch 4: 4 x 4 = 16 does not divide 8:
  //                   1 batch rejection; 2 valid.
  //   tp = 4, dp = 2: 3 plans; 1·2, 2·2, 4·2 all divide 8; 3 valid.
  //   tp = 8, dp = 1: 3 plans; tp = 8 does not divide heads = 4: 3 tp rejections.
  // Layouts: tp and dp are the only axes of degree > 1 in every valid plan: 2 orders each, 10.
  auto recipe = search_recipe(kTinyModel +
                              "[training]\nglobal_batch = 8\nmicro_batch = [1, 2, 4]\nrecompute = \"none\"\n"
                              "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 8\n"
                              "[[strategy]]\nname = \"tp\"\ndegree = [2, 4, 8]\n"
                              "[[strategy]]\nname = \"sp\"\nmode = \"megatron\"\n"
                              "[[strategy]]\nname = \"pp\"\ndegree = 1\nschedule = \"1f1b\"\n"
                              "[[strategy]]\nname = \"fsdp\"\nstage = 3\n");
  const SearchResult result = search(*recipe, /*threads=*/1, /*top=*/100);
  EXPECT_EQ(result.plans, 3u + 3u + 3u);
  EXPECT_EQ(rejected(result, "batch"), 1u);
  EXPECT_EQ(rejected(result, "ep"), 0u);
  EXPECT_EQ(rejected(result, "tp"), 3u);
  EXPECT_EQ(result.valid_plans, 2u + 3u);
  EXPECT_EQ(result.layouts, 2u * 2u + 3u * 2u);
  EXPECT_EQ(result.rejected.size(), 2u);
  ASSERT_EQ(result.skipped.size(), 1u);
  EXPECT_EQ(result.skipped[0].name, "ep");
  EXPECT_EQ(result.top.size(), 5u);
  EXPECT_NE(result.rejected.at("tp").example.find("tp = 8 must divide the attention heads = 4"), std::string::npos)
      << result.rejected.at("tp").example;
  EXPECT_NE(result.rejected.at("batch").example.find("micro_batch x data-parallel size = 4 x 4"), std::string::npos)
      << result.rejected.at("batch").example;
  for (const RankedPlan& plan : result.top) EXPECT_EQ(plan.layouts, 2u);
}

// A plan that would wait for the host inside a captured MoE block is rejected by name: with
// cuda_graph_modules = ["moe"], the plans without ep route dropless (host/plan/captured_sync_check.h),
// while ep's default routing (capacity factor 1, padded) has nothing to wait for.
TEST(Search, PlansThatWaitInsideACudaGraphAreRejected) {
  auto recipe = search_recipe(
      "[model]\nlayers = 4\nhidden = 1024\nheads = 8\nffn_hidden = 2816\nffn_type = \"swiglu\"\nvocab = 32000\n"
      "seq_len = 2048\nmoe_experts = 8\nmoe_top_k = 2\nmoe_ffn_hidden = 512\n"
      "[training]\nglobal_batch = 8\nmicro_batch = 1\nrecompute = \"none\"\ncuda_graph_modules = [\"moe\"]\n"
      "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 8\n"
      "[[strategy]]\nname = \"fsdp\"\nstage = 1\n");
  const SearchResult result = search(*recipe, /*threads=*/1, /*top=*/1000);
  EXPECT_GT(rejected(result, "cuda_graph"), 0u);
  EXPECT_NE(result.rejected.at("cuda_graph").example.find("training.cuda_graph_modules"), std::string::npos);
  ASSERT_FALSE(result.top.empty());
  for (const RankedPlan& plan : result.top) {
    const std::string text = describe_strategies(result.space, plan);
    EXPECT_NE(text.find("ep="), std::string::npos) << text;
  }
}

TEST(Search, UnlistedStrategiesAreTriedAndLeftOut) {
  // 8 GPUs, global batch 8, micro_batch 1. tp pinned to 2 and fsdp listed (stage 0), so hsdp is
  // not searched; ep, sp and pp are unlisted and tried by their search cases:
  //   sp: left out, megatron (degree 1), ring or ulysses (degree >= 2);
  //   pp: left out, 1f1b, zero-bubble, dualpipe-v with and without trim_ends, interleaved with 2, 3, 4
  //       or 6 chunks (degree >= 2): 8 options;
  //   ep: refuses the dense model at every degree and option, so it is left out of the space
  //   before counting (reported once, in `skipped`), not rejected plan by plan.
  // With tp = 2 the other 4 GPUs split as (sp, pp, dp), 0 = left out:
  //   (0,0,4) 1·1·1 = 1   (0,2,2) 1·8·1 = 8    (0,4,1) 1·8·1 = 8
  //   (1,0,4) 1           (1,2,2) 8             (1,4,1) 8
  //   (2,0,2) 2·1·1 = 2   (2,2,1) 2·8·1 = 16   (4,0,1) 2·1·1 = 2      = 54 plans.
  // No batch rejection: 1 x dp divides 8 for dp in {1, 2, 4}.
  // sp: ulysses with cp = 4 needs 4 | heads per tp rank = 4 / 2 = 2: 1 rejection at (4,0,1).
  // pp: 2 layers on 2 stages leave 1 layer per stage, which no virtual_stages >= 2 divides: 4
  //     interleaved options at (0,2,2) and (1,2,2), 2 x 4 at (2,2,1) (ring and ulysses); dualpipe-v's
  //     2 x 2 chunks are more than 2 layers, trimmed or not: 2 + 2 + 4; pp = 4 is more than 2 layers:
  //     8 at (0,4,1) and 8 at (1,4,1). 4 + 4 + 8 + 8 + 8 + 8 = 40.
  // Valid: 54 - 1 - 40 = 13, with tp and each other axis of degree > 1 ordered:
  //   (0,0,4) 1 plan x 2! + (0,2,2) 2 x 3! + (1,0,4) 1 x 2! + (1,2,2) 2 x 3! + (2,0,2) 2 x 3!
  //   + (2,2,1) 4 x 3! + (4,0,1) 1 x 2! = 2 + 12 + 2 + 12 + 12 + 24 + 2 = 66 layouts.
  auto recipe = search_recipe(kTinyModel +
                              "[training]\nglobal_batch = 8\nmicro_batch = 1\nrecompute = \"none\"\n"
                              "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 8\n"
                              "[[strategy]]\nname = \"tp\"\ndegree = 2\n"
                              "[[strategy]]\nname = \"fsdp\"\nstage = 0\n");
  const SearchResult result = search(*recipe, /*threads=*/1, /*top=*/100);
  EXPECT_EQ(result.plans, 54u);
  EXPECT_EQ(rejected(result, "ep"), 0u);
  EXPECT_EQ(rejected(result, "sp"), 1u);
  EXPECT_EQ(rejected(result, "pp"), 40u);
  EXPECT_EQ(result.valid_plans, 13u);
  EXPECT_EQ(result.layouts, 66u);
  EXPECT_EQ(result.rejected.size(), 2u);
  ASSERT_EQ(result.skipped.size(), 1u);
  EXPECT_EQ(result.skipped[0].name, "ep");
  EXPECT_NE(result.skipped[0].reason.find("expert parallelism needs a mixture-of-experts model"), std::string::npos);
  EXPECT_NE(result.rejected.at("sp").example.find("cp = 4 must divide the attention heads per tensor-parallel rank = 2"),
            std::string::npos)
      << result.rejected.at("sp").example;
  for (const StrategySlot& slot : result.space.slots) EXPECT_NE(slot.name, "hsdp");
}

// ---------------------------------------------------------------------------------------------
// Mixture-of-experts: expert parallelism with its dispatcher and overlap is searched

// DeepSeek-V3 on 2048 H800 (recipes/search/deepseek-v3-2048xh800.toml). The layout DeepSeek
// trained with (PP16 DualPipe-V, EP64 with its all-to-all kernels and the dispatch overlapped,
// ZeRO-1; recipes/scenarios/deepseek-v3-2048xh800.toml) is to rank within 10 % of the winner (the
// MoE issue's target). It is 1.1 % behind (15th): the exchange priced as DeepEP runs it (once per
// node across the network, node-limited routing to 4 of 8 groups), the output head in BF16 as
// DeepSeek's report (sec. 3.3) and Megatron-Core run it, and DualPipe-V's layers balanced by the
// pair of chunks each rank holds, so stage 0 carries the head and the MTP module beside the
// embedding and one layer (without the pair balance the head's stage set the pace, 22.8 % behind). The winner must use expert
// parallelism with the exchange overlapped,
// as every published MoE layout at this scale does, on a schedule an engine overlaps it on
// (Megatron-Core needs virtual stages for it when pp > 1; docs/search.md says why).
TEST(Search, DeepSeekV3PublishedLayoutIsCloseToTheWinner) {
  RecipeReaderOptions options;
  options.search = true;
  const std::unique_ptr<Recipe> recipe =
      read_recipe(std::string(PARAPLAN_RECIPES_DIR) + "/search/deepseek-v3-2048xh800.toml", options);
  const SearchResult result = search(*recipe, /*threads=*/2, /*top=*/5);
  ASSERT_FALSE(result.top.empty());
  const test::Evaluated published =
      test::evaluate_file(std::string(PARAPLAN_RECIPES_DIR) + "/scenarios/deepseek-v3-2048xh800.toml", "analytic");
  const double winner = result.top.front().figures.step_s;
  EXPECT_LE(published.number("time.step_s"), 1.10 * winner);
  EXPECT_GE(published.number("time.step_s"), winner);  // the winner is the best plan
  EXPECT_LE(published.number("memory.per_gpu_bytes"), 80e9);
  const RankedPlan& best = result.top.front();
  for (size_t level = 0; level < result.space.slots.size(); ++level) {
    if (result.space.slots[level].name != "ep") continue;
    EXPECT_GE(best.degrees[level], 8) << describe_strategies(result.space, best);
    const std::string winner_text = describe_strategies(result.space, best);
    EXPECT_NE(winner_text.find("overlap=true"), std::string::npos) << winner_text;
    const bool paired = winner_text.find("interleaved-1f1b") != std::string::npos ||
                        winner_text.find("dualpipe-v") != std::string::npos;
    EXPECT_TRUE(paired) << winner_text;
  }
  EXPECT_TRUE(result.skipped.empty());
}

// ---------------------------------------------------------------------------------------------
// Threads

TEST(Search, RankingDoesNotDependOnTheThreadCount) {
  // Every strategy searched (no [[strategy]] list), two micro-batch sizes and two recompute
  // modes: 14,080 candidates, rejected for every reason there is (memory included), and ties
  // (pp = 1 plans that differ only in the schedule) that only the enumeration index orders.
  auto recipe = search_recipe(kBruteForceModel +
                              "[training]\nglobal_batch = 8\nmicro_batch = [1, 4]\n"
                              "recompute = [\"none\", \"selective\"]\n"
                              "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 8\n");
  const SearchResult one = search(*recipe, 1, 300);
  ASSERT_EQ(one.top.size(), 300u);
  ASSERT_GT(rejected(one, "memory"), 0u);
  ASSERT_GT(one.smallest_rejected_memory_bytes, 0.0);
  for (unsigned threads : {2u, 3u}) {
    const SearchResult many = search(*recipe, threads, 300);
    EXPECT_EQ(many.threads, threads);
    EXPECT_EQ(many.plans, one.plans);
    EXPECT_EQ(many.valid_plans, one.valid_plans);
    EXPECT_EQ(many.layouts, one.layouts);
    EXPECT_EQ(many.smallest_rejected_memory_bytes, one.smallest_rejected_memory_bytes);
    ASSERT_EQ(many.rejected.size(), one.rejected.size());
    for (const auto& [reason, rejection] : one.rejected) {
      ASSERT_TRUE(many.rejected.count(reason)) << reason;
      EXPECT_EQ(many.rejected.at(reason).plans, rejection.plans) << reason;
      EXPECT_EQ(many.rejected.at(reason).example, rejection.example) << reason;
    }
    ASSERT_EQ(many.top.size(), one.top.size());
    for (size_t rank = 0; rank < one.top.size(); ++rank) {
      const RankedPlan& a = one.top[rank];
      const RankedPlan& b = many.top[rank];
      EXPECT_EQ(b.index, a.index) << "rank " << rank + 1 << " with " << threads << " threads";
      EXPECT_EQ(b.degrees, a.degrees);
      EXPECT_EQ(b.options, a.options);
      EXPECT_EQ(b.micro_batch, a.micro_batch);
      EXPECT_EQ(b.recompute, a.recompute);
      EXPECT_EQ(b.mesh_order, a.mesh_order);
      EXPECT_EQ(b.layouts, a.layouts);
      // The same plan priced the same way: equal to the bit, not merely close.
      EXPECT_EQ(b.figures.step_s, a.figures.step_s);
      EXPECT_EQ(b.figures.memory_per_gpu_bytes, a.figures.memory_per_gpu_bytes);
      EXPECT_EQ(b.figures.memory_capacity_bytes, a.figures.memory_capacity_bytes);
      EXPECT_EQ(b.figures.tokens_per_s_per_gpu, a.figures.tokens_per_s_per_gpu);
      EXPECT_EQ(b.figures.mfu, a.figures.mfu);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Empty spaces, through the command line

using test::CommandRun;
using test::run_command;

size_t line_count(const std::string& text) { return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')); }

TEST(Search, EveryPlanRejectedForMemoryNamesMemory) {
  // Llama 3 405B on 2 GPUs: even fully sharded, 16 bytes x 405e9 / 2 = 3.2 TB per GPU. The
  // message is one line, names the file and lists memory among the reasons, with its figures.
  const std::string recipe = PARAPLAN_TEST_DATA_DIR "/search/all_rejected_by_memory.toml";
  CommandRun run = run_command({"search", recipe, "--threads=2"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(line_count(run.err), 1u) << run.err;
  EXPECT_NE(run.err.find("no plan survives the search"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("memory ("), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("need more than 72.0"), std::string::npos) << run.err;  // 80 GB less 10%
  EXPECT_NE(run.err.find(" GB per GPU"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("all_rejected_by_memory.toml"), std::string::npos) << run.err;

  // The plans that pass every other check all need more memory than there is: at least 16 bytes
  // (bf16 weights and gradients, fp32 Adam state) for each of ~405e9 parameters over 2 GPUs.
  RecipeReaderOptions options;
  options.search = true;
  const SearchResult result = search(*read_recipe(recipe, options), 2);
  EXPECT_EQ(result.valid_plans, 0u);
  EXPECT_GT(rejected(result, "memory"), 0u);
  EXPECT_GT(result.smallest_rejected_memory_bytes, 16.0 * 400e9 / 2);
}

TEST(Search, PinnedDegreesThatCannotFillTheClusterEmptyTheSpace) {
  // tp = 3 divides no power of two: no degree assignment multiplies to 8 GPUs.
  const std::string recipe = PARAPLAN_TEST_DATA_DIR "/search/empty_space.toml";
  CommandRun run = run_command({"search", recipe});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(line_count(run.err), 1u) << run.err;
  EXPECT_NE(run.err.find("empty_space.toml: the search space is empty"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("cluster.num_gpus = 8"), std::string::npos) << run.err;

  RecipeReaderOptions options;
  options.search = true;
  const SearchResult result = search(*read_recipe(recipe, options));
  EXPECT_EQ(result.plans, 0u);
  EXPECT_TRUE(result.top.empty());
}

TEST(Search, BadObjectiveIsAUsageError) {
  CommandRun run = run_command({"search", PARAPLAN_TEST_DATA_DIR "/search/empty_space.toml", "--objective=speed"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("'speed' is not one of throughput|memory|time-to-train"), std::string::npos) << run.err;
}

// ---------------------------------------------------------------------------------------------
// Values a recipe lists for a strategy

TEST(Search, EveryValueARecipeArrayListsIsTried) {
  // "schedule = [...] tries those" (paraplan search --help). gpipe is a valid schedule that pp's
  // search cases do not offer; written alone it is tried, so written in a set it must be too.
  auto recipe = search_recipe(kTinyModel +
                              "[training]\nglobal_batch = 8\nmicro_batch = 1\nrecompute = \"none\"\n"
                              "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 8\n"
                              "[[strategy]]\nname = \"pp\"\ndegree = 2\nschedule = [\"1f1b\", \"gpipe\"]\n");
  const SearchSpace space = build_search_space(*recipe, test::bundled_catalog());
  std::set<std::string> schedules;
  for (const StrategySlot& slot : space.slots)
    for (const StrategyOption& option : slot.options)
      for (const auto& [name, node] : option.values)
        if (slot.name == "pp" && name == "schedule") schedules.insert(scalar_text(*node));
  EXPECT_EQ(schedules, (std::set<std::string>{"1f1b", "gpipe"}));
}

TEST(Search, AnInvalidValueInARecipeArrayIsAnInputErrorAtItsPosition) {
  // Written alone, stage = 7 is "7 is out of range [0, 3]" at its line and column; in a set it
  // must be too, not silently dropped because fsdp's search case does not offer it. The recipe's
  // line 16 is `stage = [1, 7]`: the 7 is at column 13.
  auto recipe = search_recipe(kTinyModel +
                              "[training]\nglobal_batch = 8\nmicro_batch = 1\nrecompute = \"none\"\n"
                              "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 8\n"
                              "[[strategy]]\nname = \"fsdp\"\nstage = [1, 7]\n");
  expect_error<InputError>([&] { build_search_space(*recipe, test::bundled_catalog()); },
                           {"search.toml:16:13", "strategy[0].stage", "7 is out of range [0, 3]"});

  // The same through the command line: a misspelled schedule in a set is exit 3 at its position.
  CommandRun run = run_command({"search", PARAPLAN_TEST_DATA_DIR "/search/bad_schedule_array.toml", "--brief"});
  EXPECT_EQ(run.exit_code, 3) << run.err;
  EXPECT_NE(run.err.find("bad_schedule_array.toml:15:21: strategy[0].schedule: 'zero-bubbel' is not one of"),
            std::string::npos)
      << run.err;
}

TEST(Search, AMalformedDegreeArrayIsAnInputErrorAtItsPosition) {
  CommandRun run = run_command({"search", PARAPLAN_TEST_DATA_DIR "/search/bad_degree_array.toml"});
  EXPECT_EQ(run.exit_code, 3);
  EXPECT_NE(run.err.find("bad_degree_array.toml:14:14: strategy[0].degree: expected an integer, an array of integers "
                         "or \"auto\", got a string"),
            std::string::npos)
      << run.err;
}

// ---------------------------------------------------------------------------------------------
// Plugin catalogs of a chosen few

// A catalog of exactly these plugin files, scanned the real way from a directory of links.
PluginCatalog catalog_of(const std::vector<std::string>& files) {
  const std::filesystem::path directory =
      std::filesystem::temp_directory_path() / ("paraplan_search_test_" + std::to_string(getpid()));
  std::filesystem::remove_all(directory);
  std::filesystem::create_directories(directory);
  for (const std::string& file : files)
    std::filesystem::create_symlink(file, directory / std::filesystem::path(file).filename());
  PluginCatalog catalog = PluginCatalog::scan({directory});
  for (const PluginRecord& record : catalog.records()) catalog.find(record.name);  // loaded now, while the links exist
  std::filesystem::remove_all(directory);  // the libraries stay loaded
  return catalog;
}

#define BUNDLED(name) PARAPLAN_BUNDLED_PLUGIN_DIR "/paraplan_" name PARAPLAN_TEST_PLUGIN_SUFFIX

TEST(Search, ComposingTheWinnerNeedsOnlyThePluginsThatFoundIt) {
  // No analytic executor in this catalog: the search prices plans with test_good_executor, and
  // the winner, composed again for its full report, needs no executor at all.
  PluginCatalog catalog = catalog_of({BUNDLED("strategy_tp"), BUNDLED("strategy_fsdp"), BUNDLED("hw_h100_sxm"),
                                      PARAPLAN_TEST_PLUGIN_GOOD_EXECUTOR_FILE});
  ASSERT_EQ(catalog.records().size(), 4u);
  ASSERT_EQ(catalog.find("analytic"), nullptr);
  auto recipe = search_recipe(kTinyModel +
                              "[training]\nglobal_batch = 8\nmicro_batch = 1\nrecompute = \"none\"\n"
                              "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 8\n"
                              "[[strategy]]\nname = \"tp\"\ndegree = [2, 4]\n"
                              "[[strategy]]\nname = \"fsdp\"\nstage = 1\n");
  SearchSettings settings;
  settings.executor = "test_good_executor";
  settings.threads = 1;
  const SearchResult result = run_search(*recipe, catalog, settings);
  ASSERT_EQ(result.valid_plans, 2u);  // tp = 2 with dp = 4, tp = 4 with dp = 2
  const RankedPlan& winner = result.top.front();
  ComposedPlan composed;
  try {
    composed = compose_ranked(*recipe, catalog, result, winner, /*wants_schedule=*/false);
  } catch (const HostError& failure) {
    FAIL() << "compose_ranked: " << failure.what();
  }
  ASSERT_EQ(composed.strategies.size(), 2u);
  EXPECT_EQ(composed.strategies[0].name, "tp");
  EXPECT_EQ(composed.strategies[1].name, "fsdp");
  EXPECT_EQ(composed.strategies[0].degree * composed.strategies[1].degree, 8);
}

// ---------------------------------------------------------------------------------------------
// A strategy plugin built against ABI 1.0

// The ABI 1.0 strategy table of tests/plugins/c_abi_plugin.h, copied so that it ends exactly where
// a page the process may not read begins: reading a 1.1 field (search_cases) past its
// struct_size faults instead of passing unnoticed.
class GuardedTable {
 public:
  GuardedTable() {
    page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    memory_ = mmap(nullptr, 2 * page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory_ == MAP_FAILED) throw std::runtime_error("mmap failed");
    char* end = static_cast<char*>(memory_) + page_;
    if (mprotect(end, page_, PROT_NONE) != 0) throw std::runtime_error("mprotect failed");
    table_ = end - PP_STRATEGY_V1_0_SIZE;
    std::memcpy(table_, &paraplan_test::accepting_strategy, PP_STRATEGY_V1_0_SIZE);
  }
  ~GuardedTable() { munmap(memory_, 2 * page_); }
  GuardedTable(const GuardedTable&) = delete;
  GuardedTable& operator=(const GuardedTable&) = delete;
  const pp_strategy_v1* table() const { return reinterpret_cast<const pp_strategy_v1*>(table_); }

 private:
  size_t page_ = 0;
  void* memory_ = nullptr;
  char* table_ = nullptr;
};

// tp, fsdp, the analytic executor and the H100 profile, plus "test_abi_1_0", a strategy whose
// metadata claims ABI 1.0 and whose table is the guarded 1.0 table: it accepts every plan and
// changes nothing. It joins a scanned catalog as the loader would leave it: the file
// tests/plugins/abi_1_0 shows the loader accepts such a plugin (plugin_library_test.cc); this
// copy sits against a page the process may not read, so reading past 1.0's fields would crash.
struct Abi10Catalog {
  GuardedTable guarded;
  pp_plugin_v1 metadata =
      paraplan_test::strategy_plugin("test_abi_1_0", "an ABI 1.0 strategy table", PP_ABI_MAJOR, 0, guarded.table());
  PluginCatalog catalog = catalog_of({BUNDLED("strategy_tp"), BUNDLED("strategy_fsdp"), BUNDLED("executor_analytic"),
                                      BUNDLED("hw_h100_sxm")});

  Abi10Catalog() {
    catalog.add_loaded(LoadedPlugin{nullptr, &metadata, "test_abi_1_0.so"});
  }
};

const std::string kAbi10Search = kTinyModel +
                                 "[training]\nglobal_batch = 8\nmicro_batch = 1\nrecompute = \"none\"\n"
                                 "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 8\n"
                                 "[[strategy]]\nname = \"tp\"\ndegree = [2, 4]\n"
                                 "[[strategy]]\nname = \"fsdp\"\nstage = 1\n";

TEST(Search, AStrategyBuiltAgainstAbi10HasNoSearchCases) {
  static_assert(PP_STRATEGY_V1_0_SIZE < sizeof(pp_strategy_v1));
  ASSERT_EQ(paraplan_test::accepting_strategy.struct_size, PP_STRATEGY_V1_0_SIZE);
  Abi10Catalog abi10;

  // Not listed: not searched (it has no search cases).
  auto without = search_recipe(kAbi10Search);
  const SearchResult plain = search(*without, 1, 100, abi10.catalog);
  for (const StrategySlot& slot : plain.space.slots) EXPECT_NE(slot.name, "test_abi_1_0");

  // Listed at degree 1: one option, used in every plan; it changes nothing, so the search finds
  // exactly what it finds without it: tp in {2, 4} with fsdp taking the other 4 or 2 GPUs.
  auto with = search_recipe(kAbi10Search + "[[strategy]]\nname = \"test_abi_1_0\"\ndegree = 1\n");
  const SearchResult listed = search(*with, 1, 100, abi10.catalog);
  const StrategySlot* slot = nullptr;
  for (const StrategySlot& candidate : listed.space.slots)
    if (candidate.name == "test_abi_1_0") slot = &candidate;
  ASSERT_NE(slot, nullptr);
  ASSERT_EQ(slot->options.size(), 1u);
  EXPECT_FALSE(slot->options[0].absent());
  EXPECT_EQ(slot->options[0].degrees, std::vector<int64_t>{1});
  EXPECT_EQ(listed.plans, plain.plans);
  EXPECT_EQ(listed.valid_plans, plain.valid_plans);
  EXPECT_EQ(plain.valid_plans, 2u);
  ASSERT_EQ(listed.top.size(), plain.top.size());
  for (size_t rank = 0; rank < plain.top.size(); ++rank)
    EXPECT_EQ(listed.top[rank].figures.step_s, plain.top[rank].figures.step_s) << "rank " << rank + 1;
}

TEST(Search, AStrategyWithoutSearchCasesListedWithoutADegreeDoesNotAbortTheSearch) {
  // The way a recipe written for `paraplan evaluate` lists such a strategy: no degree, which
  // evaluate reads as 1. The search may try other degrees, but a plugin that makes no mesh axis
  // for them must not end the whole search: it finds what it finds at degree 1.
  Abi10Catalog abi10;
  auto pinned = search_recipe(kAbi10Search + "[[strategy]]\nname = \"test_abi_1_0\"\ndegree = 1\n");
  const SearchResult expected = search(*pinned, 1, 100, abi10.catalog);
  auto open = search_recipe(kAbi10Search + "[[strategy]]\nname = \"test_abi_1_0\"\n");
  SearchResult found;
  try {
    found = search(*open, 1, 100, abi10.catalog);
  } catch (const HostError& failure) {
    FAIL() << "the search ended: " << failure.what();
  }
  EXPECT_EQ(found.valid_plans, expected.valid_plans);
  ASSERT_FALSE(found.top.empty());
  EXPECT_EQ(found.top.front().figures.step_s, expected.top.front().figures.step_s);
}

}  // namespace
}  // namespace paraplan::host
