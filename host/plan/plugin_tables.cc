#include "host/plan/plugin_tables.h"

#include <algorithm>
#include <vector>

#include "host/core/edit_distance.h"
#include "host/core/errors.h"
#include "host/recipe/param_values.h"
#include "host/recipe/source_location.h"

namespace paraplan::host {

const toml::table* checked_plugin_tables(const Recipe& recipe, const toml::table* section, const std::string& section_name,
                                         const PluginCatalog& catalog, pp_plugin_kind kind, const std::string& noun,
                                         const std::string& wanted) {
  if (!section) return nullptr;
  const std::vector<std::string> names = catalog.names_of_kind(kind);
  for (const auto& [key, node] : *section) {
    const std::string name(key.str());
    const std::string path = section_name + "." + name;
    if (!node.is_table())
      throw InputError(location_of(recipe.file, &node) + ": " + path + ": expected a table [" + path + "] of that " +
                       noun + "'s parameters");
    if (std::find(names.begin(), names.end(), name) == names.end())
      throw InputError(location_of(recipe.file, &node) + ": " + path + ": no " + noun + " plugin named '" + name + "'" +
                       did_you_mean(name, names));
    ParamValues::bind(*catalog.require(name, kind).metadata, node.as_table(), path, recipe.file);
  }
  return wanted.empty() ? nullptr : section->get_as<toml::table>(wanted);
}

}  // namespace paraplan::host
