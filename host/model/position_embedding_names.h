// host/model/position_embedding_names.h: reading a model's position embedding by name.
//
// The names are the SDK's (paraplan::kPositionEmbeddingNames, Megatron-LM's
// --position-embedding-type); the recipe reader and the measured-runs reader offer and parse them
// here.
#ifndef PARAPLAN_HOST_MODEL_POSITION_EMBEDDING_NAMES_H
#define PARAPLAN_HOST_MODEL_POSITION_EMBEDDING_NAMES_H

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "paraplan/sdk.hpp"

namespace paraplan::host {

inline std::vector<std::string> position_embedding_names() {
  std::vector<std::string> names;
  for (const PositionEmbeddingName& entry : kPositionEmbeddingNames) names.emplace_back(entry.name);
  return names;
}

inline std::optional<pp_position_embedding> position_embedding_named(std::string_view name) {
  for (const PositionEmbeddingName& entry : kPositionEmbeddingNames)
    if (entry.name == name) return entry.kind;
  return std::nullopt;
}

}  // namespace paraplan::host

#endif  // PARAPLAN_HOST_MODEL_POSITION_EMBEDDING_NAMES_H
