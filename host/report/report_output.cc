#include "host/report/report_output.h"

#include <unistd.h>

#include <cerrno>
#include <iostream>
#include <streambuf>

namespace paraplan::host {
namespace {

std::ostream* installed = nullptr;
bool withheld = false;

// A stream that discards everything.
class NullBuffer : public std::streambuf {
 protected:
  int_type overflow(int_type character) override { return traits_type::not_eof(character); }
  std::streamsize xsputn(const char*, std::streamsize count) override { return count; }
};

// An unbuffered-enough stream buffer over a file descriptor (the original stdout).
class DescriptorBuffer : public std::streambuf {
 public:
  explicit DescriptorBuffer(int descriptor) : descriptor_(descriptor) { setp(buffer_, buffer_ + sizeof(buffer_)); }
  ~DescriptorBuffer() override { sync(); }

 protected:
  int_type overflow(int_type character) override {
    if (sync() != 0) return traits_type::eof();
    if (!traits_type::eq_int_type(character, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(character);
      pbump(1);
    }
    return traits_type::not_eof(character);
  }
  int sync() override {
    const char* at = pbase();
    while (at < pptr()) {
      const ssize_t written = ::write(descriptor_, at, static_cast<size_t>(pptr() - at));
      if (written < 0 && errno == EINTR) continue;
      if (written <= 0) return -1;
      at += written;
    }
    setp(buffer_, buffer_ + sizeof(buffer_));
    return 0;
  }

 private:
  int descriptor_;
  char buffer_[1 << 14];
};

}  // namespace

std::ostream& report_stream() {
  if (withheld) {
    static NullBuffer buffer;
    static std::ostream discard(&buffer);
    return discard;
  }
  return installed ? *installed : std::cout;
}

void withhold_report() { withheld = true; }

void set_report_stream(std::ostream* stream) { installed = stream; }

bool redirect_stdout_for_plugins() {
  std::cout.flush();
  const int original = dup(STDOUT_FILENO);
  if (original < 0) return false;
  if (dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    close(original);
    return false;
  }
  // Kept for the life of the process: reports may be written until exit.
  static DescriptorBuffer buffer(original);
  static std::ostream stream(&buffer);
  set_report_stream(&stream);
  // What plugins write through std::cout joins stderr too (std::cout is shared with them).
  std::cout.rdbuf(std::cerr.rdbuf());
  return true;
}

std::string dump_json(const nlohmann::ordered_json& document, int indent) {
  return document.dump(indent, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string dump_json(const nlohmann::json& document, int indent) {
  return document.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace paraplan::host
