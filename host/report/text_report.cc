#include "host/report/text_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <vector>

namespace paraplan::host {
namespace {

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string printf_text(const char* format, double value, const char* unit) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), format, value, unit);
  return buffer;
}

// Decimal units, as GPU datasheets and the ZeRO paper state memory (an "80 GB" H100 is 80e9 bytes).
std::string bytes_text(double bytes) {
  double magnitude = std::fabs(bytes);
  if (magnitude >= 1e12) return printf_text("%.2f %s", bytes / 1e12, "TB");
  if (magnitude >= 1e9) return printf_text("%.2f %s", bytes / 1e9, "GB");
  if (magnitude >= 1e6) return printf_text("%.2f %s", bytes / 1e6, "MB");
  if (magnitude >= 1e3) return printf_text("%.2f %s", bytes / 1e3, "kB");
  return printf_text("%.0f %s", bytes, "B");
}

// True when some dot-separated segment of `key` ends with `suffix` ("time.exposed_comm_s.tp").
bool segment_ends_with(const std::string& key, const std::string& suffix) {
  size_t start = 0;
  while (start <= key.size()) {
    size_t end = key.find('.', start);
    std::string segment = key.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (ends_with(segment, suffix)) return true;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return false;
}

std::string seconds_text(double seconds) {
  double magnitude = std::fabs(seconds);
  if (magnitude == 0) return "0 s";
  if (magnitude >= 1.0) return printf_text("%.3f %s", seconds, "s");
  if (magnitude >= 1e-3) return printf_text("%.3f %s", seconds * 1e3, "ms");
  return printf_text("%.3f %s", seconds * 1e6, "us");
}

std::string plain_number(double value) {
  if (std::nearbyint(value) == value && std::fabs(value) < 1e15) return printf_text("%.0f%s", value, "");
  return printf_text("%.4g%s", value, "");
}

// "<row>.<column>" where row is a number: a key of a section printed as a table.
bool table_cell(const std::string& rest, std::string* row, std::string* column) {
  const size_t dot = rest.find('.');
  if (dot == std::string::npos || dot == 0 || rest.find('.', dot + 1) != std::string::npos) return false;
  for (size_t i = 0; i < dot; ++i)
    if (rest[i] < '0' || rest[i] > '9') return false;
  *row = rest.substr(0, dot), *column = rest.substr(dot + 1);
  return true;
}

}  // namespace

std::string format_value(const std::string& key, const ResultValue& value) {
  if (const bool* flag = std::get_if<bool>(&value)) return *flag ? "yes" : "no";
  if (const std::string* text = std::get_if<std::string>(&value)) return *text;
  double number = std::get<double>(value);
  if (!std::isfinite(number)) return "n/a";
  if (key.find("tokens_per_s") != std::string::npos) return printf_text("%.0f %s", number, "tokens/s");
  if (key.find("tflops") != std::string::npos) return printf_text("%.1f %s", number, "TFLOP/s");
  if (key.find("bytes") != std::string::npos) return bytes_text(number);
  if (segment_ends_with(key, "_s")) return seconds_text(number);
  if (ends_with(key, "fraction") || segment_ends_with(key, "mfu") || ends_with(key, "_pct"))
    return printf_text("%.1f %s", ends_with(key, "_pct") ? number : number * 100.0, "%");
  return plain_number(number);
}

// A section whose every key is "<section>.<number>.<column>" (the analytic executor's stages.*)
// prints as a table, a row per number, the columns in the order they first appear.
bool write_table(std::ostream& out, const ResultTree& results, const std::string& section) {
  std::vector<std::string> rows, columns;
  std::vector<std::vector<std::string>> cells;
  for (const auto& [key, value] : results.entries()) {
    if (!key.starts_with(section + ".")) continue;
    std::string row, column;
    if (!table_cell(key.substr(section.size() + 1), &row, &column)) return false;
    auto row_at = std::find(rows.begin(), rows.end(), row);
    if (row_at == rows.end()) rows.push_back(row), cells.emplace_back(), row_at = rows.end() - 1;
    auto column_at = std::find(columns.begin(), columns.end(), column);
    if (column_at == columns.end()) columns.push_back(column), column_at = columns.end() - 1;
    std::vector<std::string>& line = cells[static_cast<size_t>(row_at - rows.begin())];
    line.resize(columns.size());
    line[static_cast<size_t>(column_at - columns.begin())] = format_value(key, value);
  }
  if (rows.empty()) return false;
  std::vector<size_t> widths(columns.size());
  size_t row_width = section.size();
  for (const std::string& row : rows) row_width = std::max(row_width, row.size());
  for (size_t c = 0; c < columns.size(); ++c) {
    widths[c] = columns[c].size();
    for (std::vector<std::string>& line : cells) line.resize(columns.size()), widths[c] = std::max(widths[c], line[c].size());
  }
  out << "  " << std::left << std::setw(static_cast<int>(row_width)) << section;
  for (size_t c = 0; c < columns.size(); ++c) out << "  " << std::setw(static_cast<int>(widths[c])) << columns[c];
  out << "\n";
  for (size_t r = 0; r < rows.size(); ++r) {
    out << "  " << std::left << std::setw(static_cast<int>(row_width)) << rows[r];
    for (size_t c = 0; c < columns.size(); ++c)
      out << "  " << (c == 0 ? std::left : std::right) << std::setw(static_cast<int>(widths[c])) << cells[r][c];
    out << std::left << "\n";
  }
  return true;
}

void write_text_report(std::ostream& out, const ResultTree& results) {
  // Sections in the order they first appear; a key set late still prints in its own section.
  std::vector<std::string> sections;
  size_t width = 0;
  for (const auto& [key, value] : results.entries()) {
    size_t dot = key.find('.');
    std::string head = dot == std::string::npos ? "" : key.substr(0, dot);
    if (std::find(sections.begin(), sections.end(), head) == sections.end()) sections.push_back(head);
    std::string row, column;
    if (dot != std::string::npos && table_cell(key.substr(dot + 1), &row, &column)) continue;
    width = std::max(width, key.size() - (dot == std::string::npos ? 0 : dot + 1));
  }
  for (size_t i = 0; i < sections.size(); ++i) {
    out << (i ? "\n" : "") << sections[i] << "\n";
    if (!sections[i].empty() && write_table(out, results, sections[i])) continue;
    for (const auto& [key, value] : results.entries()) {
      size_t dot = key.find('.');
      std::string head = dot == std::string::npos ? "" : key.substr(0, dot);
      if (head != sections[i]) continue;
      std::string rest = dot == std::string::npos ? key : key.substr(dot + 1);
      out << "  " << std::left << std::setw(static_cast<int>(width)) << rest << "  " << format_value(key, value) << "\n";
    }
  }
}

}  // namespace paraplan::host
