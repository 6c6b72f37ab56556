// `paraplan search RECIPE`: every valid composition of the loaded strategies, ranked.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "host/cli/command.h"
#include "host/cli/common_options.h"
#include "host/cli/plan_command.h"
#include "host/core/errors.h"
#include "host/plan/execution.h"
#include "host/plan/hardware_binding.h"
#include "host/recipe/recipe_overrides.h"
#include "host/recipe/recipe_reader.h"
#include "host/report/html_report.h"
#include "host/report/text_report.h"
#include "host/search/search_report.h"
#include "host/report/report_output.h"
#include "host/report/uncertainty_report.h"

namespace po = boost::program_options;

namespace paraplan::host {
namespace {

Objective parse_objective(const std::string& name) {
  if (name == "throughput") return Objective::kThroughput;
  if (name == "memory") return Objective::kMemory;
  if (name == "time-to-train") return Objective::kTimeToTrain;
  throw UsageError("--objective: '" + name + "' is not one of throughput|memory|time-to-train");
}

// What every ranked plan's full report shares: the search, where it ran, and the intervals.
struct RankedReportContext {
  const Recipe& recipe;
  const PluginCatalog& catalog;
  const SearchResult& result;
  const HardwareBinding& hardware;
  const std::string& executor;
  const IntervalTable& intervals;
  const ComparableClass& plan_class;  // every plan of one search shares it
};

// A ranked plan composed again and run on the executor, for its full evaluate report with its
// uncertainty.
ResultTree ranked_plan_report(const RankedReportContext& context, const RankedPlan& plan) {
  const bool walks =
      context.catalog.require(context.executor, PP_KIND_EXECUTOR).metadata->executor->flags & PP_EXECUTOR_WALKS_SCHEDULE;
  ComposedPlan composed = compose_ranked(context.recipe, context.catalog, context.result, plan, walks);
  ResultTree report = run_executor(context.executor, context.recipe, context.catalog, composed, context.hardware);
  add_uncertainty(report, context.intervals, context.executor, context.plan_class);
  return report;
}

// The front's plans get their full reports on the page, up to this many (evenly spaced beyond).
constexpr size_t kMostFrontReports = 60;

// The page: every timed plan as step time against memory, the Pareto front with each plan's full
// evaluate report (a click shows it), the top K and the winner's report.
void write_search_page(const std::string& file, const SearchResult& result, const SearchReportContext& context,
                       const nlohmann::ordered_json& json, const RankedReportContext& reports_context) {
  HtmlReport page;
  page.kind = "search";
  page.report = json;
  page.title = std::filesystem::path(context.recipe.file).stem().string() + ": search over " +
               std::to_string(context.recipe.cluster.num_gpus) + " x " + context.hardware;
  nlohmann::ordered_json map = search_map_json(result, context);
  const size_t front = result.front.size(), reports = std::min(front, kMostFrontReports);
  for (size_t i = 0; i < reports; ++i) {
    const size_t at = reports == front ? i : i * (front - 1) / (reports - 1);
    map["front"][at]["report"] = ranked_plan_report(reports_context, result.front[at]).to_json();
  }
  if (reports < front)
    page.warnings.push_back("The Pareto front has " + std::to_string(front) + " plans; " + std::to_string(reports) +
                            " of them, evenly spaced, carry their full report.");
  page.extras["front"] = std::move(map["front"]);
  page.extras["cells"] = std::move(map["cells"]);
  write_html_report(file, page);
}

// A bar on stderr once the search has run a second, only when stderr is a terminal.
class ProgressBar {
 public:
  ProgressBar() : start_(std::chrono::steady_clock::now()) {}
  void operator()(uint64_t done, uint64_t total) {
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (elapsed < 1.0 || total == 0) return;
    const int width = 40;
    int filled = static_cast<int>(width * static_cast<double>(done) / static_cast<double>(total));
    std::fprintf(stderr, "\r[%s%s] %5.1f%% of %llu plans, %.1f s", std::string(filled, '#').c_str(),
                 std::string(width - filled, '.').c_str(), 100.0 * static_cast<double>(done) / static_cast<double>(total),
                 static_cast<unsigned long long>(total), elapsed);
    shown_ = true;
  }
  ~ProgressBar() {
    if (shown_) std::fprintf(stderr, "\r%s\r", std::string(80, ' ').c_str());
  }

