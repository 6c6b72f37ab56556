// paraplan/host/recipe/recipe_limits.h: the largest values a recipe (or a measured run) may give.
//
// Far beyond any model or cluster trained today, and small enough that every product the host
// and the bundled plugins form (tokens x hidden x layers, degrees x degrees) stays exact in int64
// and finite in double. A value outside is an input error naming the key and the bound, never a
// wrapped product or an infinite time (docs/recipes.md lists them).
#pragma once

#include <cstdint>

namespace paraplan::host::limits {

struct Bound {
  int64_t min, max;
};

inline constexpr Bound kLayers{1, 100000};
inline constexpr Bound kHidden{1, int64_t{1} << 20};
inline constexpr Bound kHeads{1, int64_t{1} << 16};
inline constexpr Bound kHeadDim{1, int64_t{1} << 16};
inline constexpr Bound kFfnHidden{1, int64_t{1} << 24};
inline constexpr Bound kVocab{1, int64_t{1} << 24};
inline constexpr Bound kSeqLen{1, int64_t{1} << 27};
inline constexpr Bound kExperts{0, int64_t{1} << 16};
inline constexpr Bound kSharedExperts{0, 1024};
inline constexpr Bound kGlobalBatch{1, int64_t{1} << 24};  // sequences per step
inline constexpr Bound kGpus{1, int64_t{1} << 24};         // 16,777,216 GPUs
inline constexpr Bound kGpusPerNode{1, 100000};
inline constexpr Bound kDegree{1, int64_t{1} << 24};  // and at most the recipe's GPU count
inline constexpr int64_t kMaxStrategies = 64;        // [[strategy]] tables

}  // namespace paraplan::host::limits
