// CacheTags: LRU behaviour, dirty victims and set spread, as properties.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <random>
#include <stdexcept>
#include <vector>

#include "sim/mem/cache_tags.h"

using tdmsim::sim::CacheTags;

namespace {
// One line through the run interface: hit or not.
bool hit(CacheTags& c, std::uint64_t addr, bool write = false) {
  return c.access(addr, 1, write).missed == 0;
}
// One line written; the dirty lines its eviction wrote back (if any) are appended.
void write_line(CacheTags& c, std::uint64_t addr, std::vector<std::uint64_t>& back) {
  const auto r = c.access(addr, 1, true);
  if (!r.dirty_victim()) return;
  tdmsim::sim::for_each_bit_run(r.victim_dirty, [&](std::uint32_t first, std::uint32_t len) {
    for (std::uint32_t i = 0; i < len; ++i) back.push_back(r.victim + (first + i) * std::uint64_t{c.line_bytes()});
  });
}
}  // namespace

TEST_CASE("a footprint that fits hits on the second pass", "[cache]") {
  CacheTags c(1 << 20, 128, 16);  // 1 MiB
  const std::uint64_t footprint = 512 << 10;
  for (std::uint64_t a = 0; a < footprint; a += 128) CHECK_FALSE(hit(c, a));
  std::uint64_t hits = 0;
  for (std::uint64_t a = 0; a < footprint; a += 128) hits += hit(c, a) ? 1 : 0;
  // Hashed sets fill unevenly: allow a few conflict misses, no more.
  CHECK(hits >= footprint / 128 * 97 / 100);
}

TEST_CASE("a stream twice the capacity never hits under LRU", "[cache]") {
  CacheTags c(1 << 20, 128, 16);
  const std::uint64_t footprint = 2 << 20;
  for (int pass = 0; pass < 2; ++pass) {
    std::uint64_t hits = 0;
    for (std::uint64_t a = 0; a < footprint; a += 128) hits += hit(c, a) ? 1 : 0;
    CHECK(hits < footprint / 128 / 50);
  }
}

TEST_CASE("dirty lines come back once as victims, and clean() keeps lines valid", "[cache]") {
  CacheTags c(64 << 10, 128, 4);
  const std::uint64_t lines = (64 << 10) / 128;
  std::vector<std::uint64_t> back;  // dirty lines evicted by uneven set filling
  for (std::uint64_t i = 0; i < lines / 2; ++i) write_line(c, i * 128, back);
  const std::uint64_t early = back.size();
  CHECK(early + c.clean().size() == lines / 2);  // each dirty line is written back exactly once
  CHECK(c.clean().empty());
  std::uint64_t hits = 0;
  for (std::uint64_t i = 0; i < lines / 2; ++i) hits += hit(c, i * 128) ? 1 : 0;
  CHECK(hits + early >= lines / 2 * 95 / 100);
  // Overwrite everything with a new region: evictions of clean lines are silent.
  std::uint64_t victims = 0;
  for (std::uint64_t i = 0; i < 4 * lines; ++i) victims += c.access((1 << 24) + i * 128, 1, false).dirty_victim() ? 1 : 0;
  CHECK(victims == 0);
}

TEST_CASE("sequential and power-of-two-strided lines spread evenly over sets", "[cache]") {
  CacheTags c(4 << 20, 128, 16);
  for (std::uint64_t stride : {128ull, 4096ull, 1ull << 20}) {
    std::vector<std::uint64_t> count(c.sets(), 0);
    const std::uint64_t n = c.sets() * 16;
    for (std::uint64_t i = 0; i < n; ++i) ++count[c.set_of(i * stride)];
    const auto [mn, mx] = std::minmax_element(count.begin(), count.end());
    INFO("stride " << stride << ": min " << *mn << " max " << *mx);
    CHECK(*mx <= 3 * 16);
    CHECK(*mn >= 2);
  }
}

