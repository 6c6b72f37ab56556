#include "host/validate/csv_records.h"

#include "host/core/errors.h"

namespace paraplan::host {
namespace {

// Walks the text once, field by field, counting lines for messages.
class CsvScanner {
 public:
  CsvScanner(std::string_view text, const std::string& file) : text_(text), file_(file) {
    if (text_.starts_with("\xEF\xBB\xBF")) text_.remove_prefix(3);
  }

  std::vector<CsvRecord> records() {
    std::vector<CsvRecord> records;
    while (position_ < text_.size()) {
      if (skip_blank_line()) continue;
      CsvRecord record{line_, {}};
      bool more = true;
      while (more) {
        record.fields.push_back(at('"') ? quoted_field(record) : plain_field(record));
        more = at(',');
        if (more) ++position_;
      }
      end_of_line();
      records.push_back(std::move(record));
    }
    return records;
  }

 private:
  bool at(char c) const { return position_ < text_.size() && text_[position_] == c; }
  bool at_line_end() const { return position_ == text_.size() || at('\n') || text_.substr(position_).starts_with("\r\n"); }

  [[noreturn]] void fail(size_t line, const CsvRecord& record, const std::string& problem) const {
    throw InputError(file_ + ":" + std::to_string(line) + ": field " + std::to_string(record.fields.size() + 1) + ": " +
                     problem);
  }

  // A line of nothing but spaces and tabs: no record.
  bool skip_blank_line() {
    size_t end = position_;
    while (end < text_.size() && (text_[end] == ' ' || text_[end] == '\t' || text_[end] == '\r')) ++end;
    if (end < text_.size() && text_[end] != '\n') return false;
    position_ = end == text_.size() ? end : end + 1;
    ++line_;
    return true;
  }

  void end_of_line() {
    if (at('\r')) ++position_;
    if (at('\n')) {
      ++position_;
      ++line_;
    }
  }

  std::string plain_field(const CsvRecord& record) {
    size_t start = position_;
    while (position_ < text_.size() && !at(',') && !at_line_end()) {
      if (at('"')) fail(line_, record, "a quote inside an unquoted field (quote the whole field and double the quote)");
      ++position_;
    }
    return std::string(text_.substr(start, position_ - start));
  }

  std::string quoted_field(const CsvRecord& record) {
    const size_t opened = line_;
    ++position_;
    std::string value;
    while (true) {
      if (position_ == text_.size()) fail(opened, record, "the quoted field never closes (a missing '\"')");
      char c = text_[position_++];
      if (c == '"') {
        if (!at('"')) break;
        ++position_;  // "" is one quote
      } else if (c == '\n') {
        ++line_;
      }
      value += c;
    }
    if (!at(',') && !at_line_end())
      fail(line_, record, "text after the closing quote (a quote inside a quoted field is written \"\")");
    return value;
  }

  std::string_view text_;
  const std::string& file_;
  size_t position_ = 0;
  size_t line_ = 1;
};

}  // namespace

std::vector<CsvRecord> parse_csv(std::string_view text, const std::string& file) { return CsvScanner(text, file).records(); }

}  // namespace paraplan::host
