// paraplan/host/core/joined.h: a list of words as one line, for reports and messages.
#pragma once

#include <string>
#include <vector>

namespace paraplan::host {

// joined({"tp", "dp", "pp"}, "-") == "tp-dp-pp".
inline std::string joined(const std::vector<std::string>& items, const char* separator) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : separator) + item;
  return text;
}

}  // namespace paraplan::host
