#include "sim/mem/cache_tags.h"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace tdmsim::sim {

void CacheTags::beyond_range(std::uint64_t addr) {
  throw std::out_of_range("address " + std::to_string(addr) + " beyond the cache model's range");
}

CacheTags::CacheTags(std::uint64_t size_bytes, std::uint32_t line_bytes, std::uint32_t ways,
                     std::uint32_t block_lines)
    : line_(line_bytes), ways_(ways), block_lines_(std::clamp(block_lines, 1u, 32u)),
      line_shift_(static_cast<std::uint32_t>(std::countr_zero(line_bytes))) {
  const std::uint64_t lines_per_set =
      line_bytes == 0 || ways == 0 ? 0 : size_bytes / (std::uint64_t{line_bytes} * ways);
  if (lines_per_set == 0 || !std::has_single_bit(line_bytes) ||
      !std::has_single_bit(block_lines_)) {
    throw std::invalid_argument("cache geometry does not form whole sets");
  }
  // Whole blocks per set. Where the line count per way is not a multiple of
  // the block, the sets are rounded down, losing under 1/kMinSetsForFloor of
  // the capacity (a 256 MiB MALL over 12 stacks: 10922 lines per way, 341
  // sets of 32, 0.09%); only a cache too small for that halves the block.
  // (Halving until the block divided evenly had left that MALL with 2-line
  // blocks: 16x the tag operations of the other parts for the same bytes.)
  while (block_lines_ > 1 && lines_per_set % block_lines_ != 0 &&
         lines_per_set / block_lines_ < kMinSetsForFloor) {
    block_lines_ /= 2;
  }
  block_shift_ = static_cast<std::uint32_t>(std::countr_zero(block_lines_));
  sets_ = lines_per_set / block_lines_;
  set_bits_ = static_cast<std::uint32_t>(std::bit_width(sets_ - 1));
  set_mask_ = std::has_single_bit(sets_) ? sets_ - 1 : 0;
  record_ = 3 * std::uint64_t{ways_} + 1;
  record_bytes_ = record_ * sizeof(std::uint32_t);
  tags_.assign(sets_ * record_, 0);  // heads at way 0
  for (std::uint64_t s = 0; s < sets_; ++s) std::fill_n(set_record(s), ways_, kEmpty);
}

// fold() (in the header): the block number XOR-folded with its higher bits,
// so power-of-two strides (a tile's rows) still spread over the sets while
// consecutive blocks stay in neighbouring ones. A bijection: unfold() inverts it.

// (Not inlined: only an evicted dirty block needs it.)
[[gnu::noinline]] std::uint64_t CacheTags::unfold(std::uint64_t h) const {
  if (set_bits_ == 0) return h;
  // Each round fixes set_bits_ more of the high bits, top down.
  std::uint64_t x = h;
  for (std::uint32_t fixed = 0; fixed < 64; fixed += set_bits_) {
    x = h ^ (x >> set_bits_) ^ (x >> (2 * set_bits_));
  }
  return x;
}

std::uint64_t CacheTags::set_of(std::uint64_t addr) const {
  const std::uint64_t h = fold(addr >> line_shift_ >> block_shift_);
  return set_mask_ != 0 ? h & set_mask_ : h % sets_;
}

void CacheTags::to_front(std::uint32_t* set, std::uint32_t w, std::uint32_t k) const {
  std::uint32_t& head = set[3 * ways_];
  const auto next = [this](std::uint32_t x) { return x + 1 == ways_ ? 0 : x + 1; };
  const auto prev = [this](std::uint32_t x) { return x == 0 ? ways_ - 1 : x - 1; };
  const auto move = [&](std::uint32_t to, std::uint32_t from) {
    set[to] = set[from];
    set[ways_ + to] = set[ways_ + from];
    set[2 * ways_ + to] = set[2 * ways_ + from];
  };
  const std::uint32_t key = set[w], valid = set[ways_ + w], dirty = set[2 * ways_ + w];
  std::uint32_t at = w;
  if (k <= ways_ - 1 - k) {
    // The k more recent ways move one place later; `w` goes to the head.
    for (std::uint32_t m = 0; m < k; ++m) {
      const std::uint32_t from = prev(at);
      move(at, from);
      at = from;
    }
  } else {
    // The less recent ways move one place earlier, and the head moves back
    // onto the freed least-recent place, where `w` goes.
    const std::uint32_t tail = prev(head);
    while (at != tail) {
      const std::uint32_t from = next(at);
      move(at, from);
      at = from;
    }
    head = at;
  }
  set[at] = key;
  set[ways_ + at] = valid;
  set[2 * ways_ + at] = dirty;
}

bool CacheTags::contains(std::uint64_t addr) const {
  const std::uint64_t line = addr >> line_shift_;
  const std::uint64_t h = fold(line >> block_shift_);
  const std::uint64_t s = set_mask_ != 0 ? h & set_mask_ : h % sets_;
  const std::uint64_t key = set_mask_ != 0 ? h >> set_bits_ : h / sets_;
  if (key >= kEmpty) return false;
  const std::uint32_t* set = set_record(s);
  const std::uint32_t i = find(set, static_cast<std::uint32_t>(key));
  return i < ways_ && (set[ways_ + i] >> (line & (block_lines_ - 1)) & 1u) != 0;
}

std::vector<std::uint64_t> CacheTags::clean() {
  std::vector<std::uint64_t> dirty;
  for (std::uint64_t s = 0; s < sets_; ++s) {
    std::uint32_t* set = set_record(s);
    for (std::uint32_t w = 0; w < ways_; ++w) {
      std::uint32_t& d = set[2 * ways_ + w];
      if (d == 0) continue;
      const std::uint64_t first = unfold(std::uint64_t{set[w]} * sets_ + s) << block_shift_;
      for (std::uint32_t m = d; m != 0; m &= m - 1) {
        dirty.push_back((first + static_cast<std::uint32_t>(std::countr_zero(m))) << line_shift_);
      }
      d = 0;
    }
  }
  std::sort(dirty.begin(), dirty.end());
  return dirty;
}

}  // namespace tdmsim::sim
