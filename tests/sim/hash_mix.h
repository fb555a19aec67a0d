// Hashes of what a test's runs produced (answers, stats), for comparing a
// host-speed path with its reference in one number each (FNV-1a over bytes).
// (The test files of tdmsim_sim_tests are one unity translation unit: a
// helper two files need lives in a header, once.)
#pragma once

#include <cstdint>
#include <cstring>

#include "sim/core/stats.h"

namespace tdmsim::test {

inline constexpr std::uint64_t kHashStart = 0xcbf29ce484222325ull;

// Folds `v`'s eight bytes into hash `h`.
inline void hash_mix(std::uint64_t& h, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) {
    h ^= (v >> (8 * i)) & 0xFF;
    h *= 0x100000001b3ull;
  }
}

// Folds every stat's value now (its bits) into hash `h`.
inline void hash_stats(std::uint64_t& h, const sim::StatRegistry& stats) {
  for (const double v : stats.snapshot()) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof bits);
    hash_mix(h, bits);
  }
}

}  // namespace tdmsim::test
