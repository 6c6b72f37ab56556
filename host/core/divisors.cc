#include "host/core/divisors.h"

#include <algorithm>
#include <numeric>

namespace paraplan::host {
namespace {

using u128 = unsigned __int128;

uint64_t multiply_mod(uint64_t a, uint64_t b, uint64_t m) { return static_cast<uint64_t>(static_cast<u128>(a) * b % m); }

uint64_t power_mod(uint64_t base, uint64_t exponent, uint64_t m) {
  uint64_t result = 1;
  base %= m;
  for (; exponent > 0; exponent >>= 1, base = multiply_mod(base, base, m))
    if (exponent & 1) result = multiply_mod(result, base, m);
  return result;
}

// Miller-Rabin with the first twelve primes as bases: exact for every n < 3.3 * 10^24.
bool is_prime(uint64_t n) {
  if (n < 2) return false;
  static constexpr uint64_t kBases[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37};
  for (uint64_t p : kBases)
    if (n % p == 0) return n == p;
  uint64_t d = n - 1;
  int twos = 0;
  while ((d & 1) == 0) d >>= 1, ++twos;
  for (uint64_t a : kBases) {
    uint64_t x = power_mod(a, d, n);
    if (x == 1 || x == n - 1) continue;
    bool composite = true;
    for (int r = 1; r < twos && composite; ++r) {
      x = multiply_mod(x, x, n);
      composite = x != n - 1;
    }
    if (composite) return false;
  }
  return true;
}

// A non-trivial factor of the odd composite n (Pollard's rho, Brent's variant, batched gcds).
uint64_t rho_factor(uint64_t n) {
  for (uint64_t c = 1;; ++c) {
    auto step = [&](uint64_t x) { return (multiply_mod(x, x, n) + c) % n; };
    uint64_t y = 2, x = 2, q = 1, g = 1, saved = 2;
    const uint64_t batch = 128;
    for (uint64_t r = 1; g == 1; r <<= 1) {
      x = y;
      for (uint64_t i = 0; i < r; ++i) y = step(y);
      for (uint64_t k = 0; k < r && g == 1; k += batch) {
        saved = y;
        for (uint64_t i = 0; i < std::min(batch, r - k); ++i) {
          y = step(y);
          q = multiply_mod(q, x > y ? x - y : y - x, n);
        }
        g = std::gcd(q, n);
      }
    }
    if (g == n) {  // the batch overshot: walk it again one step at a time
      do {
        saved = step(saved);
        g = std::gcd(x > saved ? x - saved : saved - x, n);
      } while (g == 1);
    }
    if (g != n) return g;
  }
}

void factor_into(uint64_t n, std::vector<uint64_t>& primes) {
  if (n == 1) return;
  if (is_prime(n)) {
    primes.push_back(n);
    return;
  }
  const uint64_t factor = rho_factor(n);
  factor_into(factor, primes);
  factor_into(n / factor, primes);
}

}  // namespace

std::vector<std::pair<uint64_t, int>> prime_factors(uint64_t value) {
  std::vector<uint64_t> primes;
  for (uint64_t p = 2; p < 1000 && p * p <= value; ++p)  // GPU counts are mostly small primes
    while (value % p == 0) primes.push_back(p), value /= p;
  factor_into(value, primes);
  std::sort(primes.begin(), primes.end());
  std::vector<std::pair<uint64_t, int>> factors;
  for (uint64_t p : primes) {
    if (!factors.empty() && factors.back().first == p)
      ++factors.back().second;
    else
      factors.emplace_back(p, 1);
  }
  return factors;
}

std::vector<int64_t> divisors(int64_t value) {
  if (value < 1) return {};
  std::vector<int64_t> result{1};
  for (const auto& [prime, exponent] : prime_factors(static_cast<uint64_t>(value))) {
    const size_t count = result.size();
    int64_t power = 1;
    for (int e = 1; e <= exponent; ++e) {
      power *= static_cast<int64_t>(prime);  // a prime power dividing value: no overflow
      for (size_t i = 0; i < count; ++i) result.push_back(result[i] * power);
    }
  }
  std::sort(result.begin(), result.end());
  return result;
}

}  // namespace paraplan::host
