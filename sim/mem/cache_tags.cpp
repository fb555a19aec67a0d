#include "sim/mem/cache_tags.h"

#include <algorithm>
#include <bit>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace tdmsim::sim {

void CacheTags::beyond_range(std::uint64_t addr) {
  throw std::out_of_range("address " + std::to_string(addr) + " beyond the cache model's range");
}

std::optional<CacheTags::Geometry> CacheTags::shape(std::uint64_t size_bytes, std::uint32_t line_bytes,
                                                     std::uint32_t ways, std::uint32_t block_lines, Writes writes) {
  Geometry g;
  g.ways = ways;
  g.block_lines = std::clamp(block_lines, 1u, 32u);
  g.line_shift = static_cast<std::uint32_t>(std::countr_zero(line_bytes));
  const std::uint64_t lines_per_set =
      line_bytes == 0 || ways == 0 ? 0 : size_bytes / (std::uint64_t{line_bytes} * ways);
  if (lines_per_set == 0 || !std::has_single_bit(line_bytes) || !std::has_single_bit(g.block_lines)) {
    return std::nullopt;
  }
  // Whole blocks per set. Where the line count per way is not a multiple of
  // the block, the sets are rounded down, losing under 1/kMinSetsForFloor of
  // the capacity (a 256 MiB MALL over 12 stacks: 10922 lines per way, 341
  // sets of 32, 0.09%); only a cache too small for that halves the block.
  // (Halving until the block divided evenly had left that MALL with 2-line
  // blocks: 16x the tag operations of the other parts for the same bytes.)
  while (g.block_lines > 1 && lines_per_set % g.block_lines != 0 && lines_per_set / g.block_lines < kMinSetsForFloor) {
    g.block_lines /= 2;
  }
  g.block_shift = static_cast<std::uint32_t>(std::countr_zero(g.block_lines));
  g.sets = lines_per_set / g.block_lines;
  g.set_bits = static_cast<std::uint32_t>(std::bit_width(g.sets - 1));
  g.set_mask = std::has_single_bit(g.sets) ? g.sets - 1 : 0;
  g.order = LruOrder(ways);
  g.dirty_masks = writes == Writes::some;
  g.record = (g.dirty_masks ? 3 : 2) * std::uint64_t{ways} + g.order.words();
  g.record_bytes = g.record * sizeof(std::uint32_t);
#if defined(__x86_64__) && defined(__GNUC__)
  g.bmi2 = __builtin_cpu_supports("bmi2");
#endif
  return g;
}

std::uint64_t CacheTags::records_bytes(std::uint64_t size_bytes, std::uint32_t line_bytes, std::uint32_t ways,
                                       std::uint32_t block_lines, Writes writes) {
  const std::optional<Geometry> g = shape(size_bytes, line_bytes, ways, block_lines, writes);
  if (!g) return 0;
  std::uint64_t bytes = 0;
  return __builtin_mul_overflow(g->sets, g->record_bytes, &bytes) ? ~0ull : bytes;
}

CacheTags::CacheTags(std::uint64_t size_bytes, std::uint32_t line_bytes, std::uint32_t ways,
                     std::uint32_t block_lines, Writes writes)
    : line_(line_bytes) {
  const std::optional<Geometry> g = shape(size_bytes, line_bytes, ways, block_lines, writes);
  if (!g) throw std::invalid_argument("cache geometry does not form whole sets");
  g_ = *g;
  const std::uint64_t masks = g_.record - g_.order.words();
  tags_.assign(g_.sets * g_.record, 0);
  for (std::uint64_t s = 0; s < g_.sets; ++s) {
    std::fill_n(&tags_[s * g_.record], ways, kEmpty);
    g_.order.init(&tags_[s * g_.record + masks]);
  }
}

// Walker::fold() (in the header): the block number XOR-folded with its
// higher bits, so power-of-two strides (a tile's rows) still spread over the
// sets while consecutive blocks stay in neighbouring ones. A bijection:
// unfold() inverts it.

// (Not inlined: only an evicted dirty block needs it.)
[[gnu::noinline]] std::uint64_t CacheTags::unfold(const Geometry& g, std::uint64_t h) {
  if (g.set_bits == 0) return h;
  // fold is x -> (1 + S + S^2) x, S the shift right by k = set_bits, over
  // GF(2) (XOR). (1 + S)(1 + S + S^2) = 1 + S^3, and (1 + S^3)(1 + S^6)
  // (1 + S^12)... = 1 once the shift passes 64 bits, so the inverse is
  // (1 + S) times those factors: a few shifts, where the fixed-point rounds
  // (unfold_reference) took up to 64 / k of them.
  std::uint64_t y = h;
  for (std::uint32_t sh = 3 * g.set_bits; sh < 64; sh *= 2) y ^= y >> sh;
  return y ^ (y >> g.set_bits);
}

