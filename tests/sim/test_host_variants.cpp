// Host-speed machinery: every version this build contains (scalar, SSE2,
// AVX2, BMI2) that the host can run gives what its plain reference gives, on
// random and edge-case inputs. A version the host cannot run is skipped, and
// each case says (WARN) which ran.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <systemc>

#include "sim/core/host_isa.h"
#include "sim/mem/cache_tags.h"
#include "sim/mem/channel_count.h"
#include "sim/mem/mall_streak.h"
#include "sim/mem/run_merge.h"
#include "sim/mem/tag_search.h"

using namespace tdmsim;
using namespace tdmsim::sim;

namespace {

std::vector<bool> bmi2_run() {
  WARN("BMI2 versions " << (host_has_bmi2() ? "run" : "skipped (not built or not on this host)"));
  return host_has_bmi2() ? std::vector<bool>{false, true} : std::vector<bool>{false};
}

// The records of a tag array (sets x (3 x ways + 1) words), for comparing two.
std::vector<std::uint32_t> records_of(CacheTags& t, std::uint32_t /*ways*/) {
  const std::uint32_t* r = t.walker().records();
  return std::vector<std::uint32_t>(r, r + t.sets() * t.record_words());
}

// Two lookups gave the same answer: lines missed, dirty victim and its lines.
void require_same_run(const CacheTags::Run& x, const CacheTags::Run& y) {
  REQUIRE(x.missed == y.missed);
  REQUIRE(x.victim == y.victim);
  REQUIRE(x.victim_dirty == y.victim_dirty);
}

}  // namespace

TEST_CASE("tag search: the SSE2 key search finds what the scalar one finds", "[host]") {
  std::mt19937_64 rng(1);
  std::vector<std::uint32_t> keys(40);
  int versions = 1;
#if defined(__SSE2__)
  versions = 2;
#endif
  WARN("tag search versions run: scalar" << (versions == 2 ? " sse2" : " (sse2 not built)"));
  for (int trial = 0; trial < 20000; ++trial) {
    const auto ways = static_cast<std::uint32_t>(1 + rng() % 33);
    // Few distinct keys (duplicates: the first wins), the empty key among them.
    for (auto& k : keys) k = rng() % 5 == 0 ? 0xFFFFFFFFu : static_cast<std::uint32_t>(rng() % (2 * ways + 1));
    const auto key = rng() % 7 == 0 ? 0xFFFFFFFFu : static_cast<std::uint32_t>(rng() % (2 * ways + 1));
    const std::uint32_t want = find_way_scalar(keys.data(), ways, key);
    REQUIRE(want <= ways);
    REQUIRE((want == ways || keys[want] == key));
    REQUIRE(find_way(keys.data(), ways, key) == want);
    const bool in16 = find_way_scalar(keys.data(), 16, key) != 16;
    REQUIRE(has_key16_scalar(keys.data(), key) == in16);
    REQUIRE(has_key16(keys.data(), key) == in16);
#if defined(__SSE2__)
    REQUIRE(find_way_sse2(keys.data(), ways, key) == want);
    REQUIRE(has_key16_sse2(keys.data(), key) == in16);
#endif
  }
}

