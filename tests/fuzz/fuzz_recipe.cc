// fuzz_recipe: a recipe with --set overrides, read, composed with the bundled plugins and
// evaluated by the analytic executor. Lines "#--set KEY=VALUE" (TOML comments, so every shipped
// recipe is a seed as it is) become overrides, applied before the recipe is read.
#include <sstream>

#include "fuzz_support.h"
#include "host/plan/composer.h"
#include "host/plan/execution.h"
#include "host/plan/hardware_binding.h"
#include "host/recipe/recipe_reader.h"

namespace {

const paraplan::host::PluginCatalog& catalog() {
  static const paraplan::host::PluginCatalog bundled = [] {
    paraplan::host::ScanOptions options;
    options.use_cache = false;
    return paraplan::host::PluginCatalog::scan(
        {{PARAPLAN_BUNDLED_PLUGIN_DIR, paraplan::host::PluginOrigin::kBundled}}, options);
  }();
  return bundled;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  catalog();  // scanned (in children) once, before the first input
  for (const auto& record : catalog().records()) catalog().find(record.name);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace paraplan::host;
  const std::string text(reinterpret_cast<const char*>(data), size);
  RecipeReaderOptions options;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("#--set ", 0) == 0) options.overrides.push_back(line.substr(7));
  paraplan::fuzz::refuse_cleanly([&] {
    std::unique_ptr<Recipe> recipe = parse_recipe(text, "fuzz.toml", options);
    std::unique_ptr<HardwareBinding> hardware = open_hardware(*recipe, catalog());
    ComposedPlan composed = compose_plan(*recipe, catalog(), gpus_per_node(*recipe, *hardware), /*wants_schedule=*/false);
    paraplan::fuzz::require_finite(run_executor("analytic", *recipe, catalog(), composed, *hardware));
  });
  return 0;
}
