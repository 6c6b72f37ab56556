// paraplan/host/report/text_report.h: a ResultTree as a report a person can read.
//
// Sections follow the first key segment (plan, memory, comm, time, throughput, ...). Units come
// from the key's suffix, a convention every executor follows (docs/architecture.md):
//   *tokens_per_s* -> tokens/s, *tflops* -> TFLOP/s, *bytes* -> GB/MB (decimal, as datasheets),
//   a segment ending in _s -> s/ms/us, *fraction / mfu -> %, *_pct -> %; anything else as it is.
#pragma once

#include <ostream>

#include "host/report/result_tree.h"

namespace paraplan::host {

void write_text_report(std::ostream& out, const ResultTree& results);

// "1.50 GiB", "12.3 ms", "51.4 %": the value of `key` formatted by its suffix.
std::string format_value(const std::string& key, const ResultValue& value);

}  // namespace paraplan::host
