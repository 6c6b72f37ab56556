// host/model/precision_names.h: reading a training precision by name.
//
// The names are the SDK's (paraplan::kPrecisionNames); the recipe reader and the measured-runs
// reader offer and parse them here.
#ifndef PARAPLAN_HOST_MODEL_PRECISION_NAMES_H
#define PARAPLAN_HOST_MODEL_PRECISION_NAMES_H

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "paraplan/sdk.hpp"

namespace paraplan::host {

inline std::vector<std::string> precision_names() {
  std::vector<std::string> names;
  for (const PrecisionName& entry : kPrecisionNames) names.emplace_back(entry.name);
  return names;
}

inline std::optional<pp_precision> precision_named(std::string_view name) {
  for (const PrecisionName& entry : kPrecisionNames)
    if (entry.name == name) return entry.precision;
  return std::nullopt;
}

}  // namespace paraplan::host

#endif  // PARAPLAN_HOST_MODEL_PRECISION_NAMES_H
