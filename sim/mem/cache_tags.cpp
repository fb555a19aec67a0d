#include "sim/mem/cache_tags.h"

#include <algorithm>
#include <bit>
#include <stdexcept>

namespace tdmsim::sim {

CacheTags::CacheTags(std::uint64_t size_bytes, std::uint32_t line_bytes, std::uint32_t ways)
    : line_(line_bytes), ways_(ways),
      sets_(size_bytes / (static_cast<std::uint64_t>(line_bytes) * ways)),
      line_shift_(static_cast<std::uint32_t>(std::countr_zero(line_bytes))) {
  if (sets_ == 0 || !std::has_single_bit(line_bytes)) {
    throw std::invalid_argument("cache geometry does not form whole sets");
  }
  tags_.assign(sets_ * ways_, kEmpty);
  ages_.assign(sets_ * ways_, 0);
  dirty_.assign(sets_ * ways_, 0);
  clock_.assign(sets_, 0);
}

std::uint64_t CacheTags::set_of(std::uint64_t addr) const {
  // Fibonacci hashing of the line number, then a multiply-shift range
  // reduction onto [0, sets): spreads power-of-two strides, no division.
  std::uint64_t h = addr >> line_shift_;
  h ^= h >> 31;
  h *= 0xFF51AFD7ED558CCDull;  // a 64-bit finaliser mix: strides spread too
  h ^= h >> 29;
  return ((h >> 32) * sets_) >> 32;
}

CacheTags::Result CacheTags::access(std::uint64_t addr, bool write) {
  const std::uint64_t line = addr >> line_shift_;
  const std::uint64_t set = set_of(addr);
  const std::size_t base = set * ways_;
  const std::uint32_t now = ++clock_[set];
  const std::uint64_t* tags = &tags_[base];
  for (std::uint32_t i = 0; i < ways_; ++i) {
    if (tags[i] == line) {
      ages_[base + i] = now;
      dirty_[base + i] |= static_cast<std::uint8_t>(write);
      return {true, std::nullopt};
    }
  }
  const std::uint32_t* ages = &ages_[base];
  std::uint32_t victim = 0;
  for (std::uint32_t i = 1; i < ways_; ++i) {
    if (ages[i] < ages[victim]) victim = i;
  }
  Result r;
  if (tags_[base + victim] != kEmpty && dirty_[base + victim]) {
    r.dirty_victim = tags_[base + victim] << line_shift_;
  }
  tags_[base + victim] = line;
  ages_[base + victim] = now;
  dirty_[base + victim] = static_cast<std::uint8_t>(write);
  return r;
}

bool CacheTags::contains(std::uint64_t addr) const {
  const std::uint64_t line = addr >> line_shift_;
  const std::size_t base = set_of(addr) * ways_;
  for (std::uint32_t i = 0; i < ways_; ++i) {
    if (tags_[base + i] == line) return true;
  }
  return false;
}

std::vector<std::uint64_t> CacheTags::clean() {
  std::vector<std::uint64_t> dirty;
  for (std::size_t i = 0; i < tags_.size(); ++i) {
    if (tags_[i] != kEmpty && dirty_[i]) dirty.push_back(tags_[i] << line_shift_);
    dirty_[i] = 0;
  }
  std::sort(dirty.begin(), dirty.end());
  return dirty;
}

}  // namespace tdmsim::sim
