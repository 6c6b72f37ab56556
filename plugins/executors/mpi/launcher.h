// launcher.h: how the mpi executor gets its ranks, and how the job never outlives its command.
//
// Under a launcher (mpirun, srun with PMIx), every process runs the same paraplan command and the
// executor runs its rank. Started directly, the executor starts that launcher itself, on this
// very command line: `mpirun -np N [--oversubscribe] [--allow-run-as-root] <launcher_args>
// /proc/self/exe <the same arguments>`, after checking that the launcher is Open MPI's by what it
// is (`--version`, and a file only root or this user can change), not by its name.
//
// Rank 0 sends its report keys (JSON) back through PARAPLAN_MPI_RESULTS, the path of an
// anonymous in-memory file this process holds open (/proc/<pid>/fd/<n>): nothing is ever written
// to disk, so nothing is left behind however the command ends (rank 0 therefore runs on this
// machine, as mpirun places it). The job runs in its own process group, which
//   - SIGINT, SIGTERM and SIGHUP sent to this process are forwarded to (the command then ends by
//     the same signal, as interrupted programs do);
//   - is terminated past the timeout;
//   - dies with this process: the launcher gets SIGTERM when its parent dies (PR_SET_PDEATHSIG),
//     and each rank of a self-launched job SIGKILL when the launcher dies (rank_dies_with_launcher).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace mpi_executor {

// The environment variable that tells a rank of a self-launched job where rank 0's keys go.
inline constexpr const char* kResultsVariable = "PARAPLAN_MPI_RESULTS";

// True when this process is a rank of an MPI job (its launcher set the rank's environment).
bool launched_by_mpi();

// In a rank of a self-launched job: end with the launcher (which ends with the command).
void rank_dies_with_launcher();

struct LaunchRequest {
  int ranks = 2;
  std::string launcher = "mpirun";
  std::string launcher_args;  // split on spaces: "--hostfile hosts" ...
  double timeout_s = 600;
};

// The launcher's absolute path once it is known to be Open MPI's; throws paraplan::Error
// (PP_ERROR_INVALID_ARGUMENT, an input error) naming what is wrong with it.
std::string checked_launcher(const std::string& launcher);

// Runs this process's command line as an MPI job of `ranks` processes and returns the keys
// rank 0 reported. Throws paraplan::Error with the reason when the job fails or times out.
nlohmann::json launch_self(const LaunchRequest& request);

}  // namespace mpi_executor
