#include "host/cli/plugin_check.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <sstream>

#include "host/core/errors.h"
#include "host/core/isolated_call.h"
#include "host/core/text_sanitizer.h"
#include "host/export/exporting.h"
#include "host/plan/composer.h"
#include "host/plan/execution.h"
#include "host/plan/hardware_binding.h"
#include "host/plugin/abi_history.h"
#include "host/plugin/host_services.h"
#include "host/plugin/plugin_instance.h"
#include "host/recipe/recipe_reader.h"

namespace paraplan::host {
namespace {

// Writes one stage's outcome to the parent as a JSON line the moment it is known.
class StageReporter {
 public:
  explicit StageReporter(int descriptor) : descriptor_(descriptor) {}
  void begin(const std::string& stage) { write({{"stage", stage}, {"status", "started"}}); }
  void end(const std::string& stage, const std::string& status, const std::string& detail) {
    write({{"stage", stage}, {"status", status}, {"detail", valid_utf8(detail)}});
  }
  void identify(const LoadedPlugin& plugin) {
    write({{"plugin", plugin.name()}, {"kind", kind_name(plugin.kind())}});
  }
  // Runs one stage: its outcome is ok, refused (a PlanError: the small plan does not suit the
  // plugin), or failed (any other error). Returns whether later stages may run.
  template <typename Body>
  bool stage(const std::string& name, Body&& body) {
    begin(name);
    try {
      const std::string detail = body();
      end(name, "ok", detail);
      return true;
    } catch (const PlanError& refusal) {
      end(name, "refused", refusal.what());
    } catch (const std::exception& failure) {
      end(name, "failed", failure.what());
    } catch (...) {
      end(name, "failed", "an unknown exception");
    }
    return false;
  }

