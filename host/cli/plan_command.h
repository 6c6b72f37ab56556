// paraplan/host/cli/plan_command.h: the body `evaluate` and `simulate` share: read the recipe,
// open its hardware, compose the plan (with schedule steps when the executor walks them), run
// one executor and print its report.
#pragma once

#include <string>
#include <vector>

#include "host/cli/common_options.h"

namespace paraplan::host {

// Returns the exit code; a plan that does not fit in memory prints its report, then throws
// PlanError (exit 1). `intervals_file`: the prediction intervals' table (--intervals; "" the
// shipped one).
int report_plan(const std::string& executor, const CommonOptions& common, const std::string& recipe_file,
                const std::vector<std::string>& overrides, const std::string& intervals_file);

// The --intervals option evaluate, simulate and search share.
void add_intervals_option(boost::program_options::options_description& options, std::string& intervals_file);

}  // namespace paraplan::host
