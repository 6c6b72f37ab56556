// paraplan/host/core/isolated_call.h: running untrusted code in a child process.
//
// A plugin's code may crash, abort, hang or write to stdout; run in a child (as GStreamer's
// plugin scanner does) it can only fail the child. The child is a fork of this process: stdin
// from /dev/null, stdout and stderr captured, a private pipe for what the body reports, its own
// process group (killed as a whole past the timeout) and death when its parent dies.
#pragma once

#include <functional>
#include <string>

namespace paraplan::host {

struct IsolatedOutcome {
  enum class End { kExited, kSignalled, kTimedOut, kNotStarted };
  End end = End::kNotStarted;
  int exit_code = 0;  // kExited
  int signal = 0;     // kSignalled
  std::string result;  // everything the body wrote to its result descriptor
  std::string out, err;  // the first kCaptureLimit bytes the child wrote to stdout and stderr
  size_t out_bytes = 0, err_bytes = 0;  // how many it wrote in all

  static constexpr size_t kCaptureLimit = 4096;

  bool exited_cleanly() const { return end == End::kExited && exit_code == 0; }
  // "was killed by signal 11 (Segmentation fault)", "exited with status 3", "did not finish
  // within 10 s", with the first line the child wrote to stderr when there is one.
  std::string describe(double timeout_s) const;
};

// Runs body(result_fd) in a child; the child ends with _exit(0) when the body returns, or
// _exit(kBodyThrew) when it throws. The parent waits at most `timeout_s` seconds.
IsolatedOutcome run_isolated(const std::function<void(int result_fd)>& body, double timeout_s);
inline constexpr int kBodyThrew = 125;

// Writes all of `text` to `descriptor` (the child's result channel), retrying short writes.
void write_all(int descriptor, const std::string& text);

}  // namespace paraplan::host
