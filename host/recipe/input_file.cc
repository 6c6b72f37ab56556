#include "host/recipe/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "host/core/errors.h"

namespace paraplan::host {

std::string read_bounded_file(const std::filesystem::path& file, size_t limit, const std::string& what) {
  // Opened without blocking (a FIFO would wait for a writer), then checked by what it is.
  const int descriptor = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (descriptor < 0) throw InputError(file.string() + ": cannot open file (" + std::strerror(errno) + ")");
  struct stat status {};
  if (fstat(descriptor, &status) != 0 || !S_ISREG(status.st_mode)) {
    ::close(descriptor);
    throw InputError(file.string() + ": not a regular file; a " + what + " must be one");
  }
  if (static_cast<uintmax_t>(status.st_size) > limit) {
    ::close(descriptor);
    throw InputError(file.string() + ": " + std::to_string(status.st_size) + " bytes, more than the " +
                     std::to_string(limit) + " a " + what + " may have");
  }
  std::string text;
  std::vector<char> buffer(1 << 16);
  while (true) {
    const ssize_t size = ::read(descriptor, buffer.data(), buffer.size());
    if (size < 0 && errno == EINTR) continue;
    if (size <= 0) break;
    text.append(buffer.data(), static_cast<size_t>(size));
    if (text.size() > limit) break;  // it grew while being read
  }
  ::close(descriptor);
  if (text.size() > limit)
    throw InputError(file.string() + ": more than the " + std::to_string(limit) + " bytes a " + what + " may have");
  return text;
}

namespace {

// A small TOML lexer that only follows nesting: it skips strings and comments, counts the dots of
// keys (in table headers and before '='), and the brackets and braces of values.
class DepthScanner {
 public:
  DepthScanner(std::string_view text, const std::string& name) : text_(text), name_(name) {}

  void run() {
    while (at_ < text_.size()) {
      const char c = text_[at_];
      if (c == '\n') {
        ++line_, line_start_ = at_ + 1, ++at_;
        if (stack_.empty()) expecting_key_ = true;
        continue;
      }
      if (c == '#') {
        while (at_ < text_.size() && text_[at_] != '\n') ++at_;
        continue;
      }
      if (c == '"' || c == '\'') {
        skip_string();
        continue;
      }
      if (expecting_key_ && stack_.empty() && c == '[') {
        header();
        continue;
      }
      if (expecting_key_) {
        key();
        continue;
      }
      value_character(c);
    }
  }

 private:
  void fail() const {
    throw InputError(name_ + ":" + std::to_string(line_) + ":" + std::to_string(at_ - line_start_ + 1) +
                     ": nesting deeper than " + std::to_string(kMaxTomlDepth) + " levels (keys, tables and arrays)");
  }
  void check(size_t depth) const {
    if (depth > kMaxTomlDepth) fail();
  }
  void skip_string() {
    const char quote = text_[at_];
    const bool multi_line = text_.substr(at_, 3) == std::string(3, quote);
    at_ += multi_line ? 3 : 1;
    while (at_ < text_.size()) {
      const char c = text_[at_];
      if (c == '\\' && quote == '"') {
        at_ += 2;
        continue;
      }
      if (c == '\n') {
        if (!multi_line) return;  // a parse error the parser will report
        ++line_, line_start_ = at_ + 1;
      }
      if (c == quote && (!multi_line || text_.substr(at_, 3) == std::string(3, quote))) {
        at_ += multi_line ? 3 : 1;
        return;
      }
      ++at_;
    }
  }
  // [a.b.c] or [[a.b]]: one level per segment.
  void header() {
    size_t depth = 1;
    ++at_;
    while (at_ < text_.size() && text_[at_] != ']' && text_[at_] != '\n') {
      if (text_[at_] == '"' || text_[at_] == '\'') {
        skip_string();
        continue;
      }
      if (text_[at_] == '.') check(++depth);
      ++at_;
    }
    while (at_ < text_.size() && text_[at_] == ']') ++at_;
  }
  // a.b.c = ...: one level per segment, on top of the brackets around it.
  void key() {
    size_t depth = stack_.size() + 1;
    while (at_ < text_.size() && text_[at_] != '=' && text_[at_] != '\n' && text_[at_] != '}') {
      if (text_[at_] == '"' || text_[at_] == '\'') {
        skip_string();
        continue;
      }
      if (text_[at_] == '.') check(++depth);
      ++at_;
    }
    if (at_ < text_.size() && text_[at_] == '=') {
      ++at_;
      expecting_key_ = false;
    } else if (at_ < text_.size() && text_[at_] == '}') {
      close();
      ++at_;
    }
  }
  void value_character(char c) {
    if (c == '[' || c == '{') {
      stack_.push_back(c);
      check(stack_.size());
      expecting_key_ = c == '{';
    } else if (c == ']' || c == '}') {
      close();
    } else if (c == ',' && !stack_.empty() && stack_.back() == '{') {
      expecting_key_ = true;
    }
    ++at_;
  }
  void close() {
    if (!stack_.empty()) stack_.pop_back();
    expecting_key_ = false;
  }

  std::string_view text_;
  const std::string& name_;
  size_t at_ = 0, line_ = 1, line_start_ = 0;
  bool expecting_key_ = true;
  std::string stack_;
};

}  // namespace

void check_toml_depth(std::string_view text, const std::string& name) { DepthScanner(text, name).run(); }

}  // namespace paraplan::host
