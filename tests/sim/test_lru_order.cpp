// The recency order of the cache tags (sim/mem/lru_order.h) against the ring
// of ways the set records kept before it (a copy below, the reference): the
// same random streams of lookups through both, every answer compared.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <random>
#include <vector>

#include "sim/mem/cache_tags.h"
#include "sim/mem/lru_order.h"

using tdmsim::sim::CacheTags;
using tdmsim::sim::LruOrder;

namespace {

// The set records as CacheTags kept them until 2026-12-03: per set, the ways'
// blocks, valid and dirty masks, and the head of a ring in recency order (most
// recent at the head, the least recent just before it). A miss took the way
// before the head and made it the head; a hit moved the ways on the shorter
// side of the ring by one place (CacheTags::to_front). Blocks are kept as
// their numbers; the set of a block is CacheTags::set_of's.
class RingReference {
 public:
  explicit RingReference(const CacheTags& shape, std::uint32_t ways)
      : ways_(ways), line_(shape.line_bytes()), block_lines_(shape.block_lines()),
        sets_(shape.sets(), Set{std::vector<std::uint64_t>(ways, kEmpty), std::vector<std::uint32_t>(ways, 0),
                                std::vector<std::uint32_t>(ways, 0), 0}) {}

  // CacheTags::access as it was.
  CacheTags::Run access(const CacheTags& shape, std::uint64_t addr, std::uint32_t lines, bool write) {
    const std::uint64_t line = addr / line_;
    const auto first = static_cast<std::uint32_t>(line % block_lines_);
    const std::uint32_t n = std::min(lines, block_lines_ - first);
    const std::uint32_t want = (n >= 32 ? ~0u : (1u << n) - 1) << first;
    const std::uint64_t block = line / block_lines_;
    Set& set = sets_[shape.set_of(addr)];
    CacheTags::Run r;
    std::uint32_t i = static_cast<std::uint32_t>(std::find(set.block.begin(), set.block.end(), block) - set.block.begin());
    if (i == ways_) {
      i = set.head == 0 ? ways_ - 1 : set.head - 1;
      set.head = i;
      if (set.dirty[i] != 0) {
        r.victim = set.block[i] * block_lines_ * line_;
        r.victim_dirty = set.dirty[i];
      }
      set.block[i] = block;
      set.valid[i] = 0;
      set.dirty[i] = 0;
    }
    r.missed = (want & ~set.valid[i]) >> first;
    set.valid[i] |= want;
    if (write) set.dirty[i] |= want;
    if (i != set.head) to_front(set, i, i > set.head ? i - set.head : i + ways_ - set.head);
    return r;
  }

 private:
  static constexpr std::uint64_t kEmpty = ~0ull;
  struct Set {
    std::vector<std::uint64_t> block;
    std::vector<std::uint32_t> valid, dirty;
    std::uint32_t head;
  };
  // The old CacheTags::to_front: way w, k places after the head, becomes the head.
  void to_front(Set& set, std::uint32_t w, std::uint32_t k) const {
    const std::uint32_t ways = ways_;
    const auto next = [ways](std::uint32_t x) { return x + 1 == ways ? 0 : x + 1; };
    const auto prev = [ways](std::uint32_t x) { return x == 0 ? ways - 1 : x - 1; };
    const auto move = [&](std::uint32_t to, std::uint32_t from) {
      set.block[to] = set.block[from];
      set.valid[to] = set.valid[from];
      set.dirty[to] = set.dirty[from];
    };
    const std::uint64_t block = set.block[w];
    const std::uint32_t valid = set.valid[w], dirty = set.dirty[w];
    std::uint32_t at = w;
    if (k <= ways - 1 - k) {
      for (std::uint32_t m = 0; m < k; ++m) {
        const std::uint32_t from = prev(at);
        move(at, from);
        at = from;
      }
    } else {
      const std::uint32_t tail = prev(set.head);
      while (at != tail) {
        const std::uint32_t from = next(at);
        move(at, from);
        at = from;
      }
      set.head = at;
    }
    set.block[at] = block;
    set.valid[at] = valid;
    set.dirty[at] = dirty;
  }

  std::uint32_t ways_, line_, block_lines_;
  std::vector<Set> sets_;
};

void same(const CacheTags::Run& got, const CacheTags::Run& want) {
  REQUIRE(got.missed == want.missed);
  REQUIRE(got.victim == want.victim);
  REQUIRE(got.victim_dirty == want.victim_dirty);
}

}  // namespace

