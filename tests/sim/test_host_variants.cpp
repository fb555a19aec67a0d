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
#include "sim/cu/reservation_batch.h"
#include "sim/mem/cache_tags.h"
#include "sim/mem/channel_count.h"
#include "sim/mem/channel_reserve.h"
#include "sim/mem/l2_cache.h"
#include "sim/mem/mall_streak.h"
#include "sim/mem/run_merge.h"
#include "sim/mem/tag_search.h"
#include "workloads/config/loader.h"

using namespace tdmsim;
using namespace tdmsim::sim;

namespace {

std::vector<Simd> simds_run() {
  std::vector<Simd> v;
  std::string ran, skipped;
  for (const Simd s : {Simd::scalar, Simd::sse2, Simd::avx2}) {
    if (host_runs(s)) {
      v.push_back(s);
      ran += std::string(" ") + simd_name(s);
    } else {
      skipped += std::string(" ") + simd_name(s);
    }
  }
  WARN("vector versions run:" << ran << "; skipped (not built or not on this host):"
                              << (skipped.empty() ? " none" : skipped));
  return v;
}

std::vector<bool> bmi2_run() {
  WARN("BMI2 versions " << (host_has_bmi2() ? "run" : "skipped (not built or not on this host)"));
  return host_has_bmi2() ? std::vector<bool>{false, true} : std::vector<bool>{false};
}

// The records of a tag array (sets x (3 x ways + 1) words), for comparing two.
std::vector<std::uint32_t> records_of(CacheTags& t, std::uint32_t /*ways*/) {
  const std::uint32_t* r = t.walker().records();
  return std::vector<std::uint32_t>(r, r + t.sets() * t.record_words());
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
  // Slices of one geometry over a map of 4 stacks; power-of-two divisors and not.
  for (const bool pow2 : {true, false}) {
    const std::uint32_t stacks = 4, channels = pow2 ? 32 : 24;
    const HbmAddressMap map(4096, channels, 16, 2048);
    const Divisor per_stack(channels / stacks);
    REQUIRE(map.pow2() == pow2);
    std::vector<std::vector<CacheTags>> arrays(1 + bmi2.size(), std::vector<CacheTags>(stacks, CacheTags(1 << 20, 128, 16, 32)));
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

TEST_CASE("channel counts: every version counts what line-by-line counting does", "[host]") {
  const auto simds = simds_run();
  const auto bmi2 = bmi2_run();
  std::mt19937_64 rng(3);
  for (const std::size_t channels : {16u, 8u, 32u, 12u}) {
    std::vector<ChannelCounter> counters;
    for (const Simd s : simds) {
      for (const bool b : bmi2) counters.emplace_back(channels, 128, ChannelCounter::Paths{s, b});
    }
    const ChannelCounter& any = counters.front();
    auto gather = std::make_shared<std::vector<std::uint64_t>>();
    for (int trial = 0; trial < 400; ++trial) {
      // A load: strided or gathered rows, of a line or less, several lines,
      // line-aligned or not, K steps of one line (the by-offset path) or other.
      MemAccess a;
      const int kind = static_cast<int>(rng() % 6);
      a.rows = static_cast<std::uint32_t>(1 + rng() % (kind == 0 ? 80 : 40));
      a.row_bytes = kind <= 1 ? 128 : static_cast<std::uint32_t>(1 + rng() % 700);
      a.addr = (std::uint64_t{1} << 24) + (rng() % 100000) * (kind <= 1 ? 128 : 1 + rng() % 128);
      a.row_stride = (rng() % 64) * 128 * (kind == 2 ? 1 : 7);
      if (kind == 1 || kind == 4) {
        gather->clear();
        for (std::uint32_t r = 0; r < a.rows; ++r) gather->push_back((rng() % 512) * (kind == 1 ? 128 : 96));
        a.gather = gather->data();
      }
      const std::int64_t stride = kind <= 1 ? 128 : (rng() % 2 == 0 ? a.row_bytes : -static_cast<std::int64_t>(rng() % 4096));
      const auto g = static_cast<std::uint32_t>(1 + rng() % 40);
      // count_rows
      std::vector<std::uint32_t> want(channels, 0);
      any.count_rows_reference(a, want.data());
      for (const auto& c : counters) {
        std::vector<std::uint32_t> got(channels, 0);
        std::uint64_t every = 0;
        c.count_rows(a, got.data(), every);
        for (auto& n : got) n += static_cast<std::uint32_t>(every);
        REQUIRE(got == want);
      }
      // count_iterations
      std::vector<std::uint16_t> table_want(g * channels, 0);
      any.count_iterations_reference(a, stride, g, table_want.data());
      for (const auto& c : counters) {
        std::vector<std::uint16_t> got(g * channels, 0);
        c.count_iterations(a, stride, g, got.data());
        REQUIRE(got == table_want);
      }
      // add_terms and terms_rows (where the load is of that kind), over chunks
      const std::uint32_t j0 = static_cast<std::uint32_t>(rng() % g), n = std::min<std::uint32_t>(g - j0, 16);
      for (const auto& c : counters) {
        ChannelCounter::LineTerms t;
        c.reset_terms(t, g);
        if (!c.add_terms(a, stride, t)) continue;
        std::vector<std::uint16_t> got(n * channels, 0), expect(n * channels, 0);
        c.terms_rows(t, j0, n, got.data());
        MemAccess at = a;
        at.addr += static_cast<std::uint64_t>(stride * j0);
        any.count_iterations_reference(at, stride, n, expect.data());
        REQUIRE(got == expect);
      }
      // Every version takes the same loads for the group.
      bool first = true, taken = false;
      for (const auto& c : counters) {
        ChannelCounter::LineTerms t;
        c.reset_terms(t, g);
        const bool ok = c.add_terms(a, stride, t);
        if (first) taken = ok;
        first = false;
        REQUIRE(ok == taken);
      }
    }
  }
}

TEST_CASE("channel reservations: the AVX2 versions reserve what the scalar ones and BusyUntil do", "[host]") {
  const auto simds = simds_run();
  const bool avx2 = std::find(simds.begin(), simds.end(), Simd::avx2) != simds.end();
  std::mt19937_64 rng(4);
  for (const std::size_t channels : {16u, 8u, 12u}) {
    const Tick lt = 64 + rng() % 2000;
    REQUIRE(channel_reserve::avx2_fits(channels, lt));
    // Three copies of the channels: the plain reference, scalar, AVX2.
    std::vector<BusyUntil> ref(channels), sc(channels), vx(channels);
    Tick now = 1'000'000;
    for (int trial = 0; trial < 3000; ++trial) {
      now += rng() % 5000;
      const std::size_t runs = rng() % 4;
      std::vector<std::uint16_t> rows(runs * channels);
      for (auto& n : rows) n = rng() % 3 == 0 ? 0 : static_cast<std::uint16_t>(rng() % (rng() % 8 == 0 ? 65536 : 9));
      std::vector<Tick> offsets(runs);
      for (auto& o : offsets) o = rng() % 3000;
      // lines_*: each run in turn
      Tick want = now;
      for (std::size_t k = 0; k < runs; ++k) {
        for (std::size_t ch = 0; ch < channels; ++ch) {
          const std::uint64_t n = rows[k * channels + ch];
          if (n > 0) want = std::max(want, ref[ch].reserve(now + offsets[k], lt * n));
        }
        want = std::max(want, now + offsets[k]);
      }
      if (trial % 2 == 0) {
        REQUIRE(channel_reserve::runs_scalar(rows.data(), channels, offsets.data(), runs, now, lt, sc.data(), channels) == want);
#if TDMSIM_X86_VARIANTS
        if (avx2) REQUIRE(channel_reserve::runs_avx2(rows.data(), channels, offsets.data(), runs, now, lt, vx.data(), channels) == want);
#endif
      } else {
        Tick s = now, v = now;
        for (std::size_t k = 0; k < runs; ++k) {
          s = std::max(s, channel_reserve::lines_scalar(&rows[k * channels], now + offsets[k], lt, sc.data(), channels));
#if TDMSIM_X86_VARIANTS
          if (avx2) v = std::max(v, channel_reserve::lines_avx2(&rows[k * channels], now + offsets[k], lt, vx.data(), channels));
#endif
        }
        REQUIRE(s == want);
        if (avx2) REQUIRE(v == want);
      }
      // MSHRs: per-channel misses plus lines on every channel.
      std::vector<std::uint32_t> misses(channels);
      for (auto& m : misses) m = rng() % 2 == 0 ? 0 : static_cast<std::uint32_t>(rng() % 100);
      const std::uint64_t every = rng() % 3 == 0 ? rng() % 4 : 0;
      const Tick hold = 1 + rng() % 100000;
      Tick mwant = now;
      for (std::size_t ch = 0; ch < channels; ++ch) {
        const std::uint64_t n = misses[ch] + every;
        if (n > 0) mwant = std::max(mwant, ref[ch].reserve(now, hold * n) - hold * n);
      }
      REQUIRE(channel_reserve::mshrs_scalar(misses.data(), every, hold, now, sc.data(), channels) == mwant);
      if (avx2) {
        REQUIRE(channel_reserve::mshrs(Simd::avx2, misses.data(), every, hold, 200, now, vx.data(), channels) == mwant);
      } else {
        REQUIRE(channel_reserve::mshrs(Simd::scalar, misses.data(), every, hold, 200, now, vx.data(), channels) == mwant);
      }
      for (std::size_t ch = 0; ch < channels; ++ch) {
        REQUIRE(sc[ch].free_at == ref[ch].free_at);
        if (avx2) REQUIRE(vx[ch].free_at == ref[ch].free_at);
      }
      if (!avx2) vx = ref;  // (the scalar fallback above moved it too)
    }
  }
}

TEST_CASE("reservation batches: counted tables reserve what load-by-load counting reserves", "[host]") {
  // Two L2s of one spec (one elaboration, never simulated: the channels are
  // reserved directly), one reserved from the batch's tables, one load by load.
  L2Spec spec = config::defaults<L2Spec>();
  spec.size_per_die = units::Bytes{4 << 20};
  spec.channels_per_die = 16;
  StatRegistry stats;
  SimClock time;
  const units::Frequency clock{2'000'000'000};
  L2Cache a("l2_batched", spec, clock, 300'000, 0, stats, time), b("l2_by_load", spec, clock, 300'000, 0, stats, time);
  const DeferredChannels da = a.deferred_channels(), db = b.deferred_channels();
  std::mt19937_64 rng(7);
  auto rows = std::make_shared<std::vector<std::uint64_t>>();
  for (std::uint64_t r = 0; r < 256; ++r) rows->push_back(((r * 37) % 64) * 7168 + (r % 3) * 128);
  Tick at = 1'000'000;
  ReservationBatch batched, by_load;
  for (int trial = 0; trial < 300; ++trial) {
    // A loop of one to four loads: weight rows one line per K step (counted by
    // term), wider rows, half lines, a gather (issued later: a run of its own).
    isa::Loop loop;
    const auto loads = 1 + rng() % 4;
    for (std::uint64_t k = 0; k < loads; ++k) {
      const int kind = static_cast<int>(rng() % 4);
      isa::MemRange r;
      r.rows = static_cast<std::uint32_t>(kind == 0 ? 32 + rng() % 96 : 1 + rng() % 64);
      r.row_bytes = kind == 0 ? 128 : kind == 1 ? 256 : kind == 2 ? 64 : 128;
      r.addr = (rng() % 4096) * 128;
      r.row_stride = 7168;
      r.iter_stride = r.row_bytes;
      if (kind == 3) {
        r.rows = std::min<std::uint32_t>(r.rows, 256);
        r.gather = rows;
      }
      loop.loads.push_back(r);
    }
    loop.iterations = 200;
    const auto first = static_cast<std::uint32_t>(rng() % 100), g = static_cast<std::uint32_t>(1 + rng() % 64);
    const auto offset = [](const isa::MemRange& r) { return r.gather ? Tick{20'000} : Tick{0}; };
    batched.begin_group(da, loop, first, g, offset);
    by_load.begin_group(db, loop, first, g, offset);
    for (std::uint32_t j = 0; j < g; ++j) {
      at += rng() % 40'000;
      REQUIRE(batched.reserve(da, j, at) == by_load.reserve_reference(db, j, at));
    }
  }
  // The channels end where they were reserved alike.
  std::vector<std::uint16_t> one(16, 1);
  CHECK(da.reserve_lines(one.data(), at) == db.reserve_lines(one.data(), at));
}
