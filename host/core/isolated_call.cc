#include "host/core/isolated_call.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <sstream>

#include "host/report/report_output.h"

namespace paraplan::host {
namespace {

struct Pipe {
  int read = -1, write = -1;
  bool open() {
    int ends[2];
    if (pipe2(ends, O_CLOEXEC) != 0) return false;
    read = ends[0], write = ends[1];
    return true;
  }
  void close_read() {
    if (read >= 0) ::close(read);
    read = -1;
  }
  void close_write() {
    if (write >= 0) ::close(write);
    write = -1;
  }
};

// The child: its streams, its signals back to their defaults (a sanitizer's handler would turn a
// crash into an exit status), its own process group, and no life beyond its parent's.
[[noreturn]] void run_child(const std::function<void(int)>& body, Pipe& result, Pipe& out, Pipe& err, pid_t parent) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(kBodyThrew);  // the parent died before the line above
  for (int signal_number : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGPIPE, SIGTERM, SIGINT, SIGHUP})
    ::signal(signal_number, SIG_DFL);
  const int null_input = ::open("/dev/null", O_RDONLY);
  if (null_input >= 0) dup2(null_input, STDIN_FILENO);
  dup2(out.write, STDOUT_FILENO);
  dup2(err.write, STDERR_FILENO);
  result.close_read();
  try {
    body(result.write);
  } catch (...) {
    _exit(kBodyThrew);
  }
  _exit(0);
}

void append_limited(std::string& target, size_t& total, const char* data, size_t size, bool limited) {
  total += size;
  if (!limited) {
    target.append(data, size);
    return;
  }
  if (target.size() < IsolatedOutcome::kCaptureLimit)
    target.append(data, std::min(size, IsolatedOutcome::kCaptureLimit - target.size()));
}

}  // namespace

void write_all(int descriptor, const std::string& text) {
  size_t written = 0;
  while (written < text.size()) {
    const ssize_t step = ::write(descriptor, text.data() + written, text.size() - written);
    if (step < 0 && errno == EINTR) continue;
    if (step <= 0) return;
    written += static_cast<size_t>(step);
  }
}

IsolatedOutcome run_isolated(const std::function<void(int)>& body, double timeout_s) {
  IsolatedOutcome outcome;
  Pipe result, out, err;
  if (!result.open() || !out.open() || !err.open()) {
    for (Pipe* pipe : {&result, &out, &err}) pipe->close_read(), pipe->close_write();
    return outcome;
  }
  report_stream().flush();  // nothing buffered is written twice
  std::cout.flush();
  std::cerr.flush();
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child < 0) {
    for (Pipe* pipe : {&result, &out, &err}) pipe->close_read(), pipe->close_write();
    return outcome;
  }
  if (child == 0) run_child(body, result, out, err, parent);
  setpgid(child, child);  // also here: whichever runs first, the group exists before a kill
  for (Pipe* pipe : {&result, &out, &err}) pipe->close_write();

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  struct Stream {
    Pipe* pipe;
    std::string* text;
    size_t* total;
    bool limited;
  };
  size_t result_bytes = 0;
  Stream streams[] = {{&result, &outcome.result, &result_bytes, false},
                      {&out, &outcome.out, &outcome.out_bytes, true},
                      {&err, &outcome.err, &outcome.err_bytes, true}};
  bool timed_out = false;
  char buffer[16384];
  while (true) {
    pollfd fds[3];
    nfds_t count = 0;
    Stream* open_streams[3];
    for (Stream& stream : streams)
      if (stream.pipe->read >= 0) {
        fds[count] = {stream.pipe->read, POLLIN, 0};
        open_streams[count++] = &stream;
      }
    if (count == 0) break;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    const int ready = poll(fds, count, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) break;
    for (nfds_t i = 0; ready > 0 && i < count; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t size = ::read(fds[i].fd, buffer, sizeof(buffer));
      if (size > 0)
        append_limited(*open_streams[i]->text, *open_streams[i]->total, buffer, static_cast<size_t>(size),
                       open_streams[i]->limited);
      else if (size == 0 || errno != EINTR)
        open_streams[i]->pipe->close_read();
    }
  }
  for (Pipe* pipe : {&result, &out, &err}) pipe->close_read();
  if (timed_out) kill(-child, SIGKILL);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  kill(-child, SIGKILL);  // whatever the child started goes with it
  if (timed_out) {
    outcome.end = IsolatedOutcome::End::kTimedOut;
  } else if (WIFSIGNALED(status)) {
    outcome.end = IsolatedOutcome::End::kSignalled;
    outcome.signal = WTERMSIG(status);
  } else {
    outcome.end = IsolatedOutcome::End::kExited;
    outcome.exit_code = WEXITSTATUS(status);
  }
  return outcome;
}

std::string IsolatedOutcome::describe(double timeout_s) const {
  std::ostringstream text;
  switch (end) {
    case End::kExited: text << "exited with status " << exit_code; break;
    case End::kSignalled: text << "was killed by signal " << signal << " (" << strsignal(signal) << ")"; break;
    case End::kTimedOut: text << "did not finish within " << timeout_s << " s"; break;
    case End::kNotStarted: return "could not be started in a child process";
  }
  const std::string first_line = err.substr(0, err.find('\n'));
  if (!first_line.empty()) text << "; its stderr: " << first_line;
  return text.str();
}

}  // namespace paraplan::host
