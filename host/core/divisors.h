// paraplan/host/core/divisors.h: the divisors of a GPU count, from its prime factorisation.
//
// The search tries every divisor of the GPUs a strategy may take. Trial division up to the
// square root is 3 * 10^9 steps for a count near 2^63; a factorisation (trial division by small
// primes, then Miller-Rabin with the deterministic 64-bit bases and Pollard's rho with Brent's
// cycle finding) takes microseconds for any int64, and a count has at most 103,680 divisors.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace paraplan::host {

// (prime, exponent) pairs of `value` (>= 1), primes ascending; {} for 1.
std::vector<std::pair<uint64_t, int>> prime_factors(uint64_t value);

// Every divisor of `value` (>= 1), ascending.
std::vector<int64_t> divisors(int64_t value);

}  // namespace paraplan::host
