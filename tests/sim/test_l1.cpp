// L1 block harness: a TLM initiator drives one compute unit's L1, whose
// misses, stores and streamed loads go to a stub memory with a fixed latency.
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <random>

#include <systemc>

#include "sim/mem/l1_cache.h"
#include "sim/mem/l2_cache.h"
#include "tests/sim/fork_run.h"
#include "tests/sim/hash_mix.h"
#include "tests/sim/mem_stubs.h"
#include "workloads/config/loader.h"
#include "workloads/config/schema.h"

using namespace tdmsim;
using namespace tdmsim::sim;

namespace {

using sim::test::Requester;
using sim::test::StubMemory;

// 4 KiB, 128-byte lines, 4 ways: 8 sets of 4 lines.
ComputeSpec l1_spec() {
  ComputeSpec c = config::defaults<ComputeSpec>();
  c.clock = units::Frequency{2'000'000'000};
  c.l1_per_cu = units::Bytes{4096};
  c.l1_line = units::Bytes{128};
  c.l1_ways = 4;
  c.l1_hit_latency = units::Duration{20'000};
  c.l1_bytes_per_clock = 64;  // 128 GB/s at 2 GHz: a line in 1 ns
  return c;
}

struct L1Harness {
  StatRegistry stats;
  SimClock time;
  ComputeSpec spec = l1_spec();
  Tick below = 300 * kTicksPerNs;
  L1Cache l1;
  StubMemory mem;
  Requester cu;
  L1Harness() : l1("l1", spec, stats, time), mem("mem", below), cu("cu") {
    cu.socket.bind(l1.target);
    l1.initiator.bind(mem.target);
    sc_core::sc_start(sc_core::SC_ZERO_TIME);
  }
  Tick hit(std::uint64_t bytes) const { return 20'000 + (bytes * 1000 + 127) / 128; }  // latency + transfer
};

struct L1L2Outcome {
  std::uint64_t answers = 0, stats = 0, accesses = 0, l1_hits = 0, l2_misses = 0;
};

// An L1 (l1_spec) over a small L2 of the mi355x's shape, bound to it through
// the sockets or, with `direct`, by L1Cache::connect (the L2 called
// directly): a random stream of loads (repeated, so that they hit in part),
// stores and streamed loads.
L1L2Outcome run_l1_l2(bool direct) {
  const std::filesystem::path root = std::filesystem::path(TDMSIM_SOURCE_DIR) / "workloads";
  const config::Loader loader({root});
  const MachineSpec m = loader.machine(root / "machines/mi355x.yaml").spec;
  StatRegistry stats;
  SimClock time;
  L2Spec l2spec = m.memory.l2;
  l2spec.size_per_die = units::Bytes{256 << 10};
  L2Cache l2("l2", l2spec, m.compute.clock, 500 * kTicksPerNs, 0, stats, time);
  StubMemory mem("mem", 300 * kTicksPerNs);
  L1Cache l1("l1", l1_spec(), stats, time);
  Requester cu("cu");
  cu.socket.bind(l1.target);
  if (direct) {
    l1.connect(l2);
  } else {
    l1.initiator.bind(l2.target);
  }
  l2.initiator.bind(mem.target);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  L1L2Outcome o;
  o.answers = tdmsim::test::kHashStart;
  MemPort port;
  std::mt19937_64 rng(5);
  Tick at = 0;
  for (int i = 0; i < 4000; ++i) {
    MemAccess a{(rng() % 512) * 64, static_cast<std::uint32_t>(4u << (rng() % 8)), 1, 0, false, 0};
    const auto kind = rng() % 8;
    if (kind == 0) a.write = true;
    if (kind == 1) a.streamed = true;
    if (kind == 2) {  // rows of a tile: several lines apart
      a.rows = 1 + static_cast<std::uint32_t>(rng() % 4);
      a.row_stride = 1024;
    }
    const Tick done = port.send(cu.socket, a, at, 0);
    tdmsim::test::hash_mix(o.answers, done);
    tdmsim::test::hash_mix(o.answers, port.unloaded());
    tdmsim::test::hash_mix(o.answers, port.wait());
    ++o.accesses;
    at += 5 * kTicksPerNs;
  }
  tdmsim::test::hash_stats(o.stats, stats);
  o.l1_hits = static_cast<std::uint64_t>(stats.sum("l1", "hits"));
  o.l2_misses = static_cast<std::uint64_t>(stats.sum("l2", "misses"));
  return o;
}

}  // namespace

TEST_CASE("an L1 connected to its L2 directly answers as one bound to it through the sockets", "[l1]") {
  const L1L2Outcome ref = tdmsim::test::in_child<L1L2Outcome>([] { return run_l1_l2(false); });
  const L1L2Outcome got = tdmsim::test::in_child<L1L2Outcome>([] { return run_l1_l2(true); });
  CHECK(ref.accesses == 4000);
  CHECK(ref.l1_hits > 0);
  CHECK(ref.l2_misses > 0);
  CHECK(got.l1_hits == ref.l1_hits);
  CHECK(got.l2_misses == ref.l2_misses);
  CHECK(got.stats == ref.stats);
  CHECK(got.answers == ref.answers);
}

TEST_CASE("an L1 miss goes below as it came, and the same load then hits", "[l1]") {
  L1Harness h;
  CHECK(h.cu.access(0x1000, 256, 0) == h.below);
  CHECK(h.mem.bytes == 256);
  const Tick t = 1'000'000;
  CHECK(h.cu.access(0x1000, 256, t) == h.hit(256));
  CHECK(h.mem.bytes == 256);  // nothing more below
  // A part of a line that was fetched hits too.
  CHECK(h.cu.access(0x1010, 4, 2 * t) == h.hit(4));
}

TEST_CASE("an L1 evicts its least recently used lines", "[l1]") {
  L1Harness h;
  // 64 lines, one after another, through a 32-line L1 (consecutive lines
  // spread over its sets evenly): each set sees eight, keeps the last four.
  for (std::uint64_t i = 0; i < 64; ++i) h.cu.access(i * 128, 128, i * 1'000'000);
  const std::uint64_t fetched = h.mem.bytes;
  CHECK(fetched == 64 * 128);
  CHECK(h.cu.access(63 * 128, 128, 100'000'000) == h.hit(128));  // the most recent: still there
  CHECK(h.cu.access(0, 128, 101'000'000) == h.below);            // the least recent: evicted
  CHECK(h.mem.bytes == fetched + 128);
  // A hit makes a line the most recent of its set: 63 survives 0's refill, and 0 is now held.
  CHECK(h.cu.access(63 * 128, 128, 102'000'000) == h.hit(128));
  CHECK(h.cu.access(0, 128, 103'000'000) == h.hit(128));
}

TEST_CASE("an L1 port serves hits one after another at its bandwidth", "[l1]") {
  L1Harness h;
  h.cu.access(0, 1024, 0);  // warm 1 KiB (8 lines, 8 ns at 128 GB/s)
  const Tick t = 1'000'000;
  const Tick first = h.cu.access(0, 1024, t);
  const Tick second = h.cu.access(0, 1024, t);  // arrives together: queues behind the first
  CHECK(first == h.hit(1024));
  CHECK(second == first + 8'000);
  // Later, with the port idle again: the plain hit time.
  CHECK(h.cu.access(0, 1024, 10 * t) == h.hit(1024));
}

TEST_CASE("an L1 partly hit sends only its missing lines below", "[l1]") {
  L1Harness h;
  h.cu.access(0, 256, 0);  // lines 0 and 1
  const std::uint64_t before = h.mem.bytes;
  const Tick t = 1'000'000;
  // Lines 0..3: two hit, two go below (one run).
  CHECK(h.cu.access(0, 512, t) == h.below);
  CHECK(h.mem.bytes == before + 256);
  CHECK(h.cu.access(0, 512, 2 * t) == h.hit(512));
}

TEST_CASE("stores, streamed tile loads and loads as large as an L1 pass it unlooked-up, and a kernel start empties it", "[l1]") {
  L1Harness h;
  MemAccess store{0, 128, 1, 0, true, 0};
  transport(h.cu.socket, store, 0, 0);
  MemAccess streamed{128, 128, 1, 0, false, 0};
  streamed.streamed = true;
  transport(h.cu.socket, streamed, 0, 0);
  MemAccess stream{8192, 4096, 1, 0, false, 0};  // the L1's capacity at once
  transport(h.cu.socket, stream, 0, 0);
  CHECK(h.mem.accesses == 3);
  CHECK(h.cu.access(8192, 128, 500'000) == h.below);  // not allocated either
  // Neither allocated its line.
  CHECK(h.cu.access(0, 128, 1'000'000) == h.below);
  CHECK(h.cu.access(128, 128, 2'000'000) == h.below);
  CHECK(h.cu.access(128, 128, 3'000'000) == h.hit(128));
  h.l1.invalidate();
  CHECK(h.cu.access(128, 128, 4'000'000) == h.below);
}
