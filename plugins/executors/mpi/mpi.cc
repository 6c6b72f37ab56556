// mpi: runs a plan for real on MPI ranks (OpenMPI), one process per GPU of the plan: every rank
// walks its pipeline stage's program (plugins/common/rank_program) with real fp32 GEMMs and
// memory-bound kernels on the CPU and real MPI collectives and point-to-point messages, and
// reports what it measured; `paraplan execute` sets the predictions
// beside it. It can also measure the machine (`paraplan calibrate`, calibration.h).
//
//   paraplan execute recipes/execute/tp2-2ranks.toml --verify             (starts mpirun itself)
//   mpirun -np 2 paraplan execute recipes/execute/pp2-1f1b-2ranks.toml   (your own launcher)
//
// Failure never leaves a job behind: a rank that throws prints its reason and aborts the job
// (MPI_Abort); a rank past `timeout_s` prints so and exits, which ends the job; the process that
// launched the job terminates it past the same timeout (launcher.h).
#include <dlfcn.h>
#include <fcntl.h>
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <thread>

#include "calibration.h"
#include "kernels.h"
#include "launcher.h"
#include "paraplan/sdk.hpp"
#include "plan_job.h"

namespace {

// Ends this rank, and with it the job, if the work outlives the timeout.
class Watchdog {
 public:
  Watchdog(double seconds, int rank) {
    thread_ = std::thread([this, seconds, rank] {
      std::unique_lock<std::mutex> lock(mutex_);
      if (!done_changed_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return done_; })) {
        paraplan::log_error("rank " + std::to_string(rank) + ": still running after " + std::to_string(seconds) +
                            " s (--timeout, executor.mpi.timeout_s): ending the job");
        _exit(124);
      }
    });
  }
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    done_changed_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_changed_;
  bool done_ = false;
  std::thread thread_;
};

// Reports keys (numbers, booleans, text) to the host's sink.
void report(const nlohmann::json& keys, const paraplan::ResultSink& results) {
  for (const auto& [key, value] : keys.items()) {
    if (value.is_boolean())
      results.boolean(key, value.get<bool>());
    else if (value.is_number())
      results.number(key, value.get<double>());
    else if (value.is_string())
      results.text(key, value.get<std::string>());
  }
}

// Bounds of the executor's keys (the host checks them against the schema).
constexpr int64_t kMaxRanks = 1 << 16;
constexpr int64_t kMaxSteps = 100000;
constexpr double kMaxTimeout = 7 * 86400.0;

class MpiExecutor : public paraplan::Executor {
 public:
  static constexpr uint32_t flags = PP_EXECUTOR_WALKS_SCHEDULE;
  static paraplan::PluginInfo info() {
    return {"mpi", "1.0.0",
            "runs the plan on MPI ranks (one process per GPU of the plan): real fp32 GEMMs through OpenBLAS and "
            "real MPI collectives, measured; and measures this machine (paraplan calibrate)",
            {paraplan::ParamSpec::Int("ranks", 0, "processes to start; 0: the plan's GPU count (must match it)")
                 .range(0, kMaxRanks),
             paraplan::ParamSpec::Int("steps", 5, "measured optimizer steps (the report gives their median)")
                 .range(1, kMaxSteps),
             paraplan::ParamSpec::Int("warmup", 1, "steps run before measuring (allocations, MPI connections)")
                 .range(0, kMaxSteps),
             paraplan::ParamSpec::Bool("verify", false,
                                       "fill every buffer with rank-dependent values and check every collective's "
                                       "and message's result"),
             paraplan::ParamSpec::String("trace", "", "write the last measured step as Chrome trace JSON to this file"),
             paraplan::ParamSpec::Float("timeout_s", 600, "end the job (every rank) after this many seconds")
                 .range(0.001, kMaxTimeout),
             paraplan::ParamSpec::String("launcher", "mpirun",
                                         "Open MPI's launcher (checked by its --version), started when paraplan runs "
                                         "outside one"),
             paraplan::ParamSpec::String("launcher_args", "",
                                         "extra launcher arguments, space-separated (\"--hostfile hosts\")"),
             paraplan::ParamSpec::String("fault", "",
                                         "for tests of the executor itself: 'sequence' (verification must fail) "
                                         "or 'stall' (the timeout must end the job)"),
             paraplan::ParamSpec::Bool("calibrate_full", false,
                                       "calibrate: sweep larger sizes and more repetitions (slower, steadier)")}};
  }

