// The memory chain below the L2 called directly (L2Cache::connect,
// Fabric::connect, Mall::connect: each block calls the next one's transport()
// with the request's extension) against the same blocks bound through their
// TLM sockets: an mi355x die's L2, fabric link, MALL (or none) and HBM driven
// by the same accesses (gathered token rows hit in part, weight streams,
// stores that evict dirty lines, atomics, a flush), with a second initiator
// on the memory side's socket (as the TDM unit is) between them, give the
// same answers, stats and later state either way.
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include <systemc>

#include "sim/mem/fabric.h"
#include "sim/mem/hbm.h"
#include "sim/mem/iod_links.h"
#include "sim/mem/l2_cache.h"
#include "sim/mem/mall.h"
#include "tests/sim/fork_run.h"
#include "tests/sim/mem_stubs.h"
#include "tests/sim/moe_access_mix.h"
#include "tests/sim/small_die_chain.h"

using namespace tdmsim;
using namespace tdmsim::sim;

namespace {

struct ChainOutcome : tdmsim::test::ChainTally {
  std::uint64_t fabric_bytes = 0;
};

// With `direct`, the blocks are connected as the simulator connects them
// (connect()); else bound through their sockets. With `mall`, a MALL sits
// between the fabric link and HBM; with `links`, the link crosses IODs too.
ChainOutcome run_chain(bool direct, bool mall_below, bool links) {
  tdmsim::test::SmallDieChain chain(mall_below);
  L2Cache& l2 = chain.l2;
  Fabric& fabric = chain.fabric;
  Hbm& hbm = chain.hbm;
  Mall* mall = chain.mall.get();
  std::unique_ptr<IodLinks> iods;
  if (links) {
    iods = std::make_unique<IodLinks>(4, units::Bandwidth{400'000'000'000}, chain.stats, "iod");
    fabric.attach(*iods, 1);
  }
  sim::test::Requester cpu("cpu"), side("side");
  cpu.socket.bind(l2.target);
  if (direct) {
    l2.connect(fabric);
    if (mall) {
      fabric.connect(*mall);
      mall->connect(hbm);
    } else {
      fabric.connect(hbm);
    }
  } else {
    l2.initiator.bind(fabric.target);
    if (mall) {
      fabric.initiator.bind(mall->target);
      mall->initiator.bind(hbm.target);
    } else {
      fabric.initiator.bind(hbm.target);
    }
  }
  // Another initiator on the memory side (as the TDM unit reads descriptors
  // there): through the socket either way.
  if (mall) {
    side.socket.bind(mall->target);
  } else {
    side.socket.bind(hbm.target);
  }
  sc_core::sc_start(sc_core::SC_ZERO_TIME);

  tdmsim::test::HashedSends sends;
  std::mt19937_64 rng(11);
  tdmsim::test::MoeAccessMix mix;
  const std::uint64_t w = mix.kW;
  const auto send = [&](const MemAccess& a) { sends.send(cpu.socket, a); };
  for (int step = 0; step < 250; ++step) {
    mix.step(rng, send);
    // The other initiator: a descriptor read, and at times a weight row
    // (which the MALL then holds for the L2's misses).
    sends.send(side.socket, MemAccess{w + (rng() % 24) * (8ull << 20), 512, 1, 0, false, 0});
  }
  ChainOutcome o;
  static_cast<tdmsim::test::ChainTally&>(o) = tdmsim::test::tally(chain, sends);
  o.fabric_bytes = static_cast<std::uint64_t>(chain.stats.sum("fabric", "bytes"));
  return o;
}

void compare_chain(bool mall, bool links) {
  const ChainOutcome ref = tdmsim::test::in_child<ChainOutcome>([&] { return run_chain(false, mall, links); });
  const ChainOutcome got = tdmsim::test::in_child<ChainOutcome>([&] { return run_chain(true, mall, links); });
  // The accesses did what the comparison needs: misses at every level, write-backs.
  CHECK(ref.accesses == 1500);
  CHECK(ref.l2_misses > 0);
  CHECK(ref.writebacks > 0);
  CHECK(ref.hbm_reads > 0);
  CHECK(ref.fabric_bytes > 0);
  if (mall) CHECK(ref.mall_misses > 0);
  CHECK(got.l2_misses == ref.l2_misses);
  CHECK(got.writebacks == ref.writebacks);
  CHECK(got.hbm_reads == ref.hbm_reads);
  CHECK(got.fabric_bytes == ref.fabric_bytes);
  CHECK(got.mall_misses == ref.mall_misses);
  CHECK(got.stats == ref.stats);
  CHECK(got.answers == ref.answers);
}

}  // namespace

TEST_CASE("an L2, fabric link, MALL and HBM called directly answer as when bound through the sockets",
          "[mem_direct]") {
  compare_chain(true, false);
}

TEST_CASE("an L2, fabric link and HBM (no MALL) called directly answer as when bound through the sockets",
          "[mem_direct]") {
  compare_chain(false, false);
}

TEST_CASE("a fabric link across IODs called directly answers as when bound through the sockets", "[mem_direct]") {
  compare_chain(true, true);
}
