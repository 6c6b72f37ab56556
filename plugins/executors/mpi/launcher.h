// launcher.h: how the mpi executor gets its ranks.
//
// Under a launcher (mpirun, srun with PMIx), every process runs the same paraplan command and the
// executor runs its rank. Started directly, the executor starts that launcher itself, on this
// very command line: `mpirun -np N [--oversubscribe] [--allow-run-as-root] <launcher_args>
// /proc/self/exe <the same arguments>`, with PARAPLAN_MPI_RESULTS naming a file where rank 0
// writes its report keys (JSON), which this process then reports as its own. The job runs in
// its own process group; past the timeout the whole group is terminated.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace mpi_executor {

// The environment variable that tells a rank its report goes to a file, not to stdout.
inline constexpr const char* kResultsVariable = "PARAPLAN_MPI_RESULTS";

// True when this process is a rank of an MPI job (its launcher set the rank's environment).
bool launched_by_mpi();

struct LaunchRequest {
  int ranks = 2;
  std::string launcher = "mpirun";
  std::string launcher_args;  // split on spaces: "--hostfile hosts" ...
  double timeout_s = 600;
};

// Runs this process's command line as an MPI job of `ranks` processes and returns the keys
// rank 0 reported. Throws paraplan::Error with the reason when the job fails or times out.
nlohmann::json launch_self(const LaunchRequest& request);

}  // namespace mpi_executor