TEST_CASE("written-back victims name exactly the lines written, in any set geometry", "[cache]") {
  // Power-of-two sets (MI300X L2) and a non-power-of-two count (H200's 60 MiB
  // L2 has 30720 sets): keys are folded and unfolded differently.
  for (std::uint64_t size : {std::uint64_t{4} << 20, std::uint64_t{60} << 20}) {
    CacheTags c(size, 128, 16);
    std::vector<std::uint64_t> written;
    std::uint64_t x = 12345;
    for (int i = 0; i < 2000; ++i) {  // scattered lines up to ~1 TiB
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      written.push_back((x >> 24) & ~std::uint64_t{127});
    }
    std::vector<std::uint64_t> back;
    for (auto a : written) write_line(c, a, back);
    for (auto a : c.clean()) back.push_back(a);
    std::sort(written.begin(), written.end());
    written.erase(std::unique(written.begin(), written.end()), written.end());
    std::sort(back.begin(), back.end());
    INFO("cache of " << size << " bytes");
    CHECK(back == written);
  }
}

TEST_CASE("a sectored block: hits and misses per line, one tag per block", "[cache]") {
  CacheTags c(1 << 20, 128, 16, 32);  // 4 KiB blocks
  REQUIRE(c.block_lines() == 32);
  CHECK(c.lines_to_block_end(4096 + 5 * 128) == 27);
  // Lines 2..5 of a block miss, then lines 0..7: only 0, 1, 6, 7 miss.
  CHECK(c.access(4096 + 2 * 128, 4, false).missed == 0xFu);
  CHECK(c.access(4096, 8, false).missed == 0b11000011u);
  CHECK(c.contains(4096 + 7 * 128));
  CHECK_FALSE(c.contains(4096 + 8 * 128));
  // Dirty lines come back as the block's mask when it is evicted.
  CHECK(c.access(1 << 24, 2, true).missed == 0x3u);
  std::vector<std::uint64_t> back;
  for (std::uint64_t b = 1; b < 4096; ++b) {
    const auto r = c.access((1 << 24) + b * 4096, 32, false);
    if (r.dirty_victim()) {
      back.push_back(r.victim);
      CHECK(r.victim_dirty == 0x3u);
    }
  }
  CHECK(back == std::vector<std::uint64_t>{1 << 24});
  // A run that covers a whole block streamed twice the capacity never hits.
  std::uint64_t hits = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (std::uint64_t b = 0; b < 512; ++b) hits += 32 - std::popcount(c.access((1ull << 30) + b * 4096, 32, false).missed);
  }
  CHECK(hits == 0);
}

TEST_CASE("a cache whose lines per way are not a multiple of the block keeps the block", "[cache]") {
  // One MALL slice of a 256 MiB, 12-stack part (128 B tag lines, 16 ways):
  // 10922 lines per way. The sets are rounded down (341 of 32 lines) rather
  // than the block halved to 2 lines.
  CacheTags slice((256ull << 20) / 12, 128, 16, 32);
  CHECK(slice.block_lines() == 32);
  CHECK(slice.sets() == 341);
  // A small cache cannot afford the rounding: the block is halved.
  CacheTags small(48 * 128 * 4, 128, 4, 32);  // 48 lines per way
  CHECK(small.block_lines() == 16);
  CHECK(small.sets() == 3);
}

TEST_CASE("records_bytes gives the bytes an array of those parameters allocates", "[cache][limits]") {
  // What a run's host-memory estimate counts for the L2's and MALL's tags
  // (sim/platform/host_memory.cpp), against the arrays themselves: with and
  // without dirty masks, blocks kept or halved, sets rounded down, few and
  // many ways.
  struct Shape {
    std::uint64_t bytes;
    std::uint32_t line, ways, block_lines;
  };
  for (const Shape sh : {Shape{4 << 20, 128, 16, 32}, Shape{(256ull << 20) / 12, 128, 16, 32},
                         Shape{48 * 128 * 4, 128, 4, 32}, Shape{50 << 20, 128, 24, 32}, Shape{1 << 16, 64, 2, 1},
                         Shape{3 << 20, 256, 12, 8}}) {
    for (const auto writes : {CacheTags::Writes::some, CacheTags::Writes::never}) {
      const CacheTags t(sh.bytes, sh.line, sh.ways, sh.block_lines, writes);
      CHECK(CacheTags::records_bytes(sh.bytes, sh.line, sh.ways, sh.block_lines, writes) == t.allocated_bytes());
    }
    // Records without dirty masks are ways words a set shorter.
    const CacheTags some(sh.bytes, sh.line, sh.ways, sh.block_lines);
    CHECK(CacheTags::records_bytes(sh.bytes, sh.line, sh.ways, sh.block_lines, CacheTags::Writes::never) ==
          some.allocated_bytes() - some.sets() * sh.ways * 4);
  }
  // No whole set: nothing (the constructor refuses it).
  CHECK(CacheTags::records_bytes(1000, 128, 16, 32, CacheTags::Writes::some) == 0);
  CHECK(CacheTags::records_bytes(1 << 20, 96, 16, 32, CacheTags::Writes::some) == 0);
  CHECK_THROWS_AS(CacheTags(1 << 20, 96, 16, 32), std::invalid_argument);
  // Beyond 2^64 bytes: saturated.
  CHECK(CacheTags::records_bytes(~0ull, 1, 1, 1, CacheTags::Writes::some) == ~0ull);
}

