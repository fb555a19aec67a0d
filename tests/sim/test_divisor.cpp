// The exact reciprocal division and rounded-up ratio of sim/core/divisor.h
// against the plain divisions they replace: random and edge values, random
// divisors of every size, and every shipped bandwidth's transfer ticks.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <vector>

#include "sim/core/divisor.h"
#include "sim/core/sim_time.h"

using namespace tdmsim::sim;

namespace {

// Values around the edges of 64 bits and of the divisor's multiples.
std::vector<std::uint64_t> edge_values(std::uint64_t d) {
  std::vector<std::uint64_t> v = {0, 1, 2, d - 1, d, d + 1, 2 * d - 1, 2 * d, ~0ull, ~0ull - 1, ~0ull - d,
                                  1ull << 63, (1ull << 63) - 1, (1ull << 32) - 1, 1ull << 32};
  const std::uint64_t top = ~0ull / d * d;  // the largest multiple
  v.push_back(top);
  v.push_back(top - 1);
  return v;
}

}  // namespace

TEST_CASE("Reciprocal divides every 64-bit value as / does", "[divisor]") {
  std::mt19937_64 rng(20261204);
  std::vector<std::uint64_t> divisors = {1, 2, 3, 5, 7, 17, 1000, 768, 4096, 1'000'000'007ull, ~0ull, ~0ull - 1,
                                         (1ull << 63) + 1, 1ull << 63, (1ull << 32) + 1, 2'125'000'000'000ull};
  for (int i = 0; i < 2000; ++i) divisors.push_back(rng() >> (rng() % 64));
  for (std::uint64_t d : divisors) {
    if (d == 0) continue;
    const Reciprocal r(d);
    for (std::uint64_t n : edge_values(d)) REQUIRE(r.div(n) == n / d);
    for (int k = 0; k < 200; ++k) {
      const std::uint64_t n = rng() >> (rng() % 64);
      REQUIRE(r.div(n) == n / d);
    }
  }
}

TEST_CASE("CeilRatio gives transfer_ticks' rounded-up ticks", "[divisor]") {
  std::mt19937_64 rng(7);
  // Shipped and odd bandwidths (bytes/s): per-link, per-slice and per-channel shares.
  std::vector<std::uint64_t> bws = {0, 1, 3, 2'125'000'000'000ull, 17'000'000'000'000ull / 8, 5'300'000'000'000ull / 8,
                                    8'000'000'000'000ull / 256, 6'000'000'000'000ull / 7, 1'234'567'891ull,
                                    999'999'999'989ull, ~0ull};
  for (int i = 0; i < 300; ++i) bws.push_back(rng() >> (rng() % 64));
  for (std::uint64_t bw : bws) {
    const CeilRatio ticks(1'000'000'000'000ull, bw);
    const tdmsim::units::Bandwidth b{bw};
    for (std::uint64_t x : edge_values(bw == 0 ? 1 : bw)) REQUIRE(ticks(x) == transfer_ticks(x, b));
    for (int k = 0; k < 300; ++k) {
      const std::uint64_t x = rng() >> (rng() % 64);
      REQUIRE(ticks(x) == transfer_ticks(x, b));
    }
  }
}
