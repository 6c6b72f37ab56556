// paraplan/host/core/trimmed.h: a field without the spaces and tabs around it.
#pragma once

#include <string>

namespace paraplan::host {

inline std::string trimmed(const std::string& text) {
  const size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \t") - begin + 1);
}

}  // namespace paraplan::host