std::uint64_t CacheTags::unfold_reference(const Geometry& g, std::uint64_t h) {
  if (g.set_bits == 0) return h;
  // Each round fixes set_bits more of the high bits, top down. A round that
  // changes nothing has found x with fold(x) = h (x = h ^ (x >> k) ^
  // (x >> 2k) says so), the one block that folds to h: later rounds would
  // leave it as it is. (Keys are 32 bits: from about 32 / set_bits rounds on.)
  std::uint64_t x = h;
  for (std::uint32_t fixed = 0; fixed < 64; fixed += g.set_bits) {
    const std::uint64_t next = h ^ (x >> g.set_bits) ^ (x >> (2 * g.set_bits));
    if (next == x) break;
    x = next;
  }
  return x;
}

// (Out of line: see the declaration.)
CacheTags::Walker::Streak CacheTags::Walker::miss_streak(std::uint64_t addr, std::uint64_t count, bool write) const {
#if defined(__x86_64__) && defined(__GNUC__)
  if (g_.bmi2) return miss_streak_bmi2(addr, count, write);
#endif
  return miss_streak_loop(addr, count, write);  // (as miss_streak_base, without a second call)
}

CacheTags::Walker::Streak CacheTags::Walker::miss_streak_base(std::uint64_t addr, std::uint64_t count,
                                                              bool write) const {
  return miss_streak_loop(addr, count, write);
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("bmi2"))) CacheTags::Walker::Streak CacheTags::Walker::miss_streak_bmi2(std::uint64_t addr,
                                                                                              std::uint64_t count,
                                                                                              bool write) const {
  return miss_streak_loop(addr, count, write);
}
#endif

[[gnu::always_inline]] inline CacheTags::Walker::Streak CacheTags::Walker::miss_streak_loop(std::uint64_t addr,
                                                                                           std::uint64_t count,
                                                                                           bool write) const {
  // A copy in locals: the lookups' stores could alias *this as far as the
  // compiler knows (and the count too: the result goes back through memory).
  const Walker w = *this;
  const std::uint64_t block = w.block_bytes();
  const auto walk = [&](auto common) __attribute__((always_inline)) {
    std::uint64_t n = 0;
    for (; n < count; ++n, addr += block) {
      if (!w.miss_whole<true, decltype(common)::value>(w.rec_, addr, write)) {
        return Streak{n, true, w.access_block<true>(w.rec_, addr, write)};
      }
    }
    return Streak{n, false, Run{}};
  };
  return w.common_shape() ? walk(std::true_type{}) : walk(std::false_type{});
}

CacheTags::Walker::Streak CacheTags::Walker::miss_streak_reference(std::uint64_t addr, std::uint64_t count,
                                                                   bool write) const {
  // A block that misses whole and evicts nothing dirty is one miss_whole()
  // allocates; any other is looked up in full, and the streak stops there.
  const std::uint32_t whole = g_.block_lines >= 32 ? ~0u : (1u << g_.block_lines) - 1;
  for (std::uint64_t n = 0; n < count; ++n, addr += block_bytes()) {
    const Run r = access_block<true>(rec_, addr, write);
    if (r.missed != whole || r.dirty_victim()) return Streak{n, true, r};
  }
  return Streak{count, false, Run{}};
}

std::uint64_t CacheTags::set_of(std::uint64_t addr) const {
  const Walker w(g_, nullptr);
  return w.set_of(w.fold(addr >> g_.line_shift >> g_.block_shift));
}

bool CacheTags::contains(std::uint64_t addr) const {
  const Walker w(g_, const_cast<std::uint32_t*>(tags_.data()));  // reads only
  const std::uint64_t line = addr >> g_.line_shift;
  const std::uint64_t h = w.fold(line >> g_.block_shift);
  const std::uint64_t s = w.set_of(h);
  const std::uint64_t key = g_.set_mask != 0 ? h >> g_.set_bits : h / g_.sets;
  if (key >= kEmpty) return false;
  const std::uint32_t* set = &tags_[s * g_.record];
  const std::uint32_t i = w.find(set, static_cast<std::uint32_t>(key));
  return i < g_.ways && (set[g_.ways + i] >> (line & (g_.block_lines - 1)) & 1u) != 0;
}

std::vector<std::uint64_t> CacheTags::clean() {
  std::vector<std::uint64_t> dirty;
  if (!g_.dirty_masks) return dirty;  // (never written: no dirty lines)
  const std::uint32_t ways = g_.ways;
  for (std::uint64_t s = 0; s < g_.sets; ++s) {
    std::uint32_t* set = &tags_[s * g_.record];
    for (std::uint32_t w = 0; w < ways; ++w) {
      std::uint32_t& d = set[2 * ways + w];
      if (d == 0) continue;
      const std::uint64_t first = unfold(g_, std::uint64_t{set[w]} * g_.sets + s) << g_.block_shift;
      for (std::uint32_t m = d; m != 0; m &= m - 1) {
        dirty.push_back((first + static_cast<std::uint32_t>(std::countr_zero(m))) << g_.line_shift);
      }
      d = 0;
    }
  }
  std::sort(dirty.begin(), dirty.end());
  return dirty;
}

}  // namespace tdmsim::sim
