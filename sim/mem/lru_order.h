// The recency order of one cache set (cache_tags.h), kept in the set's record
// after its masks. Host-speed machinery beside the caches: the order is a
// permutation of the ways, so no two ways are ever equally recent and the
// victim is always the way least recently used (exact LRU: the same choices
// as a list kept in recency order, tests/sim/test_lru_order.cpp). A block
// stays in its way for as long as it is cached; only the order changes.
//
// Up to 16 ways (every shipped cache) the order is one 64-bit word of 4-bit
// way numbers, in two 32-bit record words: nibble k holds the way k places
// from the most recent, so nibble 0 is the most recent way and nibble
// ways - 1 the least recent; the nibbles above stay zero. A miss rotates the
// word by one nibble; a hit moves its way's nibble to the front with a few
// shifts and masks. With more ways, the ways' numbers are bytes in recency
// order (ways / 4 record words, rounded up), moved as a list.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace tdmsim::sim {

class LruOrder {
 public:
  // The most ways of the one-word order, and the record words it takes.
  static constexpr std::uint32_t kWordWays = 16;
  static constexpr std::uint32_t kWordWords = 2;

  LruOrder() = default;
  explicit LruOrder(std::uint32_t ways)
      : ways_(ways), top_shift_(ways <= kWordWays ? 4 * (ways - 1) : 0),
        mask_(ways >= kWordWays ? ~0ull : (std::uint64_t{1} << (4 * ways)) - 1) {}

  // 32-bit words the order takes in a set record.
  std::uint32_t words() const { return ways_ <= kWordWays ? kWordWords : (ways_ + 3) / 4; }
  bool one_word() const { return ways_ <= kWordWays; }

  // Writes the order of a set nobody has used: way 0 the most recent, way
  // ways - 1 the least (the first misses fill the last ways first).
  void init(std::uint32_t* at) const {
    if (one_word()) {
      store(at, 0xFEDCBA9876543210ull & mask_);
      return;
    }
    auto* b = reinterpret_cast<std::uint8_t*>(at);
    for (std::uint32_t k = 0; k < ways_; ++k) b[k] = static_cast<std::uint8_t>(k);
  }

  static std::uint64_t load(const std::uint32_t* at) {
    std::uint64_t o;
    std::memcpy(&o, at, sizeof o);
    return o;
  }
  static void store(std::uint32_t* at, std::uint64_t o) { std::memcpy(at, &o, sizeof o); }

  // The least recent way (the victim of a miss).
  [[gnu::always_inline]] std::uint32_t least_recent(const std::uint32_t* at) const {
    if (one_word()) [[likely]] return static_cast<std::uint32_t>(load(at) >> top_shift_) & 0xFu;
    return list_place(at, ways_ - 1);
  }
  // Makes the least recent way the most recent (a miss refills it) and
  // returns it.
  [[gnu::always_inline]] std::uint32_t take_least_recent(std::uint32_t* at) const {
    if (one_word()) [[likely]] {
      const std::uint64_t o = load(at);
      const auto w = static_cast<std::uint32_t>(o >> top_shift_) & 0xFu;
      store(at, ((o << 4) & mask_) | w);
      return w;
    }
    return to_front_list(at, ways_ - 1);
  }
  // The same for 16 ways: the word rotates by one nibble.
  [[gnu::always_inline]] static std::uint32_t least_recent16(const std::uint32_t* at) {
    return static_cast<std::uint32_t>(load(at) >> 60);
  }
  [[gnu::always_inline]] static void take_least_recent16(std::uint32_t* at) { store(at, std::rotl(load(at), 4)); }

  // Makes way `w` (one of the set's ways) the most recent; the ways more
  // recent than it move one place back, the others keep their places.
  [[gnu::always_inline]] void touch(std::uint32_t* at, std::uint32_t w) const {
    if (one_word()) [[likely]] {
      const std::uint64_t o = load(at);
      if ((o & 0xFu) != w) store(at, touched(o, w));
      return;
    }
    touch_list(at, w);
  }
  // The one-word order `o` after a hit on way `w`. Way w's nibble is found as
  // the lowest zero nibble of o ^ (w in every nibble): the borrow of the
  // subtraction runs only upwards, so the lowest flagged nibble is exact
  // (higher flags may be false; w appears once among the ways' nibbles, and
  // the zero nibbles above the ways are higher still).
  [[gnu::always_inline]] static std::uint64_t touched(std::uint64_t o, std::uint32_t w) {
    constexpr std::uint64_t kOnes = 0x1111111111111111ull, kHighs = 0x8888888888888888ull;
    const std::uint64_t x = o ^ (kOnes * w);
    const std::uint64_t zero = (x - kOnes) & ~x & kHighs;
    const auto shift = static_cast<std::uint32_t>(std::countr_zero(zero)) - 3;  // 4 x w's place
    const std::uint64_t newer = (std::uint64_t{1} << shift) - 1;              // the nibbles before it
    return (o & (~newer << 4)) | ((o & newer) << 4) | w;
  }

  // The way at place k (0: the most recent) of the order at `at`.
  std::uint32_t at_place(const std::uint32_t* at, std::uint32_t k) const {
    if (one_word()) return static_cast<std::uint32_t>(load(at) >> (4 * k)) & 0xFu;
    return list_place(at, k);
  }

 private:
  // The byte list of more than 16 ways, out of line: the lookups inline
  // the one-word order only (every shipped cache's).
  static std::uint32_t list_place(const std::uint32_t* at, std::uint32_t k) {
    return reinterpret_cast<const std::uint8_t*>(at)[k];
  }
  // The way at place k goes to the front. Returns it.
  [[gnu::noinline, gnu::cold]] static std::uint32_t to_front_list(std::uint32_t* at, std::uint32_t k) {
    auto* b = reinterpret_cast<std::uint8_t*>(at);
    const std::uint8_t w = b[k];
    std::memmove(b + 1, b, k);
    b[0] = w;
    return w;
  }
  [[gnu::noinline, gnu::cold]] void touch_list(std::uint32_t* at, std::uint32_t w) const {
    const auto* b = reinterpret_cast<const std::uint8_t*>(at);
    const auto* p = static_cast<const std::uint8_t*>(std::memchr(b, static_cast<int>(w), ways_));
    to_front_list(at, static_cast<std::uint32_t>(p - b));
  }

  std::uint32_t ways_ = 1;
  std::uint32_t top_shift_ = 0;
  std::uint64_t mask_ = 0;
};

}  // namespace tdmsim::sim
