#include "launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "paraplan/sdk.hpp"

namespace mpi_executor {
namespace {

[[noreturn]] void refuse_launcher(const std::string& message) {
  throw paraplan::Error(PP_ERROR_INVALID_ARGUMENT, "executor.mpi.launcher: " + message);
}

std::vector<std::string> own_arguments() {
  std::ifstream file("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> arguments;
  std::string argument;
  while (std::getline(file, argument, '\0')) arguments.push_back(argument);
  if (arguments.empty())
    throw paraplan::Error(PP_ERROR_UNSUPPORTED, "cannot read this process's command line (/proc/self/cmdline)");
  return arguments;
}

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string word; in >> word;) out.push_back(word);
  return out;
}

// `program` as an absolute path: itself when it names a path, else the first match on PATH.
std::filesystem::path find_program(const std::string& program) {
  if (program.find('/') != std::string::npos) return std::filesystem::absolute(program);
  const char* path = std::getenv("PATH");
  std::istringstream entries(path ? path : "/usr/bin:/bin");
  for (std::string entry; std::getline(entries, entry, ':');) {
    if (entry.empty() || entry.front() != '/') continue;  // never the current directory
    const std::filesystem::path candidate = std::filesystem::path(entry) / program;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  refuse_launcher("'" + program + "' is not on PATH (install Debian's openmpi-bin, or name the launcher by its path)");
}

// The rule paraplan applies to plugin files: only root or this user may be able to change it.
void require_trusted(const std::filesystem::path& file) {
  for (const std::filesystem::path& path : {file, file.parent_path()}) {
    struct stat status {};
    if (stat(path.c_str(), &status) != 0) refuse_launcher(path.string() + " cannot be read");
    if (status.st_mode & S_IWOTH) refuse_launcher(path.string() + " is writable by everyone");
    if (status.st_uid != 0 && status.st_uid != geteuid())
      refuse_launcher(path.string() + " belongs to uid " + std::to_string(status.st_uid) + ", neither you nor root");
  }
}

// What `program --version` prints (stdout and stderr), given at most 10 s.
std::string version_text(const std::filesystem::path& program) {
  int ends[2];
  if (pipe2(ends, O_CLOEXEC) != 0) refuse_launcher("cannot run " + program.string() + " --version");
  const pid_t child = fork();
  if (child < 0) refuse_launcher("cannot run " + program.string() + " --version");
  if (child == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(ends[1], STDOUT_FILENO);
    dup2(ends[1], STDERR_FILENO);
    const int null_input = open("/dev/null", O_RDONLY);
    if (null_input >= 0) dup2(null_input, STDIN_FILENO);
    execl(program.c_str(), program.c_str(), "--version", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(ends[1]);
  fcntl(ends[0], F_SETFL, O_NONBLOCK);
  std::string text;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  char buffer[4096];
  while (std::chrono::steady_clock::now() < deadline && text.size() < 65536) {
    const ssize_t size = read(ends[0], buffer, sizeof(buffer));
    if (size > 0) {
      text.append(buffer, static_cast<size_t>(size));
      continue;
    }
    if (size == 0) break;
    if (errno != EAGAIN && errno != EINTR) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  close(ends[0]);
  kill(-child, SIGKILL);
  waitpid(child, nullptr, 0);
  return text;
}

// An anonymous in-memory file rank 0 writes its keys into, by a path only this process's user
// can open. It disappears with this process, whatever ends it.
class ResultsChannel {
 public:
  ResultsChannel() {
    descriptor_ = memfd_create("paraplan-mpi-results", MFD_CLOEXEC);
    if (descriptor_ < 0)
      throw paraplan::Error(PP_ERROR_UNSUPPORTED, std::string("cannot create the results channel: ") + std::strerror(errno));
    path_ = "/proc/" + std::to_string(getpid()) + "/fd/" + std::to_string(descriptor_);
  }
  ~ResultsChannel() { close(descriptor_); }
  ResultsChannel(const ResultsChannel&) = delete;
  ResultsChannel& operator=(const ResultsChannel&) = delete;
  const std::string& path() const { return path_; }
  std::string contents() const {
    std::string text;
    char buffer[65536];
    for (off_t at = 0;;) {
      const ssize_t size = pread(descriptor_, buffer, sizeof(buffer), at);
      if (size <= 0) break;
      text.append(buffer, static_cast<size_t>(size));
      at += size;
    }
    return text;
  }

 private:
  int descriptor_ = -1;
  std::string path_;
};

volatile sig_atomic_t job_group = 0;
volatile sig_atomic_t interruption = 0;

void forward_signal(int signal_number) {
  interruption = signal_number;
  if (job_group > 0) kill(-job_group, signal_number);
}

// SIGINT, SIGTERM and SIGHUP go to the job while it runs; the previous handlers come back after.
class SignalForwarding {
 public:
  explicit SignalForwarding(pid_t group) {
    job_group = group;
    interruption = 0;
    struct sigaction action {};
    action.sa_handler = &forward_signal;
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < std::size(kSignals); ++i) sigaction(kSignals[i], &action, &previous_[i]);
  }
  ~SignalForwarding() {
    for (size_t i = 0; i < std::size(kSignals); ++i) sigaction(kSignals[i], &previous_[i], nullptr);
    job_group = 0;
  }

 private:
  static constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction previous_[3] {};
};

// Where Open MPI 4's mpirun keeps its session files: <base>/ompi.<node>.<uid>/pid.<its pid>, the
// base being orte_tmpdir_base, else $TMPDIR, $TEMP, $TMP, else /tmp (orte/util/session_dir.c).
std::filesystem::path launcher_session(pid_t launcher) {
  std::string base = "/tmp";
  for (const char* variable : {"OMPI_MCA_orte_tmpdir_base", "TMPDIR", "TEMP", "TMP"})
    if (const char* value = std::getenv(variable); value && *value) {
      base = value;
      break;
    }
  char node[256] = {};
  gethostname(node, sizeof(node) - 1);
  return std::filesystem::path(base) / ("ompi." + std::string(node) + "." + std::to_string(geteuid())) /
         ("pid." + std::to_string(launcher));
}

// A launcher killed before it could clean up leaves its session directory: remove it (only that
// one, named by the launcher's pid) and the per-user directory above it once that is empty.
void remove_launcher_session(pid_t launcher) {
  const std::filesystem::path session = launcher_session(launcher);
  std::error_code ignored;
  std::filesystem::remove_all(session, ignored);
  std::filesystem::remove(session.parent_path(), ignored);  // fails, as it should, when not empty
}

// Asks the group to end, then makes it; reaps the launcher. mpirun needs about a second to end
// its ranks and remove its session files, several on a loaded machine: it gets 15 s.
void end_group(pid_t group, bool already_asked) {
  if (!already_asked) kill(-group, SIGTERM);
  bool reaped = false;
  for (int i = 0; i < 300 && !reaped; ++i) {
    reaped = waitpid(group, nullptr, WNOHANG) == group;
    if (!reaped) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(-group, SIGKILL);
  if (!reaped) {
    waitpid(group, nullptr, 0);
    remove_launcher_session(group);
  }
}

// The command was interrupted: it ends by the same signal, as the shell expects.
[[noreturn]] void die_by(int signal_number) {
  paraplan::log_error("interrupted (" + std::string(strsignal(signal_number)) + "): the MPI job was ended");
  signal(signal_number, SIG_DFL);
  raise(signal_number);
  _exit(128 + signal_number);
}

}  // namespace

bool launched_by_mpi() {
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"})
    if (std::getenv(variable)) return true;
  return false;
}

void rank_dies_with_launcher() {
  const pid_t launcher = getppid();
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != launcher) _exit(137);  // it is gone already
}

std::string checked_launcher(const std::string& launcher) {
  if (launcher.empty()) refuse_launcher("is empty");
  std::error_code error;
  const std::filesystem::path found = find_program(launcher);
  const std::filesystem::path resolved = std::filesystem::canonical(found, error);
  if (error) refuse_launcher("'" + launcher + "' does not exist (install Debian's openmpi-bin, or set executor.mpi.launcher)");
  if (access(resolved.c_str(), X_OK) != 0) refuse_launcher(resolved.string() + " is not executable");
  require_trusted(resolved);
  const std::string version = version_text(resolved);
  if (version.find("Open MPI") == std::string::npos && version.find("OpenRTE") == std::string::npos)
    refuse_launcher("'" + launcher + "' (" + resolved.string() + ") is not Open MPI's launcher: its --version says '" +
                    version.substr(0, version.find('\n')).substr(0, 80) + "'");
  return resolved.string();
}

nlohmann::json launch_self(const LaunchRequest& request) {
  const std::string launcher = checked_launcher(request.launcher);
  const std::vector<std::string> own = own_arguments();
  std::error_code error;
  const std::string executable = std::filesystem::read_symlink("/proc/self/exe", error).string();
  if (error) throw paraplan::Error(PP_ERROR_UNSUPPORTED, "cannot find this executable (/proc/self/exe)");

  std::vector<std::string> command{launcher, "-np", std::to_string(request.ranks)};
  if (request.ranks > static_cast<int>(std::thread::hardware_concurrency())) command.push_back("--oversubscribe");
  if (geteuid() == 0) command.push_back("--allow-run-as-root");
  for (const std::string& word : words(request.launcher_args)) command.push_back(word);
  command.insert(command.end(), {"-x", kResultsVariable, "-x", "OPENBLAS_NUM_THREADS"});
  command.push_back(executable);
  command.insert(command.end(), own.begin() + 1, own.end());

  ResultsChannel results;
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child < 0) throw paraplan::Error(PP_ERROR_UNSUPPORTED, std::string("cannot start the MPI job: ") + std::strerror(errno));
  if (child == 0) {
    setpgid(0, 0);  // the job's own group, so a timeout or a signal reaches every process of it
    prctl(PR_SET_PDEATHSIG, SIGTERM);  // mpirun ends its ranks on SIGTERM
    if (getppid() != parent) _exit(1);
    setenv(kResultsVariable, results.path().c_str(), 1);
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    std::vector<char*> argv;
    for (const std::string& word : command) argv.push_back(const_cast<char*>(word.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  setpgid(child, child);
  SignalForwarding forwarding(child);

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(request.timeout_s);
  int status = 0;
  while (true) {
    const pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child) break;
    if (done < 0 && errno != EINTR)
      throw paraplan::Error(PP_ERROR_INTERNAL, std::string("lost the MPI job: ") + std::strerror(errno));
    if (interruption) {
      end_group(child, /*already_asked=*/true);
      die_by(interruption);
    }
    if (std::chrono::steady_clock::now() > deadline) {
      end_group(child, /*already_asked=*/false);
      std::ostringstream message;
      message << "the MPI job did not finish within " << request.timeout_s
              << " s (--timeout, executor.mpi.timeout_s) and was terminated";
      throw paraplan::Error(PP_ERROR_INTERNAL, message.str());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // Ranks the launcher left behind (a rank that hung after another failed) go with it.
  kill(-child, SIGKILL);
  if (interruption) die_by(interruption);
  if (WIFSIGNALED(status))
    throw paraplan::Error(PP_ERROR_INTERNAL, std::string("the MPI job was killed by signal ") + strsignal(WTERMSIG(status)));
  const int code = WEXITSTATUS(status);
  if (code == 127) throw paraplan::Error(PP_ERROR_INVALID_ARGUMENT, "executor.mpi.launcher: cannot run " + launcher);
  if (code != 0)
    throw paraplan::Error(PP_ERROR_INTERNAL, "the MPI job failed (" + launcher + " exited with status " +
                                                 std::to_string(code) + "); the failing rank's reason is above");
  nlohmann::json keys = nlohmann::json::parse(results.contents(), nullptr, /*allow_exceptions=*/false);
  if (!keys.is_object()) throw paraplan::Error(PP_ERROR_INTERNAL, "the MPI job finished without reporting (rank 0 wrote no results)");
  return keys;
}

}  // namespace mpi_executor
