// paraplan/host/core/toml_quote.h: text as a TOML basic string, for the TOML the host writes
// (validate's recipes, `hardware show`'s profiles).
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace paraplan::host {

// "text" with quotes, backslashes and control characters escaped.
inline std::string toml_quoted(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      char escape[8];
      std::snprintf(escape, sizeof(escape), "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += escape;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace paraplan::host
