// paraplan/host/core/checked_math.h: integer products that cannot wrap.
//
// Degrees, micro-batches and GPU counts multiply; a recipe (or a --set) may give numbers whose
// product leaves int64, which would wrap to a small number that divides the GPU count and a plan
// that "fits". Every such product goes through here.
#pragma once

#include <cstdint>
#include <optional>

namespace paraplan::host {

// a * b, or nullopt when it does not fit in int64.
inline std::optional<int64_t> checked_product(int64_t a, int64_t b) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product;
}

}  // namespace paraplan::host
