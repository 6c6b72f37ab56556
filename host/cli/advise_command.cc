// `paraplan advise RECIPE`: the practitioners' rule-of-thumb ladder (search/advice_ladder.h)
// next to the searched optimum, and the gap between them.
#include <iostream>

#include "host/cli/command.h"
#include "host/cli/common_options.h"
#include "host/core/errors.h"
#include "host/core/number_format.h"
#include "host/plan/hardware_binding.h"
#include "host/recipe/recipe_overrides.h"
#include "host/recipe/recipe_reader.h"
#include "host/report/text_report.h"
#include "host/search/advice_ladder.h"
#include "host/search/search_report.h"
#include "host/report/report_output.h"

namespace po = boost::program_options;

namespace paraplan::host {
namespace {

std::string percent(double fraction) { return format_number("%.1f %%", 100.0 * fraction); }
std::string gigabytes(double bytes) { return format_value("bytes", bytes); }

// The ladder prices a plan through run() and the search through evaluate(): the same plan's
// step times agree to rounding, which must not read as "shorter".
constexpr double kSameTime = 1e-9;

// What the command found: the ladder, and the search's best plan when it kept one.
struct Advice {
  const Recipe& recipe;
  std::string hardware;
  LadderResult ladder;
  SearchResult search;
  std::string search_error;  // why the search kept no plan

