// The `paraplan` Python module: the commands of the paraplan executable, in-process, returning
// their --json reports as dicts and lists. Each call runs the command as the CLI would (same
// plugins, recipes by file or shipped name, same validation), so a notebook and a shell agree
// figure for figure; a failure raises paraplan.Error (InputError, PlanError, UsageError) with the
// CLI's one-line message and exit code. Recipes may also be dicts, written as TOML for the reader.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <dlfcn.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "host/cli/command.h"
#include "host/core/errors.h"
#include "host/core/temporary_directory.h"
#include "host/plugin/plugin_search_path.h"
#include "host/report/report_output.h"

namespace py = pybind11;

namespace paraplan::python {
namespace {

using Arguments = std::vector<std::string>;

// Python exception classes, created at import.
PyObject* error_class = nullptr;
PyObject* input_error_class = nullptr;
PyObject* plan_error_class = nullptr;
PyObject* usage_error_class = nullptr;

// The module's own install (or build) tree: the nearest directory above this library that holds
// lib/paraplan/plugins, so the module finds the plugins, presets and recipes paraplan installed
// beside it, whichever Python loads it.
std::filesystem::path find_prefix() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&find_prefix), &info) || !info.dli_fname) return {};
  std::error_code error;
  std::filesystem::path directory = std::filesystem::canonical(info.dli_fname, error).parent_path();
  for (int depth = 0; depth < 5 && !directory.empty(); ++depth) {
    if (std::filesystem::is_directory(directory / "lib" / "paraplan" / "plugins", error)) return directory;
    if (directory == directory.parent_path()) break;
    directory = directory.parent_path();
  }
  return {};
}

// TOML for a recipe given as a dict: tables, arrays of tables ([[strategy]]), strings, numbers, booleans.
toml::table toml_table(const py::dict& dict, const std::string& key);
toml::array toml_array(const py::handle& list, const std::string& key);

// Hands `emit` the TOML value of `value` (for the message, its key is `key`).
template <typename Emit>
void toml_value(const py::handle& value, const std::string& key, Emit&& emit) {
  // bool before int: Python's True is an int too.
  if (py::isinstance<py::bool_>(value)) return emit(value.cast<bool>());
  if (py::isinstance<py::int_>(value)) return emit(value.cast<int64_t>());
  if (py::isinstance<py::float_>(value)) return emit(value.cast<double>());
  if (py::isinstance<py::str>(value)) return emit(value.cast<std::string>());
  if (py::isinstance<py::dict>(value)) return emit(toml_table(value.cast<py::dict>(), key));
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) return emit(toml_array(value, key));
  throw py::type_error("recipe: '" + key + "' is a " + py::str(value.get_type().attr("__name__")).cast<std::string>() +
                       "; a recipe holds dicts, lists, strings, numbers and booleans");
}

toml::array toml_array(const py::handle& list, const std::string& key) {
  toml::array array;
  for (const py::handle& item : list)
    toml_value(item, key, [&](auto&& element) { array.push_back(std::forward<decltype(element)>(element)); });
  return array;
}

toml::table toml_table(const py::dict& dict, const std::string& key) {
  toml::table table;
  for (const auto& [name, value] : dict) {
    if (!py::isinstance<py::str>(name)) throw py::type_error("recipe: the keys of '" + key + "' must be strings");
    const std::string name_text = name.cast<std::string>();
    toml_value(value, key.empty() ? name_text : key + "." + name_text,
               [&](auto&& element) { table.insert(name_text, std::forward<decltype(element)>(element)); });
  }
  return table;
}

// A recipe argument as the command line takes it: a file or shipped name as given, a dict written
// to a file of its own (in `scratch`) first.
std::string recipe_argument(const py::object& recipe, const host::TemporaryDirectory& scratch) {
  if (py::isinstance<py::str>(recipe)) return recipe.cast<std::string>();
  if (py::hasattr(recipe, "__fspath__")) return py::str(recipe.attr("__fspath__")()).cast<std::string>();
  if (!py::isinstance<py::dict>(recipe)) throw py::type_error("recipe: a file name, a shipped recipe's name or a dict");
  if (scratch.path().empty()) throw py::value_error("recipe: no temporary directory to write the dict's TOML into");
  const std::filesystem::path file = scratch.path() / "recipe.toml";
  std::ofstream(file) << toml_table(recipe.cast<py::dict>(), "") << "\n";
  return file.string();
}

