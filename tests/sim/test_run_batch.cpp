// The batches of runs sent below the L2 (sim/mem/run_batch.h) against their
// reference, each run sent on its own: an mi355x die's L2, fabric link, MALL
// and HBM driven by the same accesses (gathered token rows hit in part, weight
// streams, stores that evict dirty lines, a flush) give the same answers,
// stats and later state either way. The MALL serves a batch whole
// (Mall::serve_batch, sim/mem/mall_batch.cpp: one reservation per slice, one
// call to HBM) against serve_one run by run in the reference.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include <systemc>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include "sim/mem/fabric.h"
#include "sim/mem/hbm.h"
#include "sim/mem/l2_cache.h"
#include "sim/mem/mall.h"
#include "sim/mem/run_batch.h"
#include "tests/sim/fork_run.h"
#include "tests/sim/mem_stubs.h"
#include "tests/sim/moe_access_mix.h"
#include "tests/sim/small_die_chain.h"

using namespace tdmsim;
using namespace tdmsim::sim;

namespace {

// Between two blocks: passes every call on, counting calls and the runs
// they stand for (a batch's runs, or one).
struct Counter : sc_core::sc_module {
  tlm_utils::simple_target_socket<Counter> target;
  tlm_utils::simple_initiator_socket<Counter> initiator;
  std::uint64_t calls = 0, runs = 0;
  explicit Counter(sc_core::sc_module_name n) : sc_module(n), target("target"), initiator("initiator") {
    target.register_b_transport(this, &Counter::b_transport);
  }
  void b_transport(tlm::tlm_generic_payload& p, sc_core::sc_time& delay) {
    const MemAccess& a = p.get_extension<MemAccessExt>()->access;
    ++calls;
    runs += a.batch() ? a.run_count : 1;
    initiator->b_transport(p, delay);
  }
};

struct Outcome : tdmsim::test::ChainTally {
  std::uint64_t hbm_writes = 0;
  std::uint64_t mall_calls = 0, mall_runs = 0;  // into the MALL
};

// With `plain`, the L2 counts lines per channel line by line and visits
// every channel (L2Cache::set_plain_counts).
Outcome run(bool one_by_one, bool plain = false) {
  tdmsim::test::SmallDieChain chain(true);
  L2Cache& l2 = chain.l2;
  Mall& mall = *chain.mall;
  sim::test::Requester cpu("cpu");
  cpu.socket.bind(l2.target);
  l2.initiator.bind(chain.fabric.target);
  Counter counter("counter");
  chain.fabric.initiator.bind(counter.target);
  counter.initiator.bind(mall.target);
  mall.initiator.bind(chain.hbm.target);
  l2.set_runs_one_by_one(one_by_one);
  mall.set_runs_one_by_one(one_by_one);
  l2.set_plain_counts(plain);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);

  tdmsim::test::HashedSends sends;
  std::mt19937_64 rng(7);
  tdmsim::test::MoeAccessMix mix;
  const std::uint64_t row = mix.kRow, out = mix.kOut;
  std::vector<std::uint64_t>& sums = mix.sums;
  const auto send = [&](const MemAccess& a) { sends.send(cpu.socket, a); };
  for (int step = 0; step < 300; ++step) {
    mix.step(rng, send);
    // Atomic adds of long gathered rows (a down stage's bf16 output rows,
    // from a column off a line boundary at times): part lines at their ends,
    // whole lines between.
    for (auto& g : sums) g = (rng() % 512) * 2 * row;
    const auto from = static_cast<std::uint32_t>(rng() % 3 == 0 ? (rng() % 64) * 2 : (rng() % 4) * 512);
    MemAccess long_add{out + (96ull << 20) + from, static_cast<std::uint32_t>(2 * row - from - (rng() % 2) * 100),
                       static_cast<std::uint32_t>(sums.size()), 0, true, 0};
    long_add.gather = sums.data();
    long_add.atomic = true;
    send(long_add);
  }
  Outcome o;
  static_cast<tdmsim::test::ChainTally&>(o) = tdmsim::test::tally(chain, sends);
  o.hbm_writes = static_cast<std::uint64_t>(chain.stats.sum("hbm", "writes"));
  o.mall_calls = counter.calls;
  o.mall_runs = counter.runs;
  return o;
}

}  // namespace

TEST_CASE("runs sent below the L2 in batches give what each run sent on its own gives", "[run_batch]") {
  const Outcome ref = tdmsim::test::in_child<Outcome>([] { return run(true); });
  const Outcome got = tdmsim::test::in_child<Outcome>([] { return run(false); });
  // The accesses did what the comparison needs: misses at every level, HBM
  // reads of many runs (partly hit rows), write-backs.
  CHECK(ref.accesses == 1800);
  CHECK(ref.l2_misses > 0);
  CHECK(ref.mall_misses > 0);
  CHECK(ref.writebacks > 0);
  // Each run its own call in the reference; batches of several here.
  CHECK(ref.mall_calls == ref.mall_runs);
  CHECK(got.mall_runs == ref.mall_runs);
  CHECK(got.mall_calls < got.mall_runs / 2);
  CHECK(got.hbm_reads == ref.hbm_reads);
  CHECK(got.hbm_writes == ref.hbm_writes);
  CHECK(got.mall_misses == ref.mall_misses);
  CHECK(got.l2_misses == ref.l2_misses);
  CHECK(got.writebacks == ref.writebacks);
  CHECK(got.stats == ref.stats);
  CHECK(got.answers == ref.answers);
}