TEST_CASE("run merging: bit runs and bit counts and appended runs match their references", "[host]") {
  std::mt19937_64 rng(2);
  std::vector<std::uint32_t> masks = {0u, ~0u, 1u, 0x80000000u, 0x55555555u, 0xAAAAAAAAu, 0x7FFFFFFFu, 0xFFFFFFFEu,
                                      0x0000FFFFu, 0xFFFF0000u, 0x80000001u, 3u, 0xC0000000u};
  for (int i = 0; i < 20000; ++i) {
    const auto len = static_cast<std::uint32_t>(rng() % 33), first = static_cast<std::uint32_t>(rng() % 32);
    const std::uint32_t run = len >= 32 ? ~0u : ((1u << len) - 1) << first;  // a run (from bit 0 often)
    masks.push_back(i % 2 == 0 ? static_cast<std::uint32_t>(rng()) : run);
  }
  for (const std::uint32_t m : masks) {
    std::vector<std::pair<std::uint32_t, std::uint32_t>> got, want;
    for_each_bit_run(m, [&](std::uint32_t f, std::uint32_t n) { got.emplace_back(f, n); });
    for_each_bit_run_reference(m, [&](std::uint32_t f, std::uint32_t n) { want.emplace_back(f, n); });
    REQUIRE(got == want);
    REQUIRE(count_bits(m) == count_bits_reference(m));
    REQUIRE(CacheTags::count(m) == count_bits_reference(m));
  }
  // Runs of lines as a cache's walk appends them: touching, gaps, repeats.
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<ByteRun> got, want;
    RunAppender runs(got);
    std::uint64_t at = (rng() % 64) * 128;
    const int n = static_cast<int>(rng() % 40);
    for (int k = 0; k < n; ++k) {
      const std::uint64_t bytes = (1 + rng() % 64) * 128;
      if (rng() % 3 == 0) at += (rng() % 4) * 128;  // a gap (or none)
      if (rng() % 8 == 0) at = (rng() % 64) * 128;  // elsewhere
      runs.add(at, bytes);
      append_run(want, at, bytes);
      if (rng() % 10 == 0) {  // flushed midway, as the MALL's loop does
        runs.flush();
        const std::uint64_t b = 128;
        got.push_back({at + bytes + 4096, b});
        want.push_back({at + bytes + 4096, b});
      }
      at += bytes;
    }
    runs.flush();
    REQUIRE(got.size() == want.size());
    for (std::size_t k = 0; k < got.size(); ++k) {
      REQUIRE(got[k].addr == want[k].addr);
      REQUIRE(got[k].bytes == want[k].bytes);
    }
  }
}

TEST_CASE("run merging: collected runs are appended runs, kept apart from the list's earlier runs", "[host]") {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 4000; ++trial) {
    // The list already holds a batch's earlier runs, the last of them
    // touching the first run collected now: never merged into it.
    std::uint64_t at = (rng() % 64) * 128;
    std::vector<ByteRun> got, want;
    if (rng() % 2 == 0) got.push_back({at - 256, 256});
    want = got;
    std::vector<ByteRun> alone;  // the runs appended to an empty list
    RunCollector runs(got);
    const int n = static_cast<int>(rng() % 40);
    for (int k = 0; k < n; ++k) {
      const std::uint64_t bytes = (1 + rng() % 64) * 128;
      if (rng() % 3 == 0) at += (rng() % 4) * 128;  // a gap (or none)
      if (rng() % 8 == 0) at = (rng() % 64) * 128;  // elsewhere
      runs.add(at, bytes);
      append_run(alone, at, bytes);
      at += bytes;
    }
    runs.flush();
    want.insert(want.end(), alone.begin(), alone.end());
    REQUIRE(got.size() == want.size());
    for (std::size_t k = 0; k < got.size(); ++k) {
      REQUIRE(got[k].addr == want[k].addr);
      REQUIRE(got[k].bytes == want[k].bytes);
    }
  }
}