// Runs one command line with its report captured; the report's JSON as Python objects. A command
// that printed a report and exited 1 (the plan does not fit, a sweep value without a plan) returns
// the report: the dict says so, and a notebook wants the figures. Anything else raises.
py::object run(const Arguments& arguments, const std::string& dict_file = "") {
  std::ostringstream report, errors;
  int code = 0;
  {
    py::gil_scoped_release unlocked;  // searches run for seconds on every core
    host::set_report_stream(&report);
    code = host::run_command_line(arguments, errors);
    host::set_report_stream(nullptr);
  }
  if (code == host::kExitOk || (code == host::kExitPlanInvalid && !report.str().empty()))
    return py::module_::import("json").attr("loads")(report.str());
  std::string message = errors.str();
  for (const char* prefix : {"paraplan: error: ", "paraplan: internal error: "})
    if (message.rfind(prefix, 0) == 0) message = message.substr(std::string(prefix).size());
  while (!message.empty() && message.back() == '\n') message.pop_back();
  if (!dict_file.empty())
    for (size_t at = message.find(dict_file); at != std::string::npos; at = message.find(dict_file))
      message.replace(at, dict_file.size(), "<recipe dict>");
  PyObject* kind = code == host::kExitInput ? input_error_class
                   : code == host::kExitPlanInvalid ? plan_error_class
                   : code == host::kExitUsage ? usage_error_class
                                              : error_class;
  py::object exception = py::reinterpret_borrow<py::object>(kind)(message);
  exception.attr("exit_code") = code;
  PyErr_SetObject(kind, exception.ptr());
  throw py::error_already_set();
}

// The options every recipe command shares: --set KEY=VALUE (each of `set`, a dict or a list of
// "KEY=VALUE"), --plugin-path, --json and -q (warnings go to stderr as in the CLI, -q keeps them).
void add_common(Arguments& arguments, const py::object& set, const std::vector<std::string>& plugin_path) {
  if (!set.is_none()) {
    if (py::isinstance<py::dict>(set)) {
      for (const auto& [key, value] : set.cast<py::dict>()) {
        std::string text = py::isinstance<py::str>(value) ? "\"" + value.cast<std::string>() + "\""
                           : py::isinstance<py::bool_>(value) ? (value.cast<bool>() ? "true" : "false")
                                                              : py::str(value).cast<std::string>();
        arguments.push_back("--set=" + key.cast<std::string>() + "=" + text);
      }
    } else {
      for (const py::handle& item : set) arguments.push_back("--set=" + item.cast<std::string>());
    }
  }
  for (const std::string& path : plugin_path) arguments.push_back("--plugin-path=" + path);
  arguments.push_back("--json");
}

py::object plan_command(const char* command, const py::object& recipe, const py::object& set,
                        const std::vector<std::string>& plugin_path, const Arguments& extra) {
  host::TemporaryDirectory scratch("python_recipe");
  const std::string file = recipe_argument(recipe, scratch);
  Arguments arguments = {command, file};
  arguments.insert(arguments.end(), extra.begin(), extra.end());
  add_common(arguments, set, plugin_path);
  return run(arguments, py::isinstance<py::dict>(recipe) ? file : "");
}

}  // namespace
}  // namespace paraplan::python

