// tests/unit/test_support.h: shared helpers for the unit tests.
#pragma once

#include <gtest/gtest.h>

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "host/cli/command.h"

#include "host/core/errors.h"
#include "host/plugin/plugin_catalog.h"
#include "test_plugin_paths.h"

namespace paraplan::test {

// "1.5": an ABI version as the host writes it in messages.
inline std::string abi_text(uint32_t major, uint32_t minor) { return std::to_string(major) + "." + std::to_string(minor); }
inline const std::string kHostAbi = abi_text(PP_ABI_MAJOR, PP_ABI_MINOR);

// Runs `body`, expecting a host error of type Error whose message contains every fragment.
template <typename Error, typename Body>
void expect_error(Body&& body, const std::vector<std::string>& fragments) {
  try {
    body();
    ADD_FAILURE() << "expected an error containing '" << (fragments.empty() ? "" : fragments[0]) << "'";
  } catch (const Error& failure) {
    std::string message = failure.what();
    for (const std::string& fragment : fragments)
      EXPECT_NE(message.find(fragment), std::string::npos) << "message: " << message << "\nmissing: " << fragment;
  }
}

// The bundled plugins (fsdp, analytic, the hardware profiles) plus the good test plugins.
inline const host::PluginCatalog& bundled_catalog() {
  static const host::PluginCatalog catalog =
      host::PluginCatalog::scan({PARAPLAN_BUNDLED_PLUGIN_DIR, PARAPLAN_TEST_PLUGINS_GOOD_DIR});
  return catalog;
}

}  // namespace paraplan::test

#include "host/plan/composer.h"
#include "host/plan/execution.h"
#include "host/plan/hardware_binding.h"
#include "host/recipe/recipe_reader.h"

namespace paraplan::test {

// A recipe string through the whole pipeline: read, open hardware, compose, run an executor.
struct Evaluated {
  std::unique_ptr<host::Recipe> recipe;
  std::unique_ptr<host::HardwareBinding> hardware;
  host::ComposedPlan composed;
  host::ResultTree results;

  double number(const std::string& key) const {
    const host::ResultValue* value = results.find(key);
    if (!value || !std::holds_alternative<double>(*value)) throw std::runtime_error("no number " + key);
    return std::get<double>(*value);
  }
};

// A read recipe through the rest of the pipeline: open hardware, compose, run an executor. The
// schedule's steps are listed when the executor walks them, as the CLI does, or when a test
// reads them from the plan (`list_steps`).
inline Evaluated evaluate(std::unique_ptr<host::Recipe> recipe, const std::string& executor, bool list_steps = false) {
  Evaluated evaluated;
  evaluated.recipe = std::move(recipe);
  evaluated.hardware = host::open_hardware(*evaluated.recipe, bundled_catalog());
  const bool walks =
      bundled_catalog().require(executor, PP_KIND_EXECUTOR).metadata->executor->flags & PP_EXECUTOR_WALKS_SCHEDULE;
  evaluated.composed =
      host::compose_plan(*evaluated.recipe, bundled_catalog(),
                         host::gpus_per_node(*evaluated.recipe, *evaluated.hardware), walks || list_steps);
  evaluated.results =
      host::run_executor(executor, *evaluated.recipe, bundled_catalog(), evaluated.composed, *evaluated.hardware);
  return evaluated;
}

inline Evaluated evaluate_recipe(const std::string& text, const std::string& executor = "analytic",
                                 bool list_steps = false) {
  return evaluate(host::parse_recipe(text, "recipe.toml"), executor, list_steps);
}

// A recipe file with `--set KEY=VALUE` overrides.
inline Evaluated evaluate_file(const std::string& file, const std::string& executor,
                               const std::vector<std::string>& overrides = {}) {
  host::RecipeReaderOptions options;
  options.overrides = overrides;
  return evaluate(host::read_recipe(file, options), executor);
}

// A whole command line run in-process with the bundled plugins: its exit code, stdout and stderr.
struct CommandRun {
  int exit_code;
  std::string out;
  std::string err;
};

inline CommandRun run_command(std::vector<std::string> arguments) {
  arguments.push_back("--plugin-path=" PARAPLAN_BUNDLED_PLUGIN_DIR);
  std::ostringstream out, err;
  std::streambuf* saved = std::cout.rdbuf(out.rdbuf());
  std::streambuf* saved_errors = std::cerr.rdbuf(err.rdbuf());  // warnings a command prints itself
  int code = host::run_command_line(arguments, err);
  std::cout.rdbuf(saved);
  std::cerr.rdbuf(saved_errors);
  return {code, out.str(), err.str()};
}

}  // namespace paraplan::test