TEST_CASE("tag streaks: the baseline and BMI2 loops do what block-by-block lookups do", "[host]") {
  const auto bmi2 = bmi2_run();
  struct Shape {
    std::uint64_t size;
    std::uint32_t ways, block_lines;
  };
  // The common shape (16 ways, 32-line blocks, power-of-two sets), and others.
  for (const Shape sh : {Shape{1 << 20, 16, 32}, Shape{1 << 20, 8, 32}, Shape{768 << 10, 16, 32},
                         Shape{256 << 10, 16, 8}, Shape{96 << 10, 12, 4}}) {
    CacheTags ref(sh.size, 128, sh.ways, sh.block_lines);
    const std::uint64_t block = ref.block_bytes();
    const std::uint64_t span = 8 * sh.size / block;  // blocks: several times the capacity
    std::mt19937_64 rng(sh.ways * 100 + sh.block_lines);
    std::vector<CacheTags> v(bmi2.size(), ref);
    for (int trial = 0; trial < 3000; ++trial) {
      const std::uint64_t addr = (rng() % span) * block;
      const std::uint64_t count = rng() % 48;
      const bool write = rng() % 3 == 0;
      if (rng() % 4 == 0) {  // a partial run elsewhere (reads and writes: dirty victims later)
        const std::uint64_t a = (rng() % span) * block + (rng() % sh.block_lines) * 128;
        const auto n = static_cast<std::uint32_t>(1 + rng() % sh.block_lines);
        const auto want = ref.access(a, std::min(n, ref.lines_to_block_end(a)), write);
        for (auto& t : v) REQUIRE(t.access(a, std::min(n, t.lines_to_block_end(a)), write).missed == want.missed);
      }
      const CacheTags::Walker::Streak want = ref.walker().miss_streak_reference(addr, count, write);
      for (std::size_t k = 0; k < v.size(); ++k) {
        const CacheTags::Walker w = v[k].walker();
        CacheTags::Walker::Streak got;
#if TDMSIM_X86_VARIANTS
        got = bmi2[k] ? w.miss_streak_bmi2(addr, count, write) : w.miss_streak_base(addr, count, write);
#else
        got = w.miss_streak_base(addr, count, write);
#endif
        REQUIRE(got.missed_whole == want.missed_whole);
        REQUIRE(got.stopped == want.stopped);
        REQUIRE(got.next.missed == want.next.missed);
        REQUIRE(got.next.victim == want.next.victim);
        REQUIRE(got.next.victim_dirty == want.next.victim_dirty);
      }
    }
    const auto want = records_of(ref, sh.ways);
    for (auto& t : v) REQUIRE(records_of(t, sh.ways) == want);
  }
}

TEST_CASE("MALL chunk streaks: the baseline and BMI2 loops do what chunk-by-chunk lookups do", "[host]") {
  const auto bmi2 = bmi2_run();
  // Slices of one geometry over a map of 4 stacks; power-of-two divisors and
  // not; 16 sets a slice (the pow2 streak's runs of 8 chunks share one hash)
  // and 4 (too few sets for that: the chunk-by-chunk walk).
  for (const bool pow2 : {true, false}) for (const std::uint64_t slice_bytes : {1u << 20, 1u << 18}) {
    const std::uint32_t stacks = 4, channels = pow2 ? 32 : 24;
    const HbmAddressMap map(4096, channels, 16, 2048);
    const Divisor per_stack(channels / stacks);
    REQUIRE(map.pow2() == pow2);
    std::vector<std::vector<CacheTags>> arrays(1 + bmi2.size(), std::vector<CacheTags>(stacks, CacheTags(slice_bytes, 128, 16, 32, CacheTags::Writes::never)));
    std::mt19937_64 rng(pow2 ? 5 : 6);
    const std::uint64_t span = 4 * stacks * (1 << 20) / 4096;
    for (int trial = 0; trial < 3000; ++trial) {
      const std::uint64_t addr = (rng() % span) * 4096, count = rng() % 40;
      std::vector<ChunkStreak> got;
      for (std::size_t k = 0; k < arrays.size(); ++k) {
        std::vector<std::uint32_t*> records;
        for (auto& t : arrays[k]) records.push_back(t.walker().records());
        const CacheTags::Walker w = arrays[k].front().walker();
        const auto run = [&](auto p) {
          constexpr bool P = decltype(p)::value;
          if (k == 0) return chunk_streak_reference<P>(map, per_stack, w, records.data(), addr, count);
#if TDMSIM_X86_VARIANTS
          if (bmi2[k - 1]) return chunk_streak_bmi2<P>(map, per_stack, w, records.data(), addr, count);
#endif
          return chunk_streak_base<P>(map, per_stack, w, records.data(), addr, count);
        };
        got.push_back(pow2 ? run(std::true_type{}) : run(std::false_type{}));
      }
      for (std::size_t k = 1; k < got.size(); ++k) {
        REQUIRE(got[k].missed_whole == got[0].missed_whole);
        REQUIRE(got[k].stopped == got[0].stopped);
        REQUIRE(got[k].slice == got[0].slice);
        REQUIRE(got[k].next.missed == got[0].next.missed);
      }
    }
    for (std::size_t k = 1; k < arrays.size(); ++k) {
      for (std::uint32_t s = 0; s < stacks; ++s) REQUIRE(records_of(arrays[k][s], 16) == records_of(arrays[0][s], 16));
    }
  }
}

