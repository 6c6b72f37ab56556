// paraplan/host/cli/plan_command.h: the body `evaluate` and `simulate` share: read the recipe,
// open its hardware, compose the plan (with schedule steps when the executor walks them), run
// one executor and print its report.
#pragma once

#include <string>
#include <vector>

#include "host/cli/common_options.h"

namespace paraplan::host {

// Returns the exit code; a plan that does not fit in memory prints its report, then throws
// PlanError (exit 1).
int report_plan(const std::string& executor, const CommonOptions& common, const std::string& recipe_file,
                const std::vector<std::string>& overrides);

}  // namespace paraplan::host
