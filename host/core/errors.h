// paraplan/host/core/errors.h: the error types the host reports, each with its exit code.
//
// Exit codes are part of the CLI contract (docs/recipes.md, `paraplan --help`):
//   0 success; 1 the plan is invalid or does not fit; 2 usage error;
//   3 input error (file, TOML, schema, plugin); 4 internal error (a bug in paraplan).
// Messages are one line and start with where the problem is: "recipe.toml:7:1: training.micro_batch: ...".
#pragma once

#include <stdexcept>
#include <string>

namespace paraplan::host {

enum ExitCode : int { kExitOk = 0, kExitPlanInvalid = 1, kExitUsage = 2, kExitInput = 3, kExitInternal = 4 };

class HostError : public std::runtime_error {
 public:
  HostError(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ExitCode exit_code() const { return code_; }

 private:
  ExitCode code_;
};

// A file, TOML, schema or plugin problem: the user must fix an input.
class InputError : public HostError {
 public:
  explicit InputError(const std::string& message) : HostError(kExitInput, message) {}
};

// The inputs are well-formed but describe a plan that cannot run (constraint, does not fit).
class PlanError : public HostError {
 public:
  explicit PlanError(const std::string& message) : HostError(kExitPlanInvalid, message) {}
};

class UsageError : public HostError {
 public:
  explicit UsageError(const std::string& message) : HostError(kExitUsage, message) {}
};

}  // namespace paraplan::host
