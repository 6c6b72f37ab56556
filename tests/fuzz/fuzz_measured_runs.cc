// fuzz_measured_runs: a CSV of measured runs (paraplan validate's input) through the CSV reader,
// the row checks and each row's search recipe.
#include "fuzz_support.h"
#include "host/validate/measured_runs.h"
#include "host/validate/run_recipe.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace paraplan::host;
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<MeasuredRun> runs;
  paraplan::fuzz::refuse_cleanly([&] { runs = parse_measured_runs(text, "fuzz.csv"); });
  for (const MeasuredRun& run : runs) paraplan::fuzz::refuse_cleanly([&] { run_recipe(run); });
  return 0;
}
