// paraplan/host/plan/plugin_tables.h: a recipe's tables of plugin parameters, [executor.<name>]
// and [export.<name>], checked as a whole.
//
// Every table of the section must be a table, name a loaded plugin of the section's kind, and
// match that plugin's schema, whichever plugin runs: a typo in [executor.simulate] fails
// `evaluate` too, instead of being ignored until the day that plugin runs.
#pragma once

#include <toml++/toml.h>

#include <string>

#include "host/plugin/plugin_catalog.h"
#include "host/recipe/recipe.h"

namespace paraplan::host {

// `section`: the recipe's [executor] or [export] table (may be null); `section_name`: "executor"
// or "export"; `kind`: the plugins it configures, called `noun`s in messages. Returns the table
// of `wanted` (null when the recipe has none); throws InputError naming file, line and key.
const toml::table* checked_plugin_tables(const Recipe& recipe, const toml::table* section, const std::string& section_name,
                                         const PluginCatalog& catalog, pp_plugin_kind kind, const std::string& noun,
                                         const std::string& wanted = "");

}  // namespace paraplan::host
