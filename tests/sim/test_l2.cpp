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
  StubMemory mem;
  Requester cpu;
  // `near`: the L2's near_miss_latency (a MALL below; 0: none); `memory`:
  // the stub's round trip (default: the HBM round trip the L2 expects).
  explicit L2Harness(Tick near = 0, Tick memory = 300 * kTicksPerNs)
      : l2("l2", spec, clock, below, near, stats, time), mem("mem", memory), cpu("cpu") {
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
