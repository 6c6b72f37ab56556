// paraplan/host/report/uncertainty_report.h: a report's error bars (prediction_intervals.h).
//
// After the executor has reported time.step_s, throughput.tokens_per_s_per_gpu, throughput.mfu
// and memory.*, the host adds the section "uncertainty": the interval each figure lies in for the
// stated share of runs (coverage_fraction), the comparable class it comes from and how many
// measured runs that class holds, and the out-of-memory risk: the share of measured/predicted
// memory ratios under which the plan would not fit. A table of another executor's residuals
// gives no interval; the section then says why.
#pragma once

#include <string>

#include "host/report/result_tree.h"
#include "host/validate/prediction_intervals.h"

namespace paraplan::host {

void add_uncertainty(ResultTree& results, const IntervalTable& table, const std::string& executor,
                     const ComparableClass& plan_class);

// The interval class `table` gives plans of `plan_class` priced by `executor`: null when the
// table holds another executor's residuals or no class comparable enough.
const IntervalClass* applicable_interval(const IntervalTable& table, const std::string& executor,
                                         const ComparableClass& plan_class);

// The table --intervals names, or the shipped one when `file` is empty.
const IntervalTable& interval_table(const std::string& file, IntervalTable& storage);

}  // namespace paraplan::host