 private:
  void write(const nlohmann::json& line) { write_all(descriptor_, line.dump() + "\n"); }
  int descriptor_;
};

std::string small_recipe(const std::string& hardware, const std::string& strategies) {
  return "[model]\nlayers = 4\nhidden = 1024\nheads = 8\nkv_heads = 8\nffn_hidden = 4096\nvocab = 32000\n"
         "seq_len = 2048\n[training]\nglobal_batch = 16\nmicro_batch = 1\n[cluster]\nhardware = \"" + hardware +
         "\"\nnum_gpus = 8\n" + strategies;
}

// A bundled hardware profile to run plans on: the first compiled one (not the file reader).
std::string some_hardware(const PluginCatalog& catalog, const std::string& except) {
  for (const std::string& name : catalog.names_of_kind(PP_KIND_HARDWARE))
    if (name != kTomlHardwarePlugin && name != except) return name;
  throw InputError("no hardware plugin to run the small plan on (is the bundled plugin directory on the path?)");
}

// The degree a strategy is checked at: 2 when its search space allows it (so it has work to
// do), else 1; none for one that takes the remaining GPUs.
std::string strategy_entry(const LoadedPlugin& plugin) {
  const pp_strategy_v1& table = *plugin.metadata->strategy;
  std::string entry = "[[strategy]]\nname = \"" + plugin.name() + "\"\n";
  if (table.flags & PP_STRATEGY_TAKES_REMAINDER) return entry;
  int64_t degree = 1;
  if (holds_fields_of(plugin.abi_minor(), table.struct_size, 1, &AbiMinorSizes::strategy) && table.search_case_count > 0 &&
      table.search_cases) {
    const pp_search_case& first = table.search_cases[0];
    if (first.min_degree <= 2 && (first.max_degree == 0 || first.max_degree >= 2)) degree = 2;
  }
  return entry + "degree = " + std::to_string(degree) + "\n";
}

// Every number of a report is finite: a plugin's figure that is not is a failure.
std::string finite_report(const ResultTree& results) {
  size_t numbers = 0;
  for (const auto& [key, value] : results.entries())
    if (const double* number = std::get_if<double>(&value)) {
      if (!std::isfinite(*number)) throw InputError("the report's " + key + " is not a finite number");
      ++numbers;
    }
  if (!results.warnings().empty()) throw InputError(results.warnings().front());
  return std::to_string(numbers) + " figures, all finite";
}

struct SmallPlan {
  std::unique_ptr<Recipe> recipe;
  std::unique_ptr<HardwareBinding> hardware;
  ComposedPlan composed;
};

SmallPlan compose_small(const PluginCatalog& catalog, const std::string& hardware, const std::string& strategies) {
  SmallPlan plan;
  plan.recipe = parse_recipe(small_recipe(hardware, strategies), "plugins-check.toml");
  plan.hardware = open_hardware(*plan.recipe, catalog);
  plan.composed = compose_plan(*plan.recipe, catalog, gpus_per_node(*plan.recipe, *plan.hardware));
  return plan;
}

void run_stages(const std::filesystem::path& file, PluginCatalog catalog, StageReporter& report) {
  const LoadedPlugin* loaded = nullptr;
  LoadedPlugin plugin;
  if (!report.stage("load", [&] {
        plugin = load_plugin_library(file);
        attach_host_services(plugin);
        return "plugin '" + plugin.name() + "', " + kind_name(plugin.kind()) + ", ABI " +
               std::to_string(plugin.metadata->abi_major) + "." + std::to_string(plugin.abi_minor());
      }))
    return;
  report.identify(plugin);
  catalog.add_loaded(plugin);
  loaded = catalog.find(plugin.name());
  if (!report.stage("create", [&] {
        PluginInstance instance(*loaded, ParamValues::bind(*loaded->metadata, nullptr, plugin.name(), file.string()),
                                "plugin '" + plugin.name() + "'");
        return std::string("with default parameters");
      }))
    return;
  const std::string name = plugin.name();
  switch (plugin.kind()) {
    case PP_KIND_STRATEGY: {
      SmallPlan plan;
      if (!report.stage("apply", [&] {
            plan = compose_small(catalog, some_hardware(catalog, ""), strategy_entry(*loaded));
            return std::to_string(plan.composed.plan->op_list().size()) + " ops, " +
                   std::to_string(plan.composed.plan->axes().size()) + " mesh axes";
          }))
        return;
      report.stage("evaluate", [&] {
        return finite_report(run_executor("analytic", *plan.recipe, catalog, plan.composed, *plan.hardware));
      });
      return;
    }
    case PP_KIND_HARDWARE: {
      std::unique_ptr<Recipe> recipe;
      std::unique_ptr<HardwareBinding> binding;
      if (!report.stage("describe", [&] {
            recipe = parse_recipe(small_recipe(name, ""), "plugins-check.toml");
            binding = open_hardware(*recipe, catalog);
            return "profile '" + std::string(binding->profile().name) + "', within physical bounds";
          }))
        return;
      if (!report.stage("cost functions", [&] {
            const pp_hardware_binding_v1 view = binding->binding();
            std::string called;
            ErrorBuffer buffer;
            double seconds = 0;
            if (view.functions->gemm_time) {
              if (view.functions->gemm_time(view.instance, 4096, 4096, 4096, PP_DTYPE_BF16, &seconds, &buffer.error) != PP_OK)
                throw InputError(std::string("gemm_time: ") + one_line(buffer.text));
              called += "gemm_time";
            }
            if (view.functions->collective_time) {
              if (view.functions->collective_time(view.instance, PP_COLLECTIVE_ALL_REDUCE, 1 << 26, 8, 1, &seconds,
                                                  &buffer.error) != PP_OK)
                throw InputError(std::string("collective_time: ") + one_line(buffer.text));
              called += called.empty() ? "collective_time" : " and collective_time";
            }
            return called.empty() ? std::string("none (the default model)") : called + ": finite times";
          }))
        return;
      report.stage("evaluate", [&] {
        SmallPlan plan = compose_small(catalog, name, "");
        return finite_report(run_executor("analytic", *plan.recipe, catalog, plan.composed, *plan.hardware));
      });
      return;
    }
    case PP_KIND_EXECUTOR: {
      SmallPlan plan;
      if (!report.stage("compose", [&] {
            plan = compose_small(catalog, some_hardware(catalog, ""), "");
            return std::string("a data-parallel plan with the bundled strategies");
          }))
        return;
      report.stage("run", [&] { return finite_report(run_executor(name, *plan.recipe, catalog, plan.composed, *plan.hardware)); });
      return;
    }
    case PP_KIND_EXPORTER: {
      SmallPlan plan;
      if (!report.stage("compose", [&] {
            plan = compose_small(catalog, some_hardware(catalog, ""), "");
            return std::string("a data-parallel plan with the bundled strategies");
          }))
        return;
      report.stage("export", [&] {
        const ExportResult result = run_exporter(name, *plan.recipe, catalog, plan.composed, *plan.hardware);
        return std::to_string(result.files.size()) + " files, " + std::to_string(result.unexpressed.size()) +
               " things it cannot express";
      });
      return;
    }
  }
}

}  // namespace

bool PluginCheck::passed() const {
  if (stages.empty()) return false;
  for (const CheckStage& stage : stages)
    if (stage.status == "failed") return false;
  return true;
}

PluginCheck check_plugin_file(const std::filesystem::path& file, const PluginCatalog& catalog, double timeout_s) {
  PluginCheck check;
  check.file = file;
  const IsolatedOutcome outcome = run_isolated(
      [&](int result) {
        StageReporter report(result);
        run_stages(file, catalog, report);
      },
      timeout_s);
  std::string open_stage;
  std::istringstream lines(outcome.result);
  for (std::string line; std::getline(lines, line);) {
    const nlohmann::json entry = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!entry.is_object()) continue;
    if (entry.contains("plugin")) {
      check.plugin = entry.value("plugin", "");
      check.kind = entry.value("kind", "");
      continue;
    }
    const std::string stage = entry.value("stage", ""), status = entry.value("status", "");
    if (status == "started") {
      open_stage = stage;
      continue;
    }
    check.stages.push_back({stage, status, one_line(entry.value("detail", ""))});
    open_stage.clear();
  }
  const bool ended_well = outcome.exited_cleanly();
  if (!ended_well || !open_stage.empty())
    check.stages.push_back({open_stage.empty() ? "exit" : open_stage, "failed",
                            "the child process " + one_line(outcome.describe(timeout_s), 300)});
  if (outcome.out_bytes > 0)
    check.stages.push_back({"stdout", "failed",
                            "wrote " + std::to_string(outcome.out_bytes) + " bytes to stdout (\"" + one_line(outcome.out, 60) +
                                "\"); stdout is the report's: log through the host (paraplan/host.h)"});
  return check;
}

}  // namespace paraplan::host
