// paraplan/host/core/number_format.h: one number through a printf pattern, for reports.
#pragma once

#include <cstdio>
#include <string>

namespace paraplan::host {

// format_number("%.1f", 3.14159) == "3.1". The pattern takes exactly one double.
inline std::string format_number(const char* pattern, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), pattern, value);
  return buffer;
}

}  // namespace paraplan::host
