// An mi355x die's memory chain below the L1 made small (a 256 KiB L2 with its
// spec's channels and line, a 16 MiB MALL) so that rows evict each other, for
// tests that drive it two ways and compare what comes back; and a sender that
// hashes each access's answer. The tests bind or connect the blocks as their
// comparison needs. (A helper two test files need lives in a header: the sim
// tests are one unity translation unit.)
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>

#include "sim/core/sim_time.h"
#include "sim/core/stats.h"
#include "sim/mem/fabric.h"
#include "sim/mem/hbm.h"
#include "sim/mem/l2_cache.h"
#include "sim/mem/mall.h"
#include "sim/mem/mem_access.h"
#include "tests/sim/hash_mix.h"
#include "workloads/config/loader.h"

namespace tdmsim::test {

inline MachineSpec mi355x_machine() {
  const std::filesystem::path root = std::filesystem::path(TDMSIM_SOURCE_DIR) / "workloads";
  return config::Loader({root}).machine(root / "machines/mi355x.yaml").spec;
}

// The blocks, constructed in the simulator's order (their stats register in
// that order), unconnected. Round trips as the L2 is told them: 500 ns to HBM,
// 250 ns to the MALL where there is one.
struct SmallDieChain {
  MachineSpec m = mi355x_machine();
  sim::StatRegistry stats;
  sim::SimClock time;  // SystemC's time (no CuScheduler here)
  sim::L2Cache l2;
  sim::Fabric fabric;
  sim::Hbm hbm;
  std::unique_ptr<sim::Mall> mall;  // null without a MALL

  explicit SmallDieChain(bool with_mall)
      : l2("l2", small_l2(m), m.compute.clock, 500 * sim::kTicksPerNs, with_mall ? 250 * sim::kTicksPerNs : 0,
           stats, time),
        fabric("fabric", m.memory.fabric, m.compute.dies, stats, time),
        hbm("hbm", m.memory.hbm, stats, time) {
    if (with_mall) {
      mall = std::make_unique<sim::Mall>("mall", small_mall(m), hbm.map(), m.memory.hbm.stacks, stats, time);
    }
  }

  static L2Spec small_l2(const MachineSpec& m) {
    L2Spec s = m.memory.l2;
    s.size_per_die = units::Bytes{256 << 10};
    return s;
  }
  static MallSpec small_mall(const MachineSpec& m) {
    MallSpec s = *m.memory.mall;
    s.size = units::Bytes{16 << 20};
    return s;
  }
};

// Sends accesses 40 ns apart and folds each one's completion, unloaded round
// trip and wait into `answers` (FNV-1a).
struct HashedSends {
  std::uint64_t answers = kHashStart;
  std::uint64_t accesses = 0;
  sim::Tick at = 0;
  sim::MemPort port;

  template <class Socket>
  void send(Socket& socket, const sim::MemAccess& a) {
    const sim::Tick done = port.send(socket, a, at, 0);
    hash_mix(answers, done);
    hash_mix(answers, port.unloaded());
    hash_mix(answers, port.wait());
    ++accesses;
    at += 40 * sim::kTicksPerNs;
  }
};

// What a comparison of two runs of the chain reads at the end: the answers
// with the L2's flush (its write-backs landing) folded in, a hash of every
// stat, and the counts that show the accesses did what the comparison needs
// (misses at every level, write-backs). mall_misses is 0 without a MALL.
struct ChainTally {
  std::uint64_t answers = 0;  // FNV-1a over every access's completion, unloaded round trip and wait
  std::uint64_t stats = 0;    // ... over every stat's value at the end
  std::uint64_t accesses = 0, l2_misses = 0, writebacks = 0, hbm_reads = 0, mall_misses = 0;
};

inline ChainTally tally(SmallDieChain& chain, const HashedSends& sends) {
  ChainTally t;
  t.answers = sends.answers;
  t.accesses = sends.accesses;
  hash_mix(t.answers, chain.l2.flush(sends.at));
  hash_stats(t.stats, chain.stats);
  const auto count = [&](const char* owner, const char* name) {
    return static_cast<std::uint64_t>(chain.stats.sum(owner, name));
  };
  t.l2_misses = count("l2", "misses");
  t.writebacks = count("l2", "writebacks");
  t.hbm_reads = count("hbm", "reads");
  t.mall_misses = count("mall", "misses");
  return t;
}

}  // namespace tdmsim::test
