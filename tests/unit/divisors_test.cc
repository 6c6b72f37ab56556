// Divisors from a prime factorisation, checked against trial division where that is cheap and
// against hand-known factorisations where it is not (a count near 2^63 used to loop for hours).
#include "host/core/divisors.h"

#include <chrono>

#include "test_support.h"

namespace paraplan::host {
namespace {

std::vector<int64_t> by_trial_division(int64_t value) {
  std::vector<int64_t> result;
  for (int64_t d = 1; d <= value; ++d)
    if (value % d == 0) result.push_back(d);
  return result;
}

TEST(Divisors, MatchTrialDivisionUpTo3000) {
  for (int64_t value = 1; value <= 3000; ++value) ASSERT_EQ(divisors(value), by_trial_division(value)) << value;
}

TEST(Divisors, HighlyCompositeCounts) {
  EXPECT_EQ(divisors(720720).size(), 240u);   // 2^4 3^2 5 7 11 13: 5*3*2*2*2*2
  EXPECT_EQ(divisors(16384).size(), 15u);     // 2^14
  EXPECT_EQ(divisors(100000).size(), 36u);    // 2^5 5^5
  EXPECT_EQ(divisors(1).size(), 1u);
  EXPECT_TRUE(divisors(0).empty());
}

TEST(Divisors, NearTwoToTheSixtyThreeInMilliseconds) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<int64_t> powers = divisors(int64_t{1} << 62);
  ASSERT_EQ(powers.size(), 63u);
  EXPECT_EQ(powers.back(), int64_t{1} << 62);
  // The largest prime below 2^63, and a product of two primes near 2^31 (2^31 - 1 and the
  // largest prime below it).
  const int64_t prime = 9223372036854775783;
  EXPECT_EQ(divisors(prime), (std::vector<int64_t>{1, prime}));
  const int64_t p = 2147483647, q = 2147483629;
  EXPECT_EQ(divisors(p * q), (std::vector<int64_t>{1, q, p, p * q}));
  const auto factors = prime_factors(static_cast<uint64_t>(p * q));
  ASSERT_EQ(factors.size(), 2u);
  EXPECT_EQ(factors[0].first, static_cast<uint64_t>(q));
  // 2^62 - 1 = 3 * 715827883 * 2147483647, with 2^31 - 1 a Mersenne prime.
  EXPECT_EQ(divisors((int64_t{1} << 62) - 1).size(), 8u);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

}  // namespace
}  // namespace paraplan::host