  const LadderStep* final_step() const { return ladder.final_step ? &ladder.steps[*ladder.final_step] : nullptr; }
  const RankedPlan* optimum() const { return search.top.empty() ? nullptr : &search.top.front(); }
  // ladder step time / optimum step time - 1, in percent; only with both plans.
  std::optional<double> gap_pct() const {
    const LadderStep* step = final_step();
    const RankedPlan* best = optimum();
    if (!step || !best || !(best->figures.step_s > 0)) return std::nullopt;
    return (step->figures.step_s / best->figures.step_s - 1.0) * 100.0;
  }
};

std::string step_outcome(const LadderStep& step, double usable) {
  if (!step.composed) return "skipped: " + step.skipped;
  const LadderFigures& figures = step.figures;
  std::string text = format_number("step %.3f s, ", figures.step_s) + "MFU " + percent(figures.mfu) + ", " +
                     gigabytes(figures.memory_per_gpu_bytes) + " per GPU";
  if (!step.fits) return text + ": does not fit in " + gigabytes(usable);
  return text + ", FSDP efficiency " + percent(figures.efficiency()) +
         (step.efficient ? " >= " : " < ") + percent(kLadderEfficiencyTarget);
}

void write_text(std::ostream& out, const Advice& advice, double headroom) {
  const Recipe& recipe = advice.recipe;
  out << "Advice: " << recipe.file << "\n  " << recipe.model.name << " on " << recipe.cluster.num_gpus << " x "
      << advice.hardware << ", global batch " << recipe.training.global_batch << ", sequence "
      << recipe.model.shape.seq_len << "; a plan fits in " << gigabytes(advice.ladder.usable_memory_bytes)
      << " per GPU (" << percent(headroom) << " headroom)\n\n"
      << "The rule-of-thumb ladder (the seed article's rules; the recipe's [[strategy]] list is not used):\n";
  for (size_t index = 0; index < advice.ladder.steps.size(); ++index) {
    const LadderStep& step = advice.ladder.steps[index];
    out << format_number("%3.0f. ", static_cast<double>(index + 1)) << step.plan.describe() << "\n       [" << step.rule
        << "] " << step.reason << "\n       -> " << step_outcome(step, advice.ladder.usable_memory_bytes) << "\n";
  }

  const LadderStep* final_step = advice.final_step();
  out << "\nLadder plan";
  if (final_step) {
    const LadderFigures& figures = final_step->figures;
    out << " (step " << *advice.ladder.final_step + 1 << "): " << final_step->plan.describe() << "\n  "
        << format_number("step time %.3f s, ", figures.step_s) << "MFU " << percent(figures.mfu) << ", "
        << format_number("%.1f tokens/s/GPU, ", figures.tokens_per_s_per_gpu) << gigabytes(figures.memory_per_gpu_bytes)
        << " per GPU" << (final_step->fits ? "" : " (does not fit)") << "\n";
  } else {
    out << ": none\n";
  }
  out << "  " << advice.ladder.outcome << "\n";

  out << "\nSearched optimum";
  if (const RankedPlan* best = advice.optimum()) {
    out << " (best of " << advice.search.valid_plans << " plans that fit, of " << advice.search.plans
        << " searched): " << ranked_plan_text(advice.search.space, *best) << "\n  "
        << format_number("step time %.3f s, ", best->figures.step_s) << "MFU " << percent(best->figures.mfu) << ", "
        << format_number("%.1f tokens/s/GPU, ", best->figures.tokens_per_s_per_gpu)
        << gigabytes(best->figures.memory_per_gpu_bytes) << " per GPU\n";
  } else {
    out << ": none (" << advice.search_error << ")\n";
  }

  if (std::optional<double> gap = advice.gap_pct()) {
    out << "\nGap: the ladder's step is " << format_number("%.1f %%", *gap) << (*gap > -kSameTime ? " longer" : " shorter")
        << format_number(" than the optimum's (%.3f s", final_step->figures.step_s)
        << format_number(" / %.3f s - 1); MFU ", advice.optimum()->figures.step_s) << percent(final_step->figures.mfu)
        << " vs " << percent(advice.optimum()->figures.mfu) << "\n";
  }
  if (final_step) out << "\nThe ladder's plan as recipe text:\n" << final_step->plan.strategy_tables()
                      << "# [training] micro_batch = " << final_step->plan.micro_batch << ", recompute = \""
                      << recompute_name(final_step->plan.recompute) << "\"\n";
}

nlohmann::ordered_json plan_json(const LadderPlan& plan) {
  return {{"text", plan.describe()},         {"data_parallel", plan.data_parallel},
          {"stage", plan.stage},             {"data_parallel_degree", plan.data_parallel_degree},
          {"tp", plan.tp},                   {"pp", plan.pp},
          {"cp", plan.cp},                   {"micro_batch", plan.micro_batch},
          {"recompute", recompute_name(plan.recompute)}};
}

nlohmann::ordered_json figures_json(const LadderStep& step) {
  const LadderFigures& figures = step.figures;
  return {{"step_s", figures.step_s},
          {"compute_s", figures.compute_s},
          {"exposed_data_parallel_comm_s", figures.exposed_data_parallel_comm_s},
          {"fsdp_efficiency", figures.efficiency()},
          {"memory_per_gpu_bytes", figures.memory_per_gpu_bytes},
          {"mfu", figures.mfu},
          {"tokens_per_s_per_gpu", figures.tokens_per_s_per_gpu}};
}

nlohmann::ordered_json advice_json(const Advice& advice, double headroom) {
  const Recipe& recipe = advice.recipe;
  nlohmann::ordered_json json;
  json["recipe"] = recipe.file;
  json["model"] = recipe.model.name;
  json["hardware"] = advice.hardware;
  json["num_gpus"] = recipe.cluster.num_gpus;
  json["headroom"] = headroom;
  json["usable_memory_bytes"] = advice.ladder.usable_memory_bytes;
  json["efficiency_target"] = kLadderEfficiencyTarget;

  nlohmann::ordered_json steps = nlohmann::ordered_json::array();
  for (const LadderStep& step : advice.ladder.steps) {
    nlohmann::ordered_json entry = {{"rule", step.rule}, {"reason", step.reason}, {"plan", plan_json(step.plan)},
                                    {"composed", step.composed}};
    if (step.composed) {
      entry["figures"] = figures_json(step);
      entry["fits"] = step.fits;
      entry["efficient"] = step.efficient;
    } else {
      entry["skipped"] = step.skipped;
    }
    steps.push_back(std::move(entry));
  }
  nlohmann::ordered_json ladder = {{"steps", std::move(steps)},
                                   {"reached_target", advice.ladder.reached_target},
                                   {"outcome", advice.ladder.outcome}};
  if (const LadderStep* step = advice.final_step()) {
    ladder["final"] = {{"step", *advice.ladder.final_step + 1}, {"plan", plan_json(step->plan)},
                       {"fits", step->fits},     {"figures", figures_json(*step)},
                       {"recipe", step->plan.strategy_tables()}, {"report", advice.ladder.final_report.to_json()}};
  } else {
    ladder["final"] = nullptr;
  }
  json["ladder"] = std::move(ladder);

  if (const RankedPlan* best = advice.optimum()) {
    json["optimum"] = {{"plan", ranked_plan_text(advice.search.space, *best)},
                       {"micro_batch", best->micro_batch},
                       {"recompute", recompute_name(best->recompute)},
                       {"mesh_order", best->mesh_order},
                       {"step_s", best->figures.step_s},
                       {"mfu", best->figures.mfu},
                       {"tokens_per_s_per_gpu", best->figures.tokens_per_s_per_gpu},
                       {"memory_per_gpu_bytes", best->figures.memory_per_gpu_bytes},
                       {"recipe", ranked_plan_recipe(advice.search, *best)},
                       {"plans", advice.search.plans},
                       {"valid_plans", advice.search.valid_plans}};
  } else {
    json["optimum"] = {{"error", advice.search_error}};
  }
  if (std::optional<double> gap = advice.gap_pct()) {
    json["gap"] = {{"step_time_pct", *gap},
                   {"ladder_step_s", advice.final_step()->figures.step_s},
                   {"optimum_step_s", advice.optimum()->figures.step_s},
                   {"ladder_mfu", advice.final_step()->figures.mfu},
                   {"optimum_mfu", advice.optimum()->figures.mfu}};
  } else {
    json["gap"] = nullptr;
  }
  return json;
}

}  // namespace

int run_advise_command(const std::vector<std::string>& arguments) {
  CommonOptions common;
  std::string recipe_file;
  std::vector<std::string> overrides;
  SearchSettings search_settings;
  search_settings.top = 1;
  int64_t threads = 0;
  po::options_description options("Advise options");
  options.add_options()(
      "headroom", po::value(&search_settings.memory_headroom)->value_name("FRACTION")->default_value(0.10, "0.10"),
      "GPU memory kept free: a plan fits in (1 - FRACTION) x capacity (the ladder and the search)")(
      "threads", po::value(&threads)->value_name("N")->default_value(0),
      "search worker threads (0: every core)");
  parse_recipe_command(arguments, options, common, recipe_file, overrides);
  if (common.help || recipe_file.empty()) {
    print_command_help(
        "paraplan advise RECIPE [options]",
        "Climbs the practitioners' rule-of-thumb ladder (the seed article's rules of thumb) for the\n"
        "recipe's model, training and cluster, and reports the plan it yields next to the optimum\n"
        "`paraplan search` finds, and the gap: ladder step time / optimum step time - 1.\n\n"
        "The ladder, each rung composed and evaluated as `paraplan evaluate` would:\n"
        "  0. seq_len > 131072: sp mode \"ring\" (context parallelism), degree ceil(seq_len / 131072)\n"
        "     rounded up to a power of two, on every rung;\n"
        "  1. data parallelism by the GPUs it spans: <= 128 fsdp stage 1, <= 256 stage 2, <= 512\n"
        "     stage 3, beyond hsdp stage 3 (hybrid sharding); a plan that does not fit raises the\n"
        "     stage up to 3 (\"start with FSDP-3\"), then recomputes (selective, then full) unless the\n"
        "     recipe writes training.recompute;\n"
        "  2. a plan that fits with FSDP communication efficiency compute / (compute + exposed FSDP\n"
        "     communication) >= 80 % ends the ladder; else TP 2, 4, 8 within a node (with sp mode\n"
        "     \"megatron\" unless ring attention holds the sp entry), each settled as in 1;\n"
        "  3. TP would exceed 8: PP 2, 4, 8, ... (schedule 1f1b, trim_ends) on the largest TP;\n"
        "  4. no rung fits at 80 %: the last rung that fits is the advice.\n"
        "A rung that does not compose is skipped with its reason. micro_batch is the recipe's (else 1).\n\n"
        "The ladder uses only the recipe's [model], [training] and [cluster]: its [[strategy]] list is\n"
        "ignored. The search reads the recipe as `paraplan search` does, so a [[strategy]] list there\n"
        "narrows the optimum (and the gap may then be negative); leave it out to compare against every\n"
        "composition of the loaded strategies.",
        options,
        "Exit codes: 0 the ladder's plan fits; 1 it does not fit, or no rung composes (the report still\n"
        "prints); 2 usage error; 3 input error (file, TOML, schema, a strategy plugin the ladder needs\n"
        "is not loaded); 4 internal error.\n\n"
        "Example:\n  paraplan advise recipes/search/gpt3-175b-512xa100.toml\n");
    return common.help ? kExitOk : kExitUsage;
  }
  if (!(search_settings.memory_headroom >= 0 && search_settings.memory_headroom < 1))
    throw UsageError("--headroom must be in [0, 1)");
  search_settings.threads = static_cast<unsigned>(checked_integer("threads", threads, 0, 1024));
  configure_logging(common);
  PluginCatalog catalog = scan_plugins(common);
  RecipeReaderOptions reader_options;
  reader_options.overrides = overrides;
  reader_options.search = true;

  std::unique_ptr<Recipe> recipe;
  std::unique_ptr<Advice> advice;
  try {
    recipe = read_recipe(recipe_file, reader_options);
    std::unique_ptr<HardwareBinding> hardware = open_hardware(*recipe, catalog);
    LadderSettings ladder_settings;
    ladder_settings.memory_headroom = search_settings.memory_headroom;
    ladder_settings.executor = search_settings.executor;
    advice = std::make_unique<Advice>(Advice{*recipe, hardware->profile().name, climb_ladder(*recipe, catalog, ladder_settings), {}, {}});
    advice->search = run_search(*recipe, catalog, search_settings);
    if (advice->search.top.empty()) advice->search_error = empty_search_message(advice->search, *recipe);
  } catch (const InputError& failure) {
    throw InputError(mention_overrides(failure.what(), overrides));
  }

  if (common.json)
    report_stream() << dump_json(advice_json(*advice, search_settings.memory_headroom)) << "\n";
  else
    write_text(report_stream(), *advice, search_settings.memory_headroom);
  const LadderStep* final_step = advice->final_step();
  if (!final_step)
    throw PlanError(recipe->file + ": no rung of the advice ladder composes (the report lists each rung's reason)");
  if (!final_step->fits)
    throw PlanError(recipe->file + ": the ladder's plan does not fit in " +
                    gigabytes(advice->ladder.usable_memory_bytes) + " per GPU (see the ladder above)");
  return kExitOk;
}

}  // namespace paraplan::host