TEST_CASE("channel counts: runs of lines are counted as line by line with channel_of", "[host]") {
  std::mt19937_64 rng(3);
  for (const std::size_t channels : {16u, 8u, 32u, 12u}) {
    const ChannelCounter c(channels);
    for (int trial = 0; trial < 4000; ++trial) {
      // Runs aligned to whole groups of `channels` lines or not, of any length.
      const std::uint64_t line = rng() % 3 == 0 ? (rng() % 100000) * channels : rng() % 10000000;
      const std::uint64_t n = rng() % 3 == 0 ? (1 + rng() % 8) * channels : rng() % 200;
      std::vector<std::uint32_t> want(channels, 0), got(channels, 0);
      for (std::uint64_t l = line; l < line + n; ++l) ++want[c.channel_of(l)];
      std::uint64_t every = 0;
      c.count_lines(line, n, got.data(), every);
      for (auto& k : got) k += static_cast<std::uint32_t>(every);
      REQUIRE(got == want);
    }
  }
}

TEST_CASE("channel counts: runs counted in aligned pieces as count_lines counts them", "[host]") {
  std::mt19937_64 rng(4);
  for (const std::size_t channels : {16u, 8u, 32u, 64u, 1u, 2u, 12u}) {
    const ChannelCounter c(channels);
    for (int trial = 0; trial < 4000; ++trial) {
      // Several runs into one count, as an access's rows: whole groups,
      // aligned pieces (a gathered row's part-block) and any runs.
      std::vector<std::uint32_t> want(channels, 0), got(channels, 0);
      std::uint64_t want_every = 0, every = 0;
      const int runs = 1 + static_cast<int>(rng() % 6);
      for (int k = 0; k < runs; ++k) {
        const std::uint64_t pick = rng() % 4;
        const std::uint64_t line = pick == 0   ? (rng() % 100000) * channels
                                   : pick == 1 ? (rng() % 100000) * 8
                                               : rng() % 10000000;
        const std::uint64_t n = pick == 0 ? (1 + rng() % 8) * channels : pick == 1 ? 8 * (1 + rng() % 4) : rng() % 200;
        c.count_lines(line, n, want.data(), want_every);
        c.count_lines_pieces(line, n, got.data(), every);
      }
      REQUIRE(every == want_every);
      REQUIRE(got == want);
    }
  }
}

TEST_CASE("channel counts: the channels with lines found four at a time as one by one", "[host]") {
  std::mt19937_64 rng(5);
  for (const std::size_t channels : {16u, 64u, 32u, 8u, 4u, 12u, 2u, 1u, 3u}) {
    for (int trial = 0; trial < 2000; ++trial) {
      // Sparse counts (a few lines' channels), dense ones and all zero.
      std::vector<std::uint32_t> counts(channels, 0);
      const std::uint64_t fill = rng() % 4;
      for (auto& k : counts) {
        if (fill == 3 || rng() % (2 + fill * 4) == 0) k = static_cast<std::uint32_t>(rng() % 3 == 0 ? rng() : 1);
      }
      if (trial == 0) std::fill(counts.begin(), counts.end(), 0u);
      REQUIRE(ChannelCounter::nonzero(counts.data(), channels) == ChannelCounter::nonzero_reference(counts.data(), channels));
    }
  }
}

