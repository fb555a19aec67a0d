// L2 block harness: a TLM initiator drives the L2, whose misses go to a stub
// memory with a fixed latency; the clock is the SystemC kernel's.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include <systemc>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include "sim/mem/l2_cache.h"
#include "workloads/config/loader.h"

using namespace tdmsim;
using namespace tdmsim::sim;

namespace {

struct StubMemory : sc_core::sc_module {
  tlm_utils::simple_target_socket<StubMemory> target;
  Tick latency;
  std::uint64_t bytes = 0;
  StubMemory(sc_core::sc_module_name n, Tick l) : sc_module(n), target("target"), latency(l) {
    target.register_b_transport(this, &StubMemory::b_transport);
  }
  void b_transport(tlm::tlm_generic_payload& p, sc_core::sc_time& delay) {
    bytes += p.get_extension<MemAccessExt>()->access.bytes();
    delay += sc_core::sc_time(static_cast<double>(latency), sc_core::SC_PS);
  }
};

struct Requester : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<Requester> socket;
  explicit Requester(sc_core::sc_module_name n) : sc_module(n), socket("socket") {}
  // Latency of one access issued now (outside the scheduler: b_transport is
  // untimed, all timing is in the annotated delay).
  Tick access(std::uint64_t addr, std::uint32_t bytes, Tick at) {
    return transport(socket, MemAccess{addr, bytes, 1, 0, false, 0}, at, 0) - at;
  }
};

L2Spec l2_spec() {
  L2Spec s = config::defaults<L2Spec>();
  s.size_per_die = units::Bytes{4 << 20};
  s.channels_per_die = 16;
  s.hit_latency = units::Duration{100'000};
  return s;
}

// Requester -> L2 -> stub memory, elaborated and ready (one per test case:
// SystemC allows one elaboration per process, and CTest runs each case alone).
struct Harness {
  StatRegistry stats;
  L2Spec spec = l2_spec();
  units::Frequency clock{2'000'000'000};
  Tick below = 300 * kTicksPerNs;
  L2Cache l2;
  StubMemory mem;
  Requester cpu;
  Harness() : l2("l2", spec, clock, below, stats), mem("mem", below), cpu("cpu") {
    cpu.socket.bind(l2.target);
    l2.initiator.bind(mem.target);
    sc_core::sc_start(sc_core::SC_ZERO_TIME);  // finish elaboration (binds multi-sockets)
  }
  Tick line_time() const { return transfer_ticks(128, units::Bandwidth{128ull * clock.hz}); }
};

}  // namespace

TEST_CASE("L2 miss and hit latencies follow hit_latency and the miss round trip", "[l2]") {
  Harness h;
  const Tick miss = h.cpu.access(0x4000, 128, 0);
  // A miss is sent below at once (its MSHR is free) and returns through the L2.
  CHECK(miss == ticks(h.spec.hit_latency) + h.below);
  const Tick hit = h.cpu.access(0x4000, 128, miss);
  CHECK(hit == ticks(h.spec.hit_latency) + h.line_time());
  CHECK(h.mem.bytes == 128);  // the hit did not go below
}

TEST_CASE("L2 hit bandwidth is bounded by its channels", "[l2]") {
  Harness h;
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
  Harness h;
  const MemAccess tile{0, 128, 128, 32 << 10, false, 0};
  const Tick first = transport(h.cpu.socket, tile, 0, 0);  // misses: warm it
  const Tick t0 = first + 1'000'000;
  const Tick hit = transport(h.cpu.socket, tile, t0, 0) - t0;  // all hits now
  // 128 lines over 16 channels: at most a few lines queue on any channel.
  CHECK(hit <= ticks(h.spec.hit_latency) + 16 * h.line_time());
}

TEST_CASE("a K group's channel time: each iteration gets its share, the group all of its lines", "[l2]") {
  Harness h;
  const Tick hit = ticks(h.spec.hit_latency), lt = h.line_time();
  // Lines per channel of a group of g = 7 iterations (uneven on purpose).
  const std::uint32_t g = 7;
  std::vector<std::uint32_t> n(16);
  for (std::uint32_t c = 0; c < 16; ++c) n[c] = (c * 5) % 19;  // 0..18 lines
  ChannelShare share;
  share.clear(16);
  std::copy(n.begin(), n.end(), share.counts());
  share.start(g);
  // Iterations far apart (idle channels): iteration j is back after its
  // busiest channel's floor((j+1)N/g) - floor(jN/g) lines.
  Tick at = 1'000'000'000;
  for (std::uint32_t j = 0; j < g; ++j, at += 1'000'000'000) {
    std::uint32_t most = 0;
    for (std::uint32_t c = 0; c < 16; ++c) most = std::max(most, (j + 1) * n[c] / g - j * n[c] / g);
    CHECK(h.l2.reserve_next(share, at) == at + most * lt + hit);
  }
  // The same group with every iteration at once: the channels serve all of
  // the group's lines back to back, so the last iteration waits for the
  // busiest channel's whole count.
  share.clear(16);
  std::copy(n.begin(), n.end(), share.counts());
  share.start(g);
  Tick last = 0;
  for (std::uint32_t j = 0; j < g; ++j) last = h.l2.reserve_next(share, at);
  CHECK(last == at + *std::max_element(n.begin(), n.end()) * lt + hit);
}

TEST_CASE("a load whose channel time comes later counts the lines a plain load reserves", "[l2]") {
  Harness h;
  const MemAccess tile{0, 128, 100, 7168, false, 0};  // 100 rows, one line each
  transport(h.cpu.socket, tile, 0, 0);                // misses: warm it
  const Tick t1 = 1'000'000'000;
  const Tick plain = transport(h.cpu.socket, tile, t1, 0) - t1;  // hits, channels reserved
  ChannelShare share;
  share.clear(h.l2.channels());
  MemAccess later = tile;
  later.channel_lines = share.counts();
  const Tick t2 = 2 * t1;
  // The lookup alone reserves no channel time...
  CHECK(transport(h.cpu.socket, later, t2, 0) - t2 == ticks(h.spec.hit_latency));
  std::uint32_t lines = 0;
  for (std::size_t c = 0; c < h.l2.channels(); ++c) lines += share.counts()[c];
  CHECK(lines == 100);
  // ...and one iteration (g = 1) reserving the counts takes what the plain load did.
  share.start(1);
  const Tick t3 = 3 * t1;
  CHECK(h.l2.reserve_next(share, t3) - t3 == plain);
}
