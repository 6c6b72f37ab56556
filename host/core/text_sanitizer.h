// paraplan/host/core/text_sanitizer.h: text from plugins and files made safe to print.
//
// Whatever a plugin or an input file hands the host ends up in a report, a JSON document or a
// terminal: invalid UTF-8 would make the JSON writer fail, and control characters could rewrite
// the terminal. Invalid sequences become U+FFFD, as the Unicode standard recommends.
#pragma once

#include <string>
#include <string_view>

namespace paraplan::host {

// `text` with every invalid UTF-8 sequence replaced by U+FFFD.
std::string valid_utf8(std::string_view text);

// valid_utf8(text) as one line: control characters (newlines, tabs, escapes) become spaces, and
// past `limit` bytes it is cut at a character boundary and ends with "...".
std::string one_line(std::string_view text, size_t limit = 4096);

// The C string `text`, read up to `limit` bytes (it may be unterminated), or "" for NULL.
std::string bounded_string(const char* text, size_t limit);

}  // namespace paraplan::host
