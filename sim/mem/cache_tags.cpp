#include "sim/mem/cache_tags.h"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace tdmsim::sim {

CacheTags::CacheTags(std::uint64_t size_bytes, std::uint32_t line_bytes, std::uint32_t ways)
    : line_(line_bytes), ways_(ways),
      sets_(line_bytes == 0 || ways == 0 ? 0 : size_bytes / (std::uint64_t{line_bytes} * ways)),
      line_shift_(static_cast<std::uint32_t>(std::countr_zero(line_bytes))) {
  if (sets_ == 0 || !std::has_single_bit(line_bytes)) {
    throw std::invalid_argument("cache geometry does not form whole sets");
  }
  set_bits_ = static_cast<std::uint32_t>(std::bit_width(sets_ - 1));
  set_mask_ = std::has_single_bit(sets_) ? sets_ - 1 : 0;
  keys_.assign(sets_ * ways_, kEmpty);
}

// The line number XOR-folded with its higher bits, so power-of-two strides (a
// tile's rows) still spread over the sets while consecutive lines stay in
// neighbouring ones. A bijection: unfold() inverts it.
std::uint64_t CacheTags::fold(std::uint64_t line) const {
  if (set_bits_ == 0) return line;
  return line ^ (line >> set_bits_) ^ (line >> (2 * set_bits_));
}

std::uint64_t CacheTags::unfold(std::uint64_t h) const {
  if (set_bits_ == 0) return h;
  // Each round fixes set_bits_ more of the high bits, top down.
  std::uint64_t x = h;
  for (std::uint32_t fixed = 0; fixed < 64; fixed += set_bits_) {
    x = h ^ (x >> set_bits_) ^ (x >> (2 * set_bits_));
  }
  return x;
}

std::uint64_t CacheTags::set_of(std::uint64_t addr) const {
  const std::uint64_t h = fold(addr >> line_shift_);
  return set_mask_ != 0 ? h & set_mask_ : h % sets_;
}

std::uint32_t CacheTags::find(const std::uint32_t* set, std::uint32_t key) const {
  std::uint32_t i = 0;
#if defined(__SSE2__)
  const __m128i want = _mm_set1_epi32(static_cast<int>(key));
  const __m128i clear_dirty = _mm_set1_epi32(static_cast<int>(~kDirty));
  for (; i + 4 <= ways_; i += 4) {
    const __m128i k = _mm_and_si128(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(set + i)), clear_dirty);
    const int mask = _mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(k, want)));
    if (mask != 0) return i + static_cast<std::uint32_t>(std::countr_zero(static_cast<unsigned>(mask)));
  }
#endif
  for (; i < ways_; ++i) {
    if ((set[i] & ~kDirty) == key) return i;
  }
  return ways_;
}

CacheTags::Result CacheTags::access(std::uint64_t addr, bool write) {
  const std::uint64_t h = fold(addr >> line_shift_);
  const std::uint64_t s = set_mask_ != 0 ? h & set_mask_ : h % sets_;
  const auto key = static_cast<std::uint32_t>(set_mask_ != 0 ? h >> set_bits_ : h / sets_);
  if (key >= kEmpty) {
    throw std::out_of_range("address " + std::to_string(addr) + " beyond the cache model's range");
  }
  std::uint32_t* set = &keys_[s * ways_];
  const std::uint32_t flag = write ? kDirty : 0;
  const std::uint32_t i = find(set, key);
  if (i < ways_) {  // hit: move to the most-recent position
    const std::uint32_t entry = set[i] | flag;
    for (std::uint32_t j = i; j > 0; --j) set[j] = set[j - 1];
    set[0] = entry;
    return {kNoVictim, true};
  }
  // Miss: the least-recent way (the last; empty ways sit at the end) goes.
  Result r;
  const std::uint32_t victim = set[ways_ - 1];
  if ((victim & kDirty) != 0) {
    const std::uint64_t vh = std::uint64_t{victim & ~kDirty} * sets_ + s;
    r.victim = unfold(vh) << line_shift_;
  }
  for (std::uint32_t j = ways_ - 1; j > 0; --j) set[j] = set[j - 1];
  set[0] = key | flag;
  return r;
}

bool CacheTags::contains(std::uint64_t addr) const {
  const std::uint64_t h = fold(addr >> line_shift_);
  const std::uint64_t s = set_mask_ != 0 ? h & set_mask_ : h % sets_;
  const std::uint64_t key = set_mask_ != 0 ? h >> set_bits_ : h / sets_;
  if (key >= kEmpty) return false;
  return find(&keys_[s * ways_], static_cast<std::uint32_t>(key)) < ways_;
}

std::vector<std::uint64_t> CacheTags::clean() {
  std::vector<std::uint64_t> dirty;
  for (std::uint64_t s = 0; s < sets_; ++s) {
    for (std::uint32_t w = 0; w < ways_; ++w) {
      std::uint32_t& e = keys_[s * ways_ + w];
      if ((e & kDirty) == 0) continue;
      e &= ~kDirty;
      dirty.push_back(unfold(std::uint64_t{e} * sets_ + s) << line_shift_);
    }
  }
  std::sort(dirty.begin(), dirty.end());
  return dirty;
}

}  // namespace tdmsim::sim