TEST_CASE("tag lookups: access_resident answers and changes what access does", "[host]") {
  std::mt19937_64 rng(5);
  // An L2's shape (32-line blocks) and an L1's (one line, 4 ways), on random
  // runs over a range a few times the capacity.
  struct Shape {
    std::uint64_t bytes;
    std::uint32_t ways, block_lines;
  };
  for (const Shape sh : {Shape{1u << 20, 16, 32}, Shape{32u << 10, 4, 1}, Shape{48u << 10, 8, 8}}) {
    CacheTags a(sh.bytes, 128, sh.ways, sh.block_lines), b(sh.bytes, 128, sh.ways, sh.block_lines);
    CacheTags::Walker wa = a.walker(), wb = b.walker();
    for (int i = 0; i < 200000; ++i) {
      const std::uint64_t addr = (rng() % (4 * sh.bytes)) & ~std::uint64_t{127};
      const auto lines = static_cast<std::uint32_t>(1 + rng() % 40);
      const bool write = rng() % 4 == 0;
      const CacheTags::Run x = wa.access(addr, lines, write);
      const CacheTags::Run y = wb.access_resident(addr, lines, write);
      require_same_run(x, y);
    }
    REQUIRE(records_of(a, sh.ways) == records_of(b, sh.ways));
  }
}

TEST_CASE("tag lookups: access_common answers and changes what access_resident does", "[host]") {
  std::mt19937_64 rng(8);
  // The common shape (16 ways, a power of two of sets, 32-line blocks): an
  // MI355X L2's and a smaller one, on runs of any part of a block (a gathered
  // row's ends) over a range a few times the capacity; writes leave dirty
  // victims behind.
  for (const std::uint64_t bytes : {std::uint64_t{4} << 20, std::uint64_t{256} << 10}) {
    CacheTags a(bytes, 128, 16, 32), b(bytes, 128, 16, 32);
    CacheTags::Walker wa = a.walker(), wb = b.walker();
    REQUIRE(wb.common_shape());
    for (int i = 0; i < 200000; ++i) {
      const std::uint64_t addr =
          ((rng() % (4 * bytes)) & ~std::uint64_t{127}) + (rng() % 8 == 0 ? (rng() % 4096) << 24 : 0);
      const auto lines = static_cast<std::uint32_t>(1 + rng() % 40);
      const bool write = rng() % 4 == 0;
      const CacheTags::Run x = wa.access_resident(addr, lines, write);
      const CacheTags::Run y = wb.access_common(addr, lines, write);
      require_same_run(x, y);
    }
    REQUIRE(records_of(a, 16) == records_of(b, 16));
  }
}

TEST_CASE("tag lookups: access_block_common answers and changes what access_block does", "[host]") {
  std::mt19937_64 rng(6);
  // The common shape (16 ways, a power of two of sets, 32-line blocks): an
  // MI355X L2's and a smaller one; writes leave dirty victims behind.
  for (const std::uint64_t bytes : {std::uint64_t{4} << 20, std::uint64_t{256} << 10}) {
    CacheTags a(bytes, 128, 16, 32), b(bytes, 128, 16, 32);
    CacheTags::Walker wa = a.walker(), wb = b.walker();
    REQUIRE(wb.common_shape());
    const std::uint64_t block = a.block_bytes();
    for (int i = 0; i < 200000; ++i) {
      const std::uint64_t addr = (rng() % (3 * bytes / block)) * block + (rng() % 8 == 0 ? (rng() % 4096) << 20 : 0);
      const bool write = rng() % 3 == 0;
      if (rng() % 5 == 0) {  // part-blocks between, as a row's
        const std::uint64_t at = addr + (rng() % 32) * 128;
        const auto lines = static_cast<std::uint32_t>(1 + rng() % 32);
        const CacheTags::Run x = wa.access(at, lines, write), y = wb.access(at, lines, write);
        REQUIRE(x.missed == y.missed);
        continue;
      }
      const CacheTags::Run x = wa.access_block(addr, write);
      const CacheTags::Run y = wb.access_block_common(addr, write);
      require_same_run(x, y);
    }
    REQUIRE(records_of(a, 16) == records_of(b, 16));
  }
}
