#include "host/core/text_sanitizer.h"

#include <cstring>

namespace paraplan::host {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// The length of the valid UTF-8 sequence at `text[at]`, or 0 (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF).
size_t sequence_length(std::string_view text, size_t at) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[at + i]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return 1;
  size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // the allowed range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) length = 2;
  else if (lead == 0xE0) length = 3, low = 0xA0;
  else if (lead >= 0xE1 && lead <= 0xEC) length = 3;
  else if (lead == 0xED) length = 3, high = 0x9F;
  else if (lead >= 0xEE && lead <= 0xEF) length = 3;
  else if (lead == 0xF0) length = 4, low = 0x90;
  else if (lead >= 0xF1 && lead <= 0xF3) length = 4;
  else if (lead == 0xF4) length = 4, high = 0x8F;
  else return 0;
  if (at + length > text.size()) return 0;
  if (byte(1) < low || byte(1) > high) return 0;
  for (size_t i = 2; i < length; ++i)
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  return length;
}

}  // namespace

std::string valid_utf8(std::string_view text) {
  std::string clean;
  clean.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    const size_t length = sequence_length(text, at);
    if (length == 0) {
      clean += kReplacement;
      ++at;
    } else {
      clean.append(text.substr(at, length));
      at += length;
    }
  }
  return clean;
}

std::string one_line(std::string_view text, size_t limit) {
  const std::string clean = valid_utf8(text);
  std::string line;
  line.reserve(std::min(clean.size(), limit + 3));
  for (size_t at = 0; at < clean.size();) {
    const size_t length = sequence_length(clean, at);
    if (line.size() + length > limit) {
      line += "...";
      break;
    }
    const unsigned char lead = static_cast<unsigned char>(clean[at]);
    if (length == 1 && (lead < 0x20 || lead == 0x7F))
      line += ' ';
    else if (length == 2 && lead == 0xC2 && static_cast<unsigned char>(clean[at + 1]) < 0xA0)
      line += ' ';  // C1 controls (U+0080-U+009F) steer terminals too
    else
      line.append(clean, at, length);
    at += length;
  }
  return line;
}

std::string bounded_string(const char* text, size_t limit) {
  if (!text) return "";
  return std::string(text, strnlen(text, limit));
}

}  // namespace paraplan::host
