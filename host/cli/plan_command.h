// paraplan/host/cli/plan_command.h: the body `evaluate` and `simulate` share: read the recipe,
// open its hardware, compose the plan (with schedule steps when the executor walks them), run
// one executor and print its report.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "host/cli/common_options.h"
#include "host/recipe/recipe.h"
#include "host/report/result_tree.h"
#include "host/validate/prediction_intervals.h"

namespace paraplan::host {

struct PlanReportOptions {
  std::string intervals_file;  // the prediction intervals' table (--intervals; "" the shipped one)
  std::string html_file;       // --html: the report also as a page (report/html_report.h)
  std::string trace_file;      // the Chrome trace the executor writes, drawn into the page
};

// One recipe's plan, composed and run on one executor, with its uncertainty.
struct PlanRun {
  std::unique_ptr<Recipe> recipe;
  ResultTree results;
  bool fits = true;  // memory.fits, where the executor reports it
};
// Input errors name the --set overrides that were in force.
PlanRun run_plan(const std::string& executor, const PluginCatalog& catalog, const std::string& recipe_file,
                 const std::vector<std::string>& overrides, const IntervalTable& intervals);

// Returns the exit code; a plan that does not fit in memory prints its report (and writes its
// page), then throws PlanError (exit 1).
int report_plan(const std::string& executor, const CommonOptions& common, const std::string& recipe_file,
                const std::vector<std::string>& overrides, const PlanReportOptions& options);

// The --intervals option evaluate, simulate and search share.
void add_intervals_option(boost::program_options::options_description& options, std::string& intervals_file);

}  // namespace paraplan::host