TEST_CASE("a batch stands for its runs merged as for_each_run sends them", "[run_batch]") {
  const std::vector<ByteRun> runs{{0, 128}, {128, 256}, {1024, 128}, {4096, 128}, {4224, 128}};
  std::vector<ByteRun> merged;
  merge_touching(runs, merged);
  std::vector<MemAccess> ref;
  for_each_run(runs, true, 3, [&](const MemAccess& a) { ref.push_back(a); });
  const MemAccess b = batch_access(merged, true, 3);
  REQUIRE(b.batch());
  std::vector<MemAccess> got;
  for_each_in_batch(b, [&](const MemAccess& a) { got.push_back(a); });
  REQUIRE(got.size() == ref.size());
  for (std::size_t i = 0; i < ref.size(); ++i) {
    CHECK(got[i].addr == ref[i].addr);
    CHECK(got[i].bytes() == ref[i].bytes());
    CHECK(got[i].rows == 1);
    CHECK(got[i].write == ref[i].write);
    CHECK(got[i].die == ref[i].die);
    CHECK_FALSE(got[i].batch());
  }
  // One run: a plain access.
  const std::vector<ByteRun> one{{512, 384}};
  CHECK_FALSE(batch_access(one, false, 0).batch());
}

TEST_CASE("to_sc_time gives the sc_time sc_time::from_value gives", "[run_batch]") {
  std::mt19937_64 rng(11);
  std::vector<Tick> values{0, 1, 999, kTicksPerNs, kTicksPerUs, 5'312'500'000ull, ~Tick{0} >> 1};
  for (int i = 0; i < 1000; ++i) values.push_back(rng() >> (rng() % 64));
  for (const Tick t : values) {
    const sc_core::sc_time a = to_sc_time(t), b = to_sc_time_reference(t);
    CHECK(a.value() == t);
    CHECK(a == b);
  }
}

TEST_CASE("transfer_ticks' 64-bit division gives the 128-bit division's ticks", "[run_batch][host]") {
  // The reference: the numerator always in 128 bits.
  const auto reference = [](std::uint64_t bytes, std::uint64_t bw) -> Tick {
    __extension__ typedef unsigned __int128 u128;
    if (bw == 0) return 0;
    return static_cast<Tick>((static_cast<u128>(bytes) * 1'000'000'000'000ull + bw - 1) / bw);
  };
  std::mt19937_64 rng(13);
  std::vector<std::uint64_t> sizes{0, 1, 127, 128, 4096, (1u << 24) - 1, 1u << 24, (1u << 24) + 1, ~0ull >> 20};
  std::vector<std::uint64_t> rates{1, 3, 999, 64ull * 2'400'000'000ull, 1ull << 59, (1ull << 60) - 1, 1ull << 60,
                                   ~0ull};
  for (int i = 0; i < 2000; ++i) {
    sizes.push_back(rng() >> (rng() % 64));
    rates.push_back(rng() >> (rng() % 64));
  }
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    for (std::size_t j = 0; j < rates.size(); j += 1 + i % 7) {
      REQUIRE(transfer_ticks(sizes[i], units::Bandwidth{rates[j]}) == reference(sizes[i], rates[j]));
    }
  }
}

TEST_CASE("the L2's channel counts in pieces and its visits of the channels with lines give the plain counts",
          "[run_batch]") {
  // The reference counts every run line by line (channel_of) and visits every
  // channel; the L2 counts whole groups once for all channels, part groups in
  // pieces or a lone line's channel, and visits only channels with lines.
  const Outcome ref = tdmsim::test::in_child<Outcome>([] { return run(false, true); });
  const Outcome got = tdmsim::test::in_child<Outcome>([] { return run(false, false); });
  CHECK(ref.accesses == 1800);
  CHECK(ref.l2_misses > 0);
  CHECK(ref.writebacks > 0);
  CHECK(got.l2_misses == ref.l2_misses);
  CHECK(got.writebacks == ref.writebacks);
  CHECK(got.hbm_reads == ref.hbm_reads);
  CHECK(got.stats == ref.stats);
  CHECK(got.answers == ref.answers);
}

TEST_CASE("runs free of touching neighbours are what merge_touching makes of them", "[run_batch][host]") {
  std::mt19937_64 rng(7);
  int free_lists = 0;
  for (int t = 0; t < 2000; ++t) {
    // Short lists of line runs, gaps of zero to two lines (touching often).
    std::vector<ByteRun> runs;
    std::uint64_t addr = rng() % 64 * 128;
    for (std::uint64_t n = rng() % 6; n > 0; --n) {
      const std::uint64_t bytes = (1 + rng() % 4) * 128;
      runs.push_back({addr, bytes});
      addr += bytes + rng() % 3 * 128;
    }
    std::vector<ByteRun> merged;
    merge_touching(runs, merged);
    const bool same = merged.size() == runs.size() &&
                      std::equal(runs.begin(), runs.end(), merged.begin(), [](const ByteRun& x, const ByteRun& y) {
                        return x.addr == y.addr && x.bytes == y.bytes;
                      });
    REQUIRE(touch_free(runs) == same);
    free_lists += same ? 1 : 0;
  }
  CHECK(free_lists > 100);
  CHECK(free_lists < 1900);
}
