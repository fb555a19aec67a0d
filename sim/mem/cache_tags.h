// A set-associative tag array with true LRU and dirty bits, shared by the L2
// and the MALL models. Timing-free: it only answers hit/miss and what was
// evicted, so caches' hit rates emerge from real addresses.
//
// This is the simulator's hottest loop (a GiB copy is tens of millions of
// lookups), so the layout is chosen for the host: each set is one 64-byte
// record of 32-bit keys kept in recency order (most recent first), compared
// four at a time, and the set index keeps consecutive lines in neighbouring
// sets so a streamed buffer walks the records almost sequentially.
#pragma once

#include <cstdint>
#include <vector>

namespace tdmsim::sim {

class CacheTags {
 public:
  CacheTags(std::uint64_t size_bytes, std::uint32_t line_bytes, std::uint32_t ways);

  static constexpr std::uint64_t kNoVictim = ~0ull;
  // Small enough to come back in registers (a std::optional member made the
  // hot path stall on a partial store).
  struct Result {
    std::uint64_t victim = kNoVictim;  // dirty line to write back on eviction
    bool hit = false;
    bool dirty_victim() const { return victim != kNoVictim; }
  };
  // Looks up the line holding `addr`, allocating it on a miss (LRU victim).
  // `write` marks the line dirty.
  Result access(std::uint64_t addr, bool write);
  // Hints the host to fetch the set of `addr` (a lookup soon to come): the
  // tag walk is bound by host memory latency, not by arithmetic.
  void prefetch(std::uint64_t addr) const { __builtin_prefetch(&keys_[set_of(addr) * ways_]); }
  // Whether the line holding `addr` is present (no allocation, no LRU update).
  bool contains(std::uint64_t addr) const;
  // Marks every dirty line clean (they stay valid) and returns their
  // addresses, in ascending order, for the caller to write back.
  std::vector<std::uint64_t> clean();

  std::uint32_t line_bytes() const { return line_; }
  std::uint64_t sets() const { return sets_; }
  // The set a line address maps to (exposed for tests of the spread).
  std::uint64_t set_of(std::uint64_t addr) const;

 private:
  // A line is identified by fold(line number) = set + sets * key: the set is
  // implied by where the key sits, so 31 bits of key cover addresses far
  // beyond any GPU's memory. The top bit is the dirty flag.
  static constexpr std::uint32_t kEmpty = 0x7FFFFFFFu;  // never a valid key
  static constexpr std::uint32_t kDirty = 0x80000000u;
  std::uint64_t fold(std::uint64_t line) const;
  std::uint64_t unfold(std::uint64_t h) const;
  // The way holding `key` in `set`, or ways_ if none.
  std::uint32_t find(const std::uint32_t* set, std::uint32_t key) const;

  std::uint32_t line_;
  std::uint32_t ways_;
  std::uint64_t sets_;
  std::uint32_t line_shift_;
  std::uint32_t set_bits_ = 0;  // bits needed to number the sets
  std::uint64_t set_mask_ = 0;  // sets_ - 1 when sets_ is a power of two, else 0
  std::vector<std::uint32_t> keys_;  // sets_ x ways_, each set in recency order
};

}  // namespace tdmsim::sim
