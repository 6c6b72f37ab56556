// tests/fuzz/fuzz_support.h: what the libFuzzer harnesses share.
//
// A finding is anything but a clean refusal: a crash or a sanitizer report (ASan, UBSan), an
// exception that is not one of the host's documented errors (HostError: exit codes 1-3), or a
// report with a number that is not finite.
#pragma once

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "host/core/errors.h"
#include "host/report/result_tree.h"

namespace paraplan::fuzz {

[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "fuzz finding: %s\n", what.c_str());
  std::abort();
}

// Runs `body`; a HostError is the expected answer to bad input, anything else a finding.
template <typename Body>
void refuse_cleanly(Body&& body) {
  try {
    body();
  } catch (const host::HostError&) {
  } catch (const std::exception& failure) {
    finding(std::string("an exception that is not a HostError: ") + failure.what());
  } catch (...) {
    finding("an unknown exception");
  }
}

inline void require_finite(const host::ResultTree& results) {
  for (const auto& [key, value] : results.entries())
    if (const double* number = std::get_if<double>(&value); number && !std::isfinite(*number))
      finding("report key " + key + " is not finite");
}

}  // namespace paraplan::fuzz