  explicit MpiExecutor(const paraplan::Params& params)
      : ranks_(params.int_value("ranks")),
        steps_(params.int_value("steps")),
        warmup_(params.int_value("warmup")),
        verify_(params.bool_value("verify")),
        trace_(params.string_value("trace")),
        timeout_s_(params.float_value("timeout_s")),
        launcher_(params.string_value("launcher")),
        launcher_args_(params.string_value("launcher_args")),
        fault_(params.string_value("fault")),
        calibrate_full_(params.bool_value("calibrate_full")) {
    if (!fault_.empty() && fault_ != "sequence" && fault_ != "stall")
      throw paraplan::InvalidArgument("executor.mpi.fault: expected '', 'sequence' or 'stall', got '" + fault_ + "'");
  }

  void run(const paraplan::PlanView& plan, const pp_hardware_binding_v1& hardware,
           const paraplan::ResultSink& results) override {
    const int64_t gpus = plan.cluster().num_gpus;
    if (ranks_ != 0 && ranks_ != gpus)
      throw paraplan::InvalidArgument("executor.mpi.ranks: the plan runs on " + std::to_string(gpus) + " GPUs, so it needs " +
                                      std::to_string(gpus) + " ranks, not " + std::to_string(ranks_) +
                                      " (use a recipe for " + std::to_string(ranks_) + " GPUs)");
    if (!mpi_executor::launched_by_mpi()) {
      report(mpi_executor::launch_self({static_cast<int>(gpus), launcher_, launcher_args_, timeout_s_}), results);
      return;
    }
    as_rank(results, [&] {
      return mpi_executor::run_plan_job(plan, hardware,
                                        {static_cast<int>(steps_), static_cast<int>(warmup_), verify_, trace_, fault_});
    });
  }

  void calibrate(const paraplan::ResultSink& results) {
    if (ranks_ == 1)
      throw paraplan::InvalidArgument("calibrate needs at least 2 ranks to measure communication (--ranks 2 or more)");
    if (!mpi_executor::launched_by_mpi()) {
      report(mpi_executor::launch_self({static_cast<int>(ranks_ > 0 ? ranks_ : 2), launcher_, launcher_args_, timeout_s_}),
             results);
      return;
    }
    as_rank(results, [&] {
      const mpi_executor::CalibrationOptions options =
          calibrate_full_ ? mpi_executor::thorough_calibration() : mpi_executor::quick_calibration();
      mpi_executor::CalibrationReport report;
      const std::string profile = mpi_executor::calibrate_machine(MPI_COMM_WORLD, options, &report);
      nlohmann::json keys = nlohmann::json::object();
      keys["calibration.profile"] = profile;
      keys["calibration.report"] = mpi_executor::format_calibration_report(report);
      keys["calibration.ranks"] = report.ranks;
      keys["calibration.cores"] = report.cores;
      keys["calibration.seconds"] = report.wall_seconds;
      return keys;
    });
  }

 private:
  // Runs `work` as this process's rank of the job: MPI up, BLAS on one thread, a watchdog; the
  // keys rank 0 returns go to the results file of the process that launched the job, or to
  // `results` when the job has its own launcher. A failure ends the whole job with its reason.
  template <typename Work>
  void as_rank(const paraplan::ResultSink& results, Work&& work) {
    pin_mpi_library();
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) MPI_Init(nullptr, nullptr);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char* results_file = std::getenv(mpi_executor::kResultsVariable);
    if (results_file) mpi_executor::rank_dies_with_launcher();
    // One report per job: rank 0's, or the launching process's.
    if (rank != 0 || results_file) paraplan::withhold_report();
    mpi_executor::prepare_rank_process();
    nlohmann::json keys;
    try {
      Watchdog watchdog(timeout_s_, rank);
      keys = work();
    } catch (const std::exception& failure) {
      paraplan::log_error("rank " + std::to_string(rank) + ": " + failure.what());
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
    MPI_Finalize();
    if (rank != 0) return;
    if (results_file) {
      std::ofstream channel(results_file, std::ios::binary);
      channel << keys.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      if (!channel) paraplan::log_error(std::string("rank 0: cannot write the results to ") + results_file);
      return;
    }
    report(keys, results);
  }

  // Open MPI keeps process-lifetime state (exit handlers, its components, allocations it never
  // frees) in its libraries: they must outlive this plugin, which the host unloads when done.
  static void pin_mpi_library() {
    Dl_info library{};
    if (dladdr(reinterpret_cast<void*>(&MPI_Init), &library) && library.dli_fname)
      dlopen(library.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
  }

  int64_t ranks_, steps_, warmup_;
  bool verify_;
  std::string trace_;
  double timeout_s_;
  std::string launcher_, launcher_args_;
  std::string fault_;
  bool calibrate_full_;
};

}  // namespace

PARAPLAN_PLUGIN(MpiExecutor)