TEST_CASE("one set is an exact LRU list: hits, misses and victims as a reference list says", "[cache]") {
  // One set (capacity = ways lines) with odd and even way counts, so the
  // recency ring wraps at every place and hits move either side of it.
  for (const std::uint32_t ways : {5u, 16u}) {
    CacheTags c(std::uint64_t{128} * ways, 128, ways);
    REQUIRE(c.sets() == 1);
    std::vector<std::uint64_t> lru;  // most recent first
    std::uint64_t x = 12345;
    for (int step = 0; step < 20000; ++step) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;  // LCG: a fixed sequence
      const std::uint64_t block = (x >> 33) % (ways + 3);         // a few more blocks than ways
      const std::uint64_t addr = block * 128;
      const auto it = std::find(lru.begin(), lru.end(), addr);
      const bool ref_hit = it != lru.end();
      std::uint64_t ref_victim = CacheTags::kNoVictim;
      if (ref_hit) {
        lru.erase(it);
      } else if (lru.size() == ways) {
        ref_victim = lru.back();
        lru.pop_back();
      }
      lru.insert(lru.begin(), addr);
      const auto r = c.access(addr, 1, true);  // written: every victim is dirty
      REQUIRE((r.missed == 0) == ref_hit);
      REQUIRE(r.victim == ref_victim);
    }
  }
}

TEST_CASE("a whole-block lookup does what a run lookup of the whole block does", "[cache]") {
  // Two arrays, the same accesses: whole blocks through access_block() in one,
  // through access() in the other, mixed with partial runs, reads and writes.
  for (const std::uint32_t block_lines : {32u, 8u}) {
    CacheTags a(256 << 10, 128, 16, block_lines), b(256 << 10, 128, 16, block_lines);
    const std::uint64_t block = std::uint64_t{128} * block_lines;
    std::uint64_t x = 777;
    for (int step = 0; step < 50000; ++step) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      const std::uint64_t addr = ((x >> 20) % 4096) * block;  // 4x the capacity: hits, misses, victims
      const bool write = ((x >> 11) & 3) == 0;
      if (((x >> 13) & 7) == 0) {  // a partial run in both
        const auto first = static_cast<std::uint32_t>((x >> 40) % block_lines);
        const auto n = static_cast<std::uint32_t>(1 + (x >> 45) % (block_lines - first));
        const auto ra = a.access(addr + first * 128, n, write), rb = b.access(addr + first * 128, n, write);
        REQUIRE(ra.missed == rb.missed);
        REQUIRE(ra.victim == rb.victim);
        continue;
      }
      const auto ra = a.walker().access_block(addr, write);
      const auto rb = b.access(addr, block_lines, write);
      REQUIRE(ra.missed == rb.missed);
      REQUIRE(ra.victim == rb.victim);
      REQUIRE(ra.victim_dirty == rb.victim_dirty);
    }
    CHECK(a.clean() == b.clean());
  }
}

