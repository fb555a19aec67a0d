// L2 block harness: a TLM initiator drives the L2, whose misses go to a stub
// memory with a fixed latency; the clock is the SystemC kernel's.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <vector>

#include <systemc>

#include "sim/mem/l2_cache.h"
#include "tests/sim/fork_run.h"
#include "tests/sim/mem_stubs.h"
#include "workloads/config/loader.h"

using namespace tdmsim;
using namespace tdmsim::sim;

namespace {

using sim::test::Requester;
using sim::test::StubMemory;

L2Spec l2_spec() {
  L2Spec s = config::defaults<L2Spec>();
  s.size_per_die = units::Bytes{4 << 20};
  s.channels_per_die = 16;
  s.hit_latency = units::Duration{100'000};
  return s;
}

// Requester -> L2 -> stub memory, elaborated and ready (one per test case:
// SystemC allows one elaboration per process, and CTest runs each case alone).
struct L2Harness {
  StatRegistry stats;
  SimClock time;  // SystemC's time (no CuScheduler here)
  L2Spec spec = l2_spec();
  units::Frequency clock{2'000'000'000};
  Tick below = 300 * kTicksPerNs;
  L2Cache l2;
  DeferredChannels ch;  // its channel time, as a compute unit's port sees it
  StubMemory mem;
  Requester cpu;
  // `near`: the L2's near_miss_latency (a MALL below; 0: none); `memory`:
  // the stub's round trip (default: the HBM round trip the L2 expects).
  explicit L2Harness(Tick near = 0, Tick memory = 300 * kTicksPerNs)
      : l2("l2", spec, clock, below, near, stats, time), ch(l2.deferred_channels()), mem("mem", memory), cpu("cpu") {
    cpu.socket.bind(l2.target);
    l2.initiator.bind(mem.target);
    sc_core::sc_start(sc_core::SC_ZERO_TIME);  // finish elaboration (binds multi-sockets)
  }
  Tick line_time() const { return transfer_ticks(128, units::Bandwidth{128ull * clock.hz}); }
};

}  // namespace

TEST_CASE("L2 miss and hit latencies follow hit_latency and the miss round trip", "[l2]") {
  L2Harness h;
  const Tick miss = h.cpu.access(0x4000, 128, 0);
  // A miss is sent below at once (its MSHR is free) and returns through the L2.
  CHECK(miss == ticks(h.spec.hit_latency) + h.below);
  const Tick hit = h.cpu.access(0x4000, 128, miss);
  CHECK(hit == ticks(h.spec.hit_latency) + h.line_time());
  CHECK(h.mem.bytes == 128);  // the hit did not go below
}

TEST_CASE("L2 hit bandwidth is bounded by its channels", "[l2]") {
  L2Harness h;
  const std::uint64_t footprint = 1 << 20;  // fits: warm it, then stream it again
  h.cpu.access(0, static_cast<std::uint32_t>(footprint), 0);
  const Tick start = 1'000'000'000;  // 1 ms: long after the warm-up drained
  Tick done = start;
  for (std::uint64_t off = 0; off < footprint; off += 4096) {
    done = std::max(done, start + h.cpu.access(off, 4096, start));
  }
  const double secs = static_cast<double>(done - start - ticks(h.spec.hit_latency)) * 1e-12;
  const double bw = static_cast<double>(footprint) / secs;
  const double peak = 128.0 * static_cast<double>(h.clock.hz) * h.spec.channels_per_die;
  INFO("L2 hit bandwidth " << bw / 1e12 << " TB/s of " << peak / 1e12);
  CHECK(bw <= peak * 1.0001);
  CHECK(bw >= peak * 0.9);
}

TEST_CASE("the rows of a tile spread over L2 channels", "[l2]") {
  // A 128-row tile whose rows are 32 KiB apart: without hashing every row
  // would hit the same channel and the tile would load 1/channels as fast.
  L2Harness h;
  const MemAccess tile{0, 128, 128, 32 << 10, false, 0};
  const Tick first = transport(h.cpu.socket, tile, 0, 0);  // misses: warm it
  const Tick t0 = first + 1'000'000;
  const Tick hit = transport(h.cpu.socket, tile, t0, 0) - t0;  // all hits now
  // 128 lines over 16 channels: at most a few lines queue on any channel.
  CHECK(hit <= ticks(h.spec.hit_latency) + 16 * h.line_time());
}

TEST_CASE("a K group's lines per iteration and channel, counted at once, are each iteration's own", "[l2]") {
  L2Harness h;
  const std::size_t channels = h.l2.channels();
  const auto gather = std::make_shared<std::vector<std::uint64_t>>(
      std::vector<std::uint64_t>{0, 7168 * 5, 7168 * 2, 7168 * 11, 128 * 3});
  struct Shape {
    MemAccess a;
    std::int64_t stride;
  };
  std::vector<Shape> shapes = {
      {{4096, 128, 24, 7168, false, 0}, 128},       // one line per row an iteration (the fast path)
      {{8192, 256, 6, 65536, false, 0}, 256},       // two lines per row an iteration
      {{64, 128, 5, 7168, false, 0}, 128},          // rows not line-aligned: two lines each
      {{0, 64, 7, 4096, false, 0}, 64},             // half a line: a line in two iterations
      {{1 << 20, 128, 4, 128, false, 0}, 512},      // the next rows each iteration
      {{3 << 20, 128, 3, 1024, false, 0}, -128},    // stepping back
      {{0, 128, 5, 0, false, 0}, 128},              // gathered rows
  };
  shapes.back().a.gather = gather->data();
  const std::uint32_t g = 37;  // crosses channel groups at odd places
  for (const auto& [a, stride] : shapes) {
    std::vector<std::uint16_t> table(g * channels, 0), expect(g * channels, 0);
    h.ch.count_iterations(a, stride, g, table.data());
    for (std::uint32_t j = 0; j < g; ++j) {
      for (std::uint32_t r = 0; r < a.rows; ++r) {
        const std::uint64_t begin = a.row(r) + static_cast<std::uint64_t>(stride * j);
        for (std::uint64_t l = begin / 128; l < (begin + a.row_bytes + 127) / 128; ++l) {
          ++expect[j * channels + h.l2.channel_of(l)];
        }
      }
    }
    CHECK(table == expect);
    for (std::uint32_t j = 0; j < g; ++j) {
      std::uint32_t sum = 0;
      for (std::size_t c = 0; c < channels; ++c) sum += table[j * channels + c];
      CHECK(sum <= h.ch.iteration_lines(a));  // the bound that keeps counts in 16 bits
    }
  }
}

TEST_CASE("a K group's one-line rows counted once by term give each chunk's own counts", "[l2]") {
  L2Harness h;
  const std::size_t channels = h.l2.channels();
  const std::uint32_t g = 56;  // a 7168-byte fp8 row in 128-byte K steps: 3.5 channel groups
  // Two loads of one run (gate and up: rows 7168 bytes apart, the same two
  // offsets), then a gather with rows at offsets of their own.
  const MemAccess gate{1 << 20, 128, 32, 7168, false, 0};
  MemAccess up = gate;
  up.addr += 2048ull * 7168;
  std::vector<std::uint64_t> rows;
  for (std::uint64_t r = 0; r < 40; ++r) rows.push_back(((r * 37) % 64) * 2048 + (r % 3) * 128);  // offsets 0-2
  MemAccess gather{2 << 20, 128, 40, 0, false, 0};
  gather.gather = rows.data();
  DeferredChannels::LineTerms t;
  h.ch.reset_terms(t, g);
  CHECK(h.ch.add_terms(gate, 128, t));
  CHECK(h.ch.add_terms(up, 128, t));
  CHECK(t.offsets == 2);
  DeferredChannels::LineTerms u;
  h.ch.reset_terms(u, g);
  CHECK(h.ch.add_terms(gather, 128, u));
  // Not for the group: two lines a row, half a line, too few rows, a fifth offset.
  DeferredChannels::LineTerms v;
  h.ch.reset_terms(v, g);
  CHECK_FALSE(h.ch.add_terms(MemAccess{0, 256, 32, 7168, false, 0}, 256, v));
  CHECK_FALSE(h.ch.add_terms(MemAccess{0, 64, 32, 7168, false, 0}, 64, v));
  CHECK_FALSE(h.ch.add_terms(MemAccess{0, 128, 8, 7168, false, 0}, 128, v));
  CHECK(h.ch.add_terms(MemAccess{0, 128, 32, 128 * 4, false, 0}, 128, v));  // offsets 0, 4, 8, 12
  CHECK_FALSE(h.ch.add_terms(MemAccess{128, 128, 32, 7168, false, 0}, 128, v));
  CHECK(v.offsets == 4);
  // Strided rows repeat their offsets every c / gcd(row stride in lines, c)
  // rows: one offset (16 lines apart), two (8: one of them shared with the
  // first load's), or too many (3: sixteen).
  DeferredChannels::LineTerms w;
  h.ch.reset_terms(w, g);
  CHECK(h.ch.add_terms(MemAccess{0, 128, 32, 128 * 16, false, 0}, 128, w));
  CHECK(w.offsets == 1);
  CHECK(h.ch.add_terms(MemAccess{1 << 22, 128, 32, 128 * 8, false, 0}, 128, w));
  CHECK(w.offsets == 2);
  CHECK_FALSE(h.ch.add_terms(MemAccess{0, 128, 32, 128 * 3, false, 0}, 128, w));
  CHECK(w.offsets == 2);
  for (const std::uint32_t chunk : {16u, 5u}) {
    for (std::uint32_t j0 = 0; j0 < g; j0 += chunk) {
      const std::uint32_t n = std::min(chunk, g - j0);
      const MemAccess w16{0, 128, 32, 128 * 16, false, 0}, w8{1 << 22, 128, 32, 128 * 8, false, 0};
      for (const auto& [terms, loads] :
           std::vector<std::pair<const DeferredChannels::LineTerms*, std::vector<MemAccess>>>{
               {&t, {gate, up}}, {&u, {gather}}, {&w, {w16, w8}}}) {
        std::vector<std::uint16_t> table(n * channels, 0), expect(n * channels, 0);
        h.ch.terms_rows(*terms, j0, n, table.data());
        for (const MemAccess& a : loads) {
          MemAccess at = a;
          at.addr += std::uint64_t{j0} * 128;
          h.ch.count_iterations(at, 128, n, expect.data());
        }
        CHECK(table == expect);
      }
    }
  }
}

TEST_CASE("an iteration's runs reserved in one call end where reserving each in turn ends", "[l2]") {
  L2Harness h;
  const std::size_t channels = h.l2.channels();
  const Tick hit = ticks(h.spec.hit_latency), lt = h.line_time();
  // Two identical L2s are not possible in one elaboration: the same rows on
  // one L2, first in turn, then in one call later on (channels idle again by
  // then), compared as times after their start.
  std::vector<std::uint16_t> rows(3 * channels);
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<std::uint16_t>((i * 7 + i / 5) % 4);
  const Tick offsets[3] = {0, 3 * lt, lt / 2};
  for (std::size_t runs = 0; runs <= 3; ++runs) {
    const Tick t1 = (1 + 2 * runs) * Tick{1'000'000'000}, t2 = t1 + 1'000'000'000;
    Tick in_turn = t1;
    for (std::size_t k = 0; k < runs; ++k) in_turn = std::max(in_turn, h.ch.reserve_lines(&rows[k * channels], t1 + offsets[k]));
    const Tick at_once = h.ch.reserve_runs(rows.data(), channels, offsets, runs, t2);
    CHECK(at_once - t2 == in_turn - t1);
    if (runs == 0) CHECK(at_once == t2);
    else CHECK(at_once > t2 + hit);
  }
}

TEST_CASE("counted lines are reserved per channel, as a plain load reserves them", "[l2]") {
  L2Harness h;
  const Tick hit = ticks(h.spec.hit_latency), lt = h.line_time();
  // Idle channels: back after the busiest channel's lines; lines reserved at
  // the same time queue behind each other on their channel.
  std::vector<std::uint16_t> lines(h.l2.channels(), 0);
  lines[3] = 5;
  lines[9] = 2;
  const Tick t = 1'000'000'000;
  CHECK(h.ch.reserve_lines(lines.data(), t) == t + 5 * lt + hit);
  CHECK(h.ch.reserve_lines(lines.data(), t) == t + 10 * lt + hit);
  // A load whose channel time comes later: its lookup reserves none, and
  // its counted lines then take what the same load took with them.
  const MemAccess tile{0, 128, 100, 7168, false, 0};
  transport(h.cpu.socket, tile, 0, 0);  // misses: warm it
  const Tick t1 = 2'000'000'000;
  const Tick plain = transport(h.cpu.socket, tile, t1, 0) - t1;  // hits, channels reserved
  MemAccess later = tile;
  later.channel_time_later = true;
  const Tick t2 = 2 * t1;
  CHECK(transport(h.cpu.socket, later, t2, 0) - t2 == hit);
  const Tick t3 = 3 * t1;
  h.ch.count_for_reserve(tile);
  CHECK(h.ch.reserve_counted(t3) - t3 == plain);
  std::vector<std::uint16_t> table(h.l2.channels(), 0);
  h.ch.count_iterations(tile, 128, 1, table.data());
  const Tick t4 = 4 * t1;
  CHECK(h.ch.reserve_lines(table.data(), t4) - t4 == plain);
}


TEST_CASE("a miss the memory-side cache serves holds its MSHR for that round trip only", "[l2]") {
  // Two streams of misses issued at once: the second waits for MSHRs, so its
  // end measures how long the first held them.
  const auto second_done = [](Tick near, Tick memory) {
    return tdmsim::test::in_child<Tick>([=] {
      L2Harness h(near, memory);
      const std::uint32_t bytes = 4 << 20;
      h.cpu.access(0, bytes, 0);
      return h.cpu.access(64 << 20, bytes, 0);
    });
  };
  const Tick hbm = 300 * kTicksPerNs, mall = 150 * kTicksPerNs;
  const Tick no_mall = second_done(0, hbm);         // every miss holds for the HBM round trip
  const Tick mall_hits = second_done(mall, mall);   // the MALL answers every miss
  const Tick mall_misses = second_done(mall, hbm);  // a MALL below, but every miss goes on to HBM
  INFO("second stream: no MALL " << no_mall << " ps, MALL hits " << mall_hits << " ps, MALL misses "
                                 << mall_misses << " ps");
  // MSHR-bound: half the hold time, about half the wait.
  CHECK(mall_hits < no_mall * 3 / 4);
  // Misses that went on to HBM held their MSHRs for its round trip after all.
  CHECK(mall_misses >= no_mall * 95 / 100);
  CHECK(mall_misses <= no_mall * 105 / 100);
}
