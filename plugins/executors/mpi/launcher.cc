#include "launcher.h"

#include <signal.h>
#include <stdlib.h>
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

// A file only this user can write, removed when the launch is over.
class ResultsFile {
 public:
  ResultsFile() {
    const char* directory = std::getenv("TMPDIR");
    std::string pattern = std::string(directory && *directory ? directory : "/tmp") + "/paraplan-mpi-XXXXXX";
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    const int descriptor = mkstemp(name.data());
    if (descriptor < 0)
      throw paraplan::Error(PP_ERROR_UNSUPPORTED, "cannot create a results file " + pattern + ": " + std::strerror(errno));
    close(descriptor);
    path_ = name.data();
  }
  ~ResultsFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void terminate_group(pid_t group) {
  kill(-group, SIGTERM);
  for (int i = 0; i < 40; ++i) {  // 2 s to shut down, then no more asking
    if (waitpid(group, nullptr, WNOHANG) == group) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(-group, SIGKILL);
  waitpid(group, nullptr, 0);
}

}  // namespace

bool launched_by_mpi() {
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"})
    if (std::getenv(variable)) return true;
  return false;
}

nlohmann::json launch_self(const LaunchRequest& request) {
  const std::vector<std::string> own = own_arguments();
  std::error_code error;
  const std::string executable = std::filesystem::read_symlink("/proc/self/exe", error).string();
  if (error) throw paraplan::Error(PP_ERROR_UNSUPPORTED, "cannot find this executable (/proc/self/exe)");

  std::vector<std::string> command{request.launcher, "-np", std::to_string(request.ranks)};
  if (request.ranks > static_cast<int>(std::thread::hardware_concurrency())) command.push_back("--oversubscribe");
  if (geteuid() == 0) command.push_back("--allow-run-as-root");
  for (const std::string& word : words(request.launcher_args)) command.push_back(word);
  command.insert(command.end(), {"-x", kResultsVariable, "-x", "OPENBLAS_NUM_THREADS"});
  command.push_back(executable);
  command.insert(command.end(), own.begin() + 1, own.end());

  ResultsFile results;
  const pid_t child = fork();
  if (child < 0) throw paraplan::Error(PP_ERROR_UNSUPPORTED, std::string("cannot start the MPI job: ") + std::strerror(errno));
  if (child == 0) {
    setpgid(0, 0);  // the job's own group, so a timeout can end every process of it
    setenv(kResultsVariable, results.path().c_str(), 1);
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    std::vector<char*> argv;
    for (const std::string& word : command) argv.push_back(const_cast<char*>(word.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "paraplan: cannot run '%s': %s (install Debian's openmpi-bin, or set executor.mpi.launcher)\n",
                 argv[0], std::strerror(errno));
    _exit(127);
  }
  setpgid(child, child);

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(request.timeout_s);
  int status = 0;
  while (true) {
    const pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child) break;
    if (done < 0 && errno != EINTR)
      throw paraplan::Error(PP_ERROR_INTERNAL, std::string("lost the MPI job: ") + std::strerror(errno));
    if (std::chrono::steady_clock::now() > deadline) {
      terminate_group(child);
      std::ostringstream message;
      message << "the MPI job did not finish within " << request.timeout_s
              << " s (--timeout, executor.mpi.timeout_s) and was terminated";
      throw paraplan::Error(PP_ERROR_INTERNAL, message.str());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // Ranks the launcher left behind (a rank that hung after another failed) go with it.
  kill(-child, SIGKILL);
  if (WIFSIGNALED(status))
    throw paraplan::Error(PP_ERROR_INTERNAL, std::string("the MPI job was killed by signal ") + strsignal(WTERMSIG(status)));
  const int code = WEXITSTATUS(status);
  if (code == 127) throw paraplan::Error(PP_ERROR_UNSUPPORTED, "cannot run the MPI launcher '" + request.launcher + "'");
  if (code != 0)
    throw paraplan::Error(PP_ERROR_INTERNAL, "the MPI job failed (" + request.launcher + " exited with status " +
                                                 std::to_string(code) + "); the failing rank's reason is above");
  std::ifstream in(results.path());
  nlohmann::json keys = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!keys.is_object()) throw paraplan::Error(PP_ERROR_INTERNAL, "the MPI job finished without reporting (rank 0 wrote no results)");
  return keys;
}

}  // namespace mpi_executor