 private:
  std::chrono::steady_clock::time_point start_;
  bool shown_ = false;
};

}  // namespace

int run_search_command(const std::vector<std::string>& arguments) {
  CommonOptions common;
  std::string recipe_file, objective = "throughput", executor = "analytic";
  std::vector<std::string> overrides;
  SearchSettings settings;
  double train_tokens = 1e12;
  int64_t top = 10, threads = 0;
  bool brief = false;
  po::options_description options("Search options");
  options.add_options()("top", po::value(&top)->value_name("K")->default_value(10), "plans to list")(
      "objective", po::value(&objective)->value_name("NAME")->default_value("throughput"),
      "rank by throughput (shortest step), memory (least per GPU, then step) or time-to-train (days for "
      "--train-tokens; the same order as throughput, as the recipe fixes the global batch)")(
      "train-tokens", po::value(&train_tokens)->value_name("N")->default_value(1e12, "1e12"),
      "tokens to train on, for --objective time-to-train")(
      "headroom", po::value(&settings.memory_headroom)->value_name("FRACTION")->default_value(0.10, "0.10"),
      "GPU memory kept free: a plan must fit in (1 - FRACTION) x capacity")(
      "threads", po::value(&threads)->value_name("N")->default_value(0), "worker threads (0: every core)")(
      "executor", po::value(&executor)->value_name("NAME"), "executor plugin that prices the plans (default: analytic)")(
      "brief", po::bool_switch(&brief), "leave out the winner's full evaluate report");
  std::string intervals_file, html_file;
  add_intervals_option(options, intervals_file);
  add_html_option(options, html_file);
  parse_recipe_command(arguments, options, common, recipe_file, overrides);
  if (common.help || recipe_file.empty()) {
    print_command_help(
        "paraplan search RECIPE [options]",
        "Enumerates every composition of the loaded strategy plugins for the recipe's model, training\n"
        "and cluster: each strategy's degrees and search cases, micro-batch sizes, recomputation and\n"
        "the order of the mesh axes on the hardware tiers. Plans that do not fit in memory (with the\n"
        "headroom) or break a constraint are rejected and counted by reason; the rest are ranked.\n\n"
        "The recipe pins what it writes and leaves the rest to the search: in [[strategy]], degree = 8\n"
        "pins, degree = [2, 4] or \"auto\" tries a set, schedule = [\"1f1b\", \"zero-bubble\"] tries\n"
        "those; a listed strategy is always used, an unlisted one is tried and left out (and left out\n"
        "before counting, named once, when no plan could use it: ep on a dense model). In [training],\n"
        "micro_batch and recompute take the same forms (absent: powers of two up to 16 dividing the\n"
        "global batch, and none|selective|full). [cluster] mesh_order pins the layout.",
        options,
        "Exit codes: 0 plans were found; 1 no plan survives (the message names what rejected them);\n"
        "2 usage error; 3 input error (file, TOML, schema, plugin); 4 internal error.\n\n"
        "Examples:\n  paraplan search recipes/search/gpt3-175b-512xa100.toml --top 5\n"
        "  paraplan search recipes/search/deepseek-v3-2048xh800.toml --top 5   (MoE: ep, its dispatcher and overlap)\n"
        "  paraplan search search/gpt3-175b-512xa100 --html search.html   (every timed plan: step time against memory)\n");
    return common.help ? kExitOk : kExitUsage;
  }
  settings.objective = parse_objective(objective);
  settings.executor = executor;
  settings.top = static_cast<size_t>(checked_integer("top", top, 1, 1000000));
  settings.threads = static_cast<unsigned>(checked_integer("threads", threads, 0, 1024));
  settings.map_candidates = !html_file.empty();
  if (!(settings.memory_headroom >= 0 && settings.memory_headroom < 1))
    throw UsageError("--headroom must be in [0, 1)");
  checked_number("train-tokens", train_tokens, 1, 1e18);
  configure_logging(common);
  PluginCatalog catalog = scan_plugins(common);
  RecipeReaderOptions reader_options;
  reader_options.overrides = overrides;
  reader_options.search = true;

  ProgressBar bar;
  if (isatty(STDERR_FILENO) && !common.quiet) settings.progress = [&bar](uint64_t done, uint64_t total) { bar(done, total); };
  std::unique_ptr<Recipe> recipe;
  SearchResult result;
  std::unique_ptr<HardwareBinding> hardware;
  ResultTree winner;
  IntervalTable interval_storage;
  const IntervalTable* interval_table_in_use = nullptr;
  ComparableClass plan_class;
  try {
    recipe = read_recipe(recipe_file, reader_options);
    interval_table_in_use = &interval_table(intervals_file, interval_storage);  // a bad file fails before the search
    hardware = open_hardware(*recipe, catalog);
    result = run_search(*recipe, catalog, settings);
    settings.progress = nullptr;
    if (result.top.empty()) throw PlanError(empty_search_message(result, *recipe));
    plan_class = comparable_class(*recipe, *hardware);
    if (!brief)
      winner = ranked_plan_report({*recipe, catalog, result, *hardware, executor, *interval_table_in_use, plan_class},
                                  result.top.front());
  } catch (const InputError& failure) {
    throw InputError(mention_overrides(failure.what(), overrides));
  }

  SearchReportContext context{*recipe, settings, hardware->profile().name, train_tokens};
  context.interval = applicable_interval(*interval_table_in_use, executor, plan_class);
  context.interval_coverage = interval_table_in_use->coverage;
  // The JSON report, when it is printed or the page carries it.
  nlohmann::ordered_json json;
  if (common.json || !html_file.empty()) {
    json = search_json(result, context);
    if (!brief) json["winner"] = winner.to_json();
  }
  if (!html_file.empty())
    write_search_page(html_file, result, context, json,
                      {*recipe, catalog, result, *hardware, executor, *interval_table_in_use, plan_class});
  if (common.json) {
    report_stream() << dump_json(json) << "\n";
  } else {
    write_search_text(report_stream(), result, context);
    if (!brief) {
      report_stream() << "\nThe winner's evaluate report:\n";
      write_text_report(report_stream(), winner);
    }
  }
  return kExitOk;
}

}  // namespace paraplan::host
