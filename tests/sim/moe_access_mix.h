// One step of a MoE layer's mix of requests below the L1, for tests that run
// the memory chain two ways and compare what comes back: a block's gathered
// token rows, a weight stream, stores of output rows, a lone line and atomic
// adds of gathered partial rows. (A helper two test files need lives in a
// header: the sim tests are one unity translation unit.)
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "sim/mem/mem_access.h"

namespace tdmsim::test {

// Activations at 1 GiB, weights at 2 GiB, outputs at 3 GiB; rows of 7168 bytes.
struct MoeAccessMix {
  static constexpr std::uint64_t kRow = 7168, kX = 1ull << 30, kW = 2ull << 30, kOut = 3ull << 30;
  std::vector<std::uint64_t> gather = std::vector<std::uint64_t>(64);
  std::vector<std::uint64_t> sums = std::vector<std::uint64_t>(8);

  // Sends the step's five requests through `send(MemAccess)`.
  template <class Send>
  void step(std::mt19937_64& rng, Send&& send) {
    using sim::MemAccess;
    // Token rows of a block (tokens drawn from 512, so rows repeat and hit in part).
    for (auto& g : gather) g = (rng() % 512) * kRow;
    MemAccess a{kX, static_cast<std::uint32_t>(kRow), static_cast<std::uint32_t>(gather.size()), 0, false, 0};
    a.gather = gather.data();
    send(a);
    // A weight stream (experts drawn from 24: some again, some new).
    send(MemAccess{kW + (rng() % 24) * (8ull << 20) + (rng() % 4) * 65536, 256 * 1024, 1, 0, false, 0});
    // Stores of output rows (dirty lines, evicted later as write-backs).
    send(MemAccess{kOut + (rng() % 256) * 2 * kRow, static_cast<std::uint32_t>(kRow), 8, 4 * kRow, true, 0});
    // A lone line read (a scale, a router row): hits and misses, spread so
    // that every term of the channel hash varies.
    send(MemAccess{kX + (rng() % 4096) * (5 * 4096 + 128), 128, 1, 0, false, 0});
    // Atomic adds of gathered partial rows (rows of 128 bytes, some 64).
    for (auto& g : sums) g = (rng() % 1024) * 37 * 256;
    MemAccess add{kOut + (64ull << 20), 128u >> (rng() % 2), static_cast<std::uint32_t>(sums.size()), 0, true, 0};
    add.gather = sums.data();
    add.atomic = true;
    send(add);
  }
};

}  // namespace tdmsim::test