TEST_CASE("an array never written keeps no dirty masks and answers as one with them that is only read",
          "[cache][host]") {
  // The MALL's arrays (CacheTags::Writes::never): the lookups for arrays
  // never written, on records without dirty masks, against the general
  // lookups on an array with them, the same reads. Every answer, and every
  // set's keys, valid masks and order, the same. Shapes: the common one (16
  // ways, 32-line blocks, a power of two of sets: its constants compiled in)
  // and others (fewer ways, shorter blocks, sets not a power of two).
  struct Shape {
    std::uint64_t bytes;
    std::uint32_t ways, block_lines;
  };
  for (const Shape sh : {Shape{1 << 20, 16, 32}, Shape{3 << 18, 16, 32}, Shape{1 << 18, 8, 8}, Shape{3 << 16, 4, 4}}) {
    CacheTags n(sh.bytes, 128, sh.ways, sh.block_lines, CacheTags::Writes::never);
    CacheTags w(sh.bytes, 128, sh.ways, sh.block_lines);
    const std::uint32_t order_words = static_cast<std::uint32_t>(w.record_words()) - 3 * sh.ways;
    REQUIRE(n.record_words() == 2 * sh.ways + order_words);
    CacheTags::Walker wn = n.walker(), ww = w.walker();
    const bool common = wn.common_shape();
    REQUIRE(common == (sh.bytes == (1 << 20)));
    const std::uint64_t block = std::uint64_t{128} * sh.block_lines;
    const std::uint64_t blocks = 4 * sh.bytes / block;  // four times the capacity: evictions
    std::uint64_t x = sh.bytes + sh.ways;
    for (int step = 0; step < 60000; ++step) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      const std::uint64_t addr = ((x >> 20) % blocks) * block;
      const auto kind = (x >> 13) & 3;
      if (kind == 0) {  // a partial run
        const auto first = static_cast<std::uint32_t>((x >> 40) % sh.block_lines);
        const auto lines = static_cast<std::uint32_t>(1 + (x >> 45) % (sh.block_lines - first));
        const auto rn = wn.read_never_written(addr + first * 128, lines);
        const auto rw = ww.access(addr + first * 128, lines, false);
        REQUIRE(rn.missed == rw.missed);
        REQUIRE(!rn.dirty_victim());
        REQUIRE(!rw.dirty_victim());
      } else if (kind == 1) {  // a whole block
        const auto rn = wn.read_block_never_written(wn.records(), addr);
        const auto rw = ww.access_block(addr, false);
        REQUIRE(rn.missed == rw.missed);
        REQUIRE(!rn.dirty_victim());
      } else if (kind == 2) {  // a stream's block (miss_whole, as the chunk streaks)
        const bool mn = common ? wn.miss_whole<false, true>(wn.records(), addr, false)
                               : wn.miss_whole<false>(wn.records(), addr, false);
        const bool mw = ww.miss_whole<true>(ww.records(), addr, false);
        REQUIRE(mn == mw);
        if (!mn) REQUIRE(wn.read_block_never_written(wn.records(), addr).missed == ww.access_block(addr, false).missed);
      } else {
        REQUIRE(n.contains(addr + ((x >> 40) % sh.block_lines) * 128) ==
                w.contains(addr + ((x >> 40) % sh.block_lines) * 128));
      }
    }
    // The records: keys, valid masks and order alike; none has dirty lines.
    for (std::uint64_t s = 0; s < n.sets(); ++s) {
      const std::uint32_t* rn = wn.records() + s * n.record_words();
      const std::uint32_t* rw = ww.records() + s * w.record_words();
      for (std::uint32_t i = 0; i < 2 * sh.ways; ++i) REQUIRE(rn[i] == rw[i]);
      for (std::uint32_t i = 0; i < sh.ways; ++i) REQUIRE(rw[2 * sh.ways + i] == 0);
      for (std::uint32_t i = 0; i < order_words; ++i) REQUIRE(rn[2 * sh.ways + i] == rw[3 * sh.ways + i]);
    }
    CHECK(n.clean().empty());
    CHECK(w.clean().empty());
  }
}

TEST_CASE("unfold inverts fold in its few shifts as the fixed-point rounds do", "[cache][host]") {
  std::mt19937_64 rng(23);
  for (std::uint32_t k = 0; k < 32; ++k) {  // (2k below 64: fold shifts by it)
    CacheTags::Geometry g;
    g.set_bits = k;
    for (int i = 0; i < 2000; ++i) {
      // Random words, and words as a cache's keys make them (32-bit key,
      // set below it).
      const std::uint64_t h = i % 2 == 0 ? rng() : (rng() & 0xFFFFFFFFull) << k | (rng() & ((1ull << k) - 1));
      const std::uint64_t x = CacheTags::unfold(g, h);
      REQUIRE(x == CacheTags::unfold_reference(g, h));
      // fold(x) = h: x ^ (x >> k) ^ (x >> 2k), as Walker::fold.
      const std::uint64_t back = k == 0 ? x : x ^ (x >> k) ^ (x >> (2 * k));
      REQUIRE(back == h);
    }
  }
}
