// A set-associative tag array with true LRU and dirty bits, shared by the L2
// and the MALL models. Timing-free: it only answers hit/miss and what was
// evicted, so caches' hit rates emerge from real addresses. This is the
// simulator's hottest loop: tags, ages and dirty bits are kept in separate
// arrays and the set index uses a multiplicative hash (no division).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace tdmsim::sim {

class CacheTags {
 public:
  CacheTags(std::uint64_t size_bytes, std::uint32_t line_bytes, std::uint32_t ways);

  struct Result {
    bool hit = false;
    std::optional<std::uint64_t> dirty_victim;  // line address written back on eviction
  };
  // Looks up the line holding `addr`, allocating it on a miss (LRU victim).
  // `write` marks the line dirty.
  Result access(std::uint64_t addr, bool write);
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
  static constexpr std::uint64_t kEmpty = ~0ull;
  std::uint32_t line_;
  std::uint32_t ways_;
  std::uint64_t sets_;
  std::uint32_t line_shift_;
  std::vector<std::uint64_t> tags_;   // sets_ x ways_; kEmpty = invalid
  std::vector<std::uint32_t> ages_;   // higher = more recently used
  std::vector<std::uint8_t> dirty_;
  std::vector<std::uint32_t> clock_;  // per-set use counter
};

}  // namespace tdmsim::sim