TEST_CASE("LRU order: a hit's move to the front, the misses' rotation, every place and way count", "[cache]") {
  // Against a list in recency order, for each way count of the one-word order
  // and the byte list beyond it: every way hit at every place.
  for (std::uint32_t ways = 1; ways <= 40; ++ways) {
    const LruOrder order(ways);
    std::vector<std::uint32_t> rec(order.words() + 1, 0xDEADBEEFu);  // (the word after it must stay)
    order.init(rec.data());
    std::vector<std::uint32_t> list(ways);
    for (std::uint32_t k = 0; k < ways; ++k) list[k] = k;
    std::mt19937_64 rng(ways);
    for (int step = 0; step < 400; ++step) {
      if (rng() % 3 == 0) {
        const std::uint32_t w = order.take_least_recent(rec.data());
        REQUIRE(w == list.back());
        list.pop_back();
        list.insert(list.begin(), w);
      } else {
        const auto w = static_cast<std::uint32_t>(rng() % ways);
        order.touch(rec.data(), w);
        list.erase(std::find(list.begin(), list.end(), w));
        list.insert(list.begin(), w);
      }
      for (std::uint32_t k = 0; k < ways; ++k) REQUIRE(order.at_place(rec.data(), k) == list[k]);
      REQUIRE(order.least_recent(rec.data()) == list.back());
      REQUIRE(rec.back() == 0xDEADBEEFu);
    }
    if (ways == 16) {  // the 16-way forms the stream loops use
      const std::uint32_t before = order.least_recent(rec.data());
      REQUIRE(LruOrder::least_recent16(rec.data()) == before);
      LruOrder::take_least_recent16(rec.data());
      REQUIRE(order.at_place(rec.data(), 0) == before);
    }
  }
}

TEST_CASE("LRU order: the tags answer as the old ring of ways on random streams", "[cache]") {
  struct Shape {
    std::uint64_t size;
    std::uint32_t ways, block_lines;
  };
  // The shipped shape (16 ways, 32-line blocks, power-of-two sets), sets not a
  // power of two, per-line tags, and way counts below and above the one-word order.
  for (const Shape sh : {Shape{1 << 20, 16, 32}, Shape{768 << 10, 16, 32}, Shape{256 << 10, 16, 1},
                         Shape{96 << 10, 12, 4}, Shape{64 << 10, 1, 8}, Shape{80 << 10, 5, 8},
                         Shape{1 << 20, 24, 32}, Shape{256 << 10, 64, 2}}) {
    CacheTags tags(sh.size, 128, sh.ways, sh.block_lines);
    RingReference ref(tags, sh.ways);
    const std::uint64_t block = tags.block_bytes();
    const std::uint32_t lines = tags.block_lines();
    const std::uint32_t whole = lines >= 32 ? ~0u : (1u << lines) - 1;
    const std::uint64_t span = 6 * sh.size / block;  // several times the capacity: hits, misses, victims
    std::mt19937_64 rng(sh.ways * 1000 + sh.block_lines);
    INFO("ways " << sh.ways << ", block lines " << lines << ", sets " << tags.sets());
    for (int step = 0; step < 60000; ++step) {
      // Mostly a small hot region (hits deep in the order), sometimes anywhere.
      const std::uint64_t b = rng() % 4 == 0 ? rng() % span : rng() % (span / 8 + 1);
      const bool write = rng() % 3 == 0;
      const int kind = static_cast<int>(rng() % 4);
      if (kind == 0) {  // a partial run
        const auto first = static_cast<std::uint32_t>(rng() % lines);
        const auto n = static_cast<std::uint32_t>(1 + rng() % (lines - first));
        const std::uint64_t addr = b * block + first * 128;
        same(tags.access(addr, n, write), ref.access(tags, addr, n, write));
      } else if (kind == 1) {  // a whole block, looked up as one
        same(tags.walker().access_block(b * block, write), ref.access(tags, b * block, lines, write));
      } else if (kind == 2) {  // a stream of whole blocks
        const std::uint64_t count = rng() % 24;
        const CacheTags::Walker::Streak st = tags.walker().miss_streak(b * block, count, write);
        std::uint64_t n = 0;
        for (; n < st.missed_whole; ++n) {
          const CacheTags::Run r = ref.access(tags, (b + n) * block, lines, write);
          REQUIRE(r.missed == whole);
          REQUIRE_FALSE(r.dirty_victim());
        }
        if (st.stopped) {
          same(st.next, ref.access(tags, (b + n) * block, lines, write));
        } else {
          REQUIRE(n == count);
        }
      } else {  // a read of a block no lookup wrote: both arrays see it as a read
        same(tags.access(b * block, lines, false), ref.access(tags, b * block, lines, false));
      }
    }
    // Then every block once more, read in order: the same hits and dirty victims.
    for (std::uint64_t b = 0; b < span; ++b) {
      same(tags.access(b * block, lines, false), ref.access(tags, b * block, lines, false));
    }
  }
}