PYBIND11_MODULE(paraplan, module) {
  using namespace paraplan::python;
  namespace host = paraplan::host;
  module.doc() =
      "paraplan: plan, evaluate, simulate, search and validate parallel training of large language models.\n\n"
      "Each function runs the paraplan command of the same name in this process and returns its --json\n"
      "report as dicts and lists (docs/python.md). A recipe is a TOML file, a shipped recipe's name\n"
      "(paraplan.recipes()) or a dict of the same tables. Failures raise paraplan.Error (InputError,\n"
      "PlanError, UsageError) with the command's one-line message and its exit_code.";
  module.attr("__version__") = PARAPLAN_VERSION;
  if (const std::filesystem::path prefix = find_prefix(); !prefix.empty()) host::set_installation_prefix(prefix);

  error_class = PyErr_NewException("paraplan.Error", PyExc_RuntimeError, nullptr);
  input_error_class = PyErr_NewException("paraplan.InputError", error_class, nullptr);
  plan_error_class = PyErr_NewException("paraplan.PlanError", error_class, nullptr);
  usage_error_class = PyErr_NewException("paraplan.UsageError", error_class, nullptr);
  module.attr("Error") = py::handle(error_class);
  module.attr("InputError") = py::handle(input_error_class);
  module.attr("PlanError") = py::handle(plan_error_class);
  module.attr("UsageError") = py::handle(usage_error_class);
  using Paths = std::vector<std::string>;

  module.def(
      "evaluate",
      [](const py::object& recipe, const py::object& set, const std::optional<std::string>& executor,
         const std::optional<std::string>& sweep, const std::optional<std::string>& html, const Paths& plugin_path) {
        Arguments extra;
        if (executor) extra.push_back("--executor=" + *executor);
        if (sweep) extra.push_back("--sweep=" + *sweep);
        if (html) extra.push_back("--html=" + *html);
        return plan_command("evaluate", recipe, set, plugin_path, extra);
      },
      py::arg("recipe"), py::kw_only(), py::arg("set") = py::none(), py::arg("executor") = py::none(),
      py::arg("sweep") = py::none(), py::arg("html") = py::none(), py::arg("plugin_path") = Paths{},
      "The recipe's plan evaluated by the cost model: memory, communication, time, throughput, MFU\n"
      "(paraplan evaluate). set: recipe keys to change, {'cluster.num_gpus': 512}. sweep:\n"
      "'cluster.num_gpus=64,128,256' evaluates once per value. html: also write the HTML report.");
  module.def(
      "simulate",
      [](const py::object& recipe, const py::object& set, const std::optional<std::string>& ranks,
         const std::optional<std::string>& trace, const std::optional<std::string>& html, const Paths& plugin_path) {
        Arguments extra;
        if (ranks) extra.push_back("--ranks=" + *ranks);
        if (trace) extra.push_back("--trace=" + *trace);
        if (html) extra.push_back("--html=" + *html);
        return plan_command("simulate", recipe, set, plugin_path, extra);
      },
      py::arg("recipe"), py::kw_only(), py::arg("set") = py::none(), py::arg("ranks") = py::none(),
      py::arg("trace") = py::none(), py::arg("html") = py::none(), py::arg("plugin_path") = Paths{},
      "One step simulated event by event (paraplan simulate); trace: write a Chrome trace.");
  module.def(
      "search",
      [](const py::object& recipe, const py::object& set, int64_t top, const std::string& objective, int64_t threads,
         std::optional<double> headroom, bool brief, const std::optional<std::string>& html, const Paths& plugin_path) {
        Arguments extra = {"--top=" + std::to_string(top), "--objective=" + objective, "--threads=" + std::to_string(threads)};
        if (headroom) extra.push_back("--headroom=" + std::to_string(*headroom));
        if (brief) extra.push_back("--brief");
        if (html) extra.push_back("--html=" + *html);
        return plan_command("search", recipe, set, plugin_path, extra);
      },
      py::arg("recipe"), py::kw_only(), py::arg("set") = py::none(), py::arg("top") = 10,
      py::arg("objective") = "throughput", py::arg("threads") = 0, py::arg("headroom") = py::none(),
      py::arg("brief") = false, py::arg("html") = py::none(), py::arg("plugin_path") = Paths{},
      "Every composition of the loaded strategies, ranked (paraplan search).");
  module.def(
      "validate",
      [](const py::object& files, int64_t threads, const std::optional<std::string>& html, const Paths& plugin_path) {
        Arguments arguments = {"validate"};
        if (py::isinstance<py::str>(files)) arguments.push_back(files.cast<std::string>());
        else
          for (const py::handle& file : files) arguments.push_back(py::str(file).cast<std::string>());
        arguments.push_back("--threads=" + std::to_string(threads));
        if (html) arguments.push_back("--html=" + *html);
        add_common(arguments, py::none(), plugin_path);
        return run(arguments);
      },
      py::arg("files"), py::kw_only(), py::arg("threads") = 0, py::arg("html") = py::none(),
      py::arg("plugin_path") = Paths{},
      "Measured runs (CSV files or shipped data sets: 'published') predicted, with the error (paraplan validate).");
  module.def(
      "plugins",
      [](const Paths& plugin_path) {
        Arguments arguments = {"plugins", "list"};
        add_common(arguments, py::none(), plugin_path);
        return run(arguments);
      },
      py::kw_only(), py::arg("plugin_path") = Paths{}, "Every plugin found, with its kind, version and ABI (paraplan plugins list).");
  module.def(
      "recipes",
      [](bool data) {
        Arguments arguments = {"recipes", "--json"};
        if (data) arguments.push_back("--data");
        return run(arguments);
      },
      py::kw_only(), py::arg("data") = false, "The shipped recipes, or with data=True the measured-run data sets.");
  module.def(
      "hardware",
      [](const std::string& name) { return run({"hardware", "show", name, "--json"}); }, py::arg("name"),
      "A hardware profile's figures and its TOML (paraplan hardware show).");
}
