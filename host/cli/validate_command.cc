// `paraplan validate FILE.csv...`: measured training runs predicted by the search, and the error.
#include <spdlog/spdlog.h>

#include <chrono>
#include <fstream>
#include <iostream>

#include "host/recipe/shipped_files.h"
#include "host/report/html_report.h"
#include "host/core/edit_distance.h"
#include "host/core/joined.h"
#include "host/cli/command.h"
#include "host/cli/common_options.h"
#include "host/core/errors.h"
#include "host/core/number_format.h"
#include "host/validate/run_recipe.h"
#include "host/validate/scatter_plot.h"
#include "host/validate/validation_report.h"
#include "host/report/report_output.h"

namespace po = boost::program_options;

namespace paraplan::host {
namespace {

void write_file(const std::string& path, const std::string& content) {
  std::ofstream stream(path, std::ios::binary);
  stream << content;
  stream.close();
  if (!stream) throw InputError(path + ": cannot write file");
}

}  // namespace

int run_validate_command(const std::vector<std::string>& arguments) {
  CommonOptions common;
  std::vector<std::string> files;
  std::string plot_file, intervals_file, html_file, recipe_id;
  int64_t threads = 0;
  double fail_above = -1;
  po::options_description options("Validate options");
  options.add_options()("plot", po::value(&plot_file)->value_name("FILE.svg"),
                        "also draw predicted vs measured iteration time, log-log, as an SVG scatter plot")(
      "threads", po::value(&threads)->value_name("N")->default_value(0), "worker threads, one row each (0: every core)")(
      "fail-above", po::value(&fail_above)->value_name("PCT"),
      "exit 1 when the MAPE over the evaluated rows exceeds PCT percent (for CI)")(
      "write-intervals", po::value(&intervals_file)->value_name("FILE.json"),
      "also write the prediction intervals these rows give (measured / predicted step time by comparable "
      "class), for evaluate, simulate and search --intervals")(
      "recipe", po::value(&recipe_id)->value_name("ID"),
      "print the search recipe row ID becomes (TOML) and exit, predicting nothing: `paraplan search` of it "
      "gives the row's prediction, and it can be varied from there");
  add_html_option(options, html_file);
  options.add(common_options(common, /*with_json=*/true));
  po::options_description hidden;
  hidden.add_options()("csv", po::value(&files)->composing());
  po::options_description all;
  all.add(options).add(hidden);
  po::positional_options_description positional;
  positional.add("csv", -1);
  po::variables_map variables;
  parse_arguments(arguments, all, positional, variables);
  if (common.help || files.empty()) {
    print_command_help(
        "paraplan validate FILE.csv|NAME... [options]",
        "Predicts measured training runs and reports the error. Each CSV row is one run (the columns of\n"
        "recipes/validation/published.csv): its model, cluster, published parallelism and the measured\n"
        "iteration_s or tokens_per_s_per_gpu. The row becomes a search recipe that pins everything\n"
        "published; a blank knob (micro_batch, vpp, recompute, sequence_parallel, zero_stage) is searched,\n"
        "as the experts who ran it tuned it. The winner's step time (or tokens/s per GPU) is the prediction.\n"
        "A hardware column naming a .toml profile is read relative to the CSV's directory.\n\n"
        "Reports each row's signed error (predicted - measured) / measured, the MAPE (mean |error|), the\n"
        "worst row, the Spearman rank correlation of predicted vs measured iteration time, and MAPE per\n"
        "source. A row that cannot be evaluated (unknown hardware, degrees that do not multiply to\n"
        "num_gpus, a strategy constraint, no plan fits) is listed with its reason and left out of them.\n\n"
        "Then checks the prediction intervals out of fold: each source's rows against the intervals the\n"
        "other sources' rows give (5th-95th percentile of measured / predicted step time in the row's\n"
        "class: dense or MoE, GPU generation, precision, scale); about 80 % should fall inside.",
        options,
        "Exit codes: 0 at least one row was evaluated (and the MAPE is within --fail-above); 1 no row could\n"
        "be evaluated, or the MAPE exceeds --fail-above; 2 usage error; 3 input error (a missing file, a\n"
        "malformed CSV: the message names the file, line and column); 4 internal error.\n\n"
        "A NAME is a shipped data set (`paraplan recipes --data` lists them), found from any directory.\n\n"
        "Examples:\n  paraplan validate recipes/validation/published.csv --plot validation.svg\n"
        "  paraplan validate published --recipe llama3-405b-16384-8k > row.toml && paraplan search row.toml\n"
        "  paraplan validate published modern --json\n"
        "  paraplan validate published --html validation.html\n");
    return common.help ? kExitOk : kExitUsage;
  }
  if (variables.count("fail-above")) checked_number("fail-above", fail_above, 0, 1e6);
  checked_integer("threads", threads, 0, 1024);
  configure_logging(common);

  std::vector<MeasuredRun> runs;
  for (std::string& file : files) {
    file = resolve_shipped_file(file, ShippedKind::kMeasuredRuns).string();
    std::vector<MeasuredRun> read = read_measured_runs(file);
    runs.insert(runs.end(), read.begin(), read.end());
  }
  check_unique_ids(runs);
  if (variables.count("recipe")) {
    std::vector<std::string> ids;
    for (const MeasuredRun& run : runs) {
      if (run.id == recipe_id) {
        report_stream() << run_recipe_text(run);
        return kExitOk;
      }
      ids.push_back(run.id);
    }
    throw InputError("--recipe: no row '" + recipe_id + "' in " + joined(files, ", ") + did_you_mean(recipe_id, ids));
  }
  PluginCatalog catalog = scan_plugins(common);

  const auto start = std::chrono::steady_clock::now();
  ValidationReport report;
  report.files = files;
  report.predictions = predict_runs(runs, catalog, static_cast<unsigned>(threads));
  report.summary = summarize(report.predictions);
  const std::vector<Residual> residuals = residuals_of(report.predictions);
  report.coverage = leave_one_source_out(residuals);
  spdlog::info("{} rows predicted in {:.2f} s", runs.size(),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());

  if (!plot_file.empty()) write_file(plot_file, scatter_plot_svg(report));
  if (!html_file.empty()) {
    HtmlReport page;
    page.kind = "validate";
    page.report = validation_json(report);
    std::vector<std::string> names;
    for (const std::string& file : files) names.push_back(std::filesystem::path(file).stem().string());
    page.title = "Predicted against measured: " + joined(names, ", ");
    write_html_report(html_file, page);
  }
  if (!intervals_file.empty())
    write_file(intervals_file, dump_json(interval_table_json(build_interval_table(residuals, prediction_settings().executor))) + "\n");
  if (common.json)
    report_stream() << dump_json(validation_json(report)) << "\n";
  else
    write_validation_text(report_stream(), report);

  const ValidationSummary& summary = report.summary;
  if (summary.evaluated == 0)
    throw PlanError("no row could be evaluated: all " + std::to_string(summary.rows) +
                    " rows are unevaluable (their reasons are in the report)");
  if (variables.count("fail-above") && *summary.mape_pct > fail_above)
    throw PlanError("MAPE " + format_number("%.2f", *summary.mape_pct) + " % exceeds --fail-above " +
                    format_number("%g", fail_above) + " %");
  return kExitOk;
}

}  // namespace paraplan::host
