// paraplan/host/cli/plan_command.h: the body `evaluate` and `simulate` share: read the recipe,
// open its hardware, compose the plan (with schedule steps when the executor walks them), run
// one executor and print its report.
#pragma once

#include <string>
#include <vector>

#include "host/cli/common_options.h"

namespace paraplan::host {

struct PlanReportOptions {
  std::string intervals_file;  // the prediction intervals' table (--intervals; "" the shipped one)
  std::string html_file;       // --html: the report also as a page (report/html_report.h)
  std::string trace_file;      // the Chrome trace the executor writes, drawn into the page
};

// Returns the exit code; a plan that does not fit in memory prints its report (and writes its
// page), then throws PlanError (exit 1).
int report_plan(const std::string& executor, const CommonOptions& common, const std::string& recipe_file,
                const std::vector<std::string>& overrides, const PlanReportOptions& options);

// The --intervals option evaluate, simulate and search share.
void add_intervals_option(boost::program_options::options_description& options, std::string& intervals_file);

}  // namespace paraplan::host
