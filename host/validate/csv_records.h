// paraplan/host/validate/csv_records.h: RFC 4180 text -> records, each with the line it starts on.
//
// Fields are separated by commas; a field in double quotes may hold commas, line breaks and
// doubled quotes (""). Lines end in LF or CRLF. Blank lines are skipped, so a record's line is
// the one to name in a message, not its index. A UTF-8 byte order mark is ignored.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace paraplan::host {

struct CsvRecord {
  size_t line = 0;  // 1-based line of the file where the record starts
  std::vector<std::string> fields;
};

// Throws InputError "FILE:LINE: ..." for a quoted field that never closes, text after a closing
// quote, or a quote inside an unquoted field.
std::vector<CsvRecord> parse_csv(std::string_view text, const std::string& file);

}  // namespace paraplan::host
