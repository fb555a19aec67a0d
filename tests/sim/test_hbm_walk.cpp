// HBM's whole-chunk walk (sim/mem/hbm_walk.h, Hbm::walk_rows) against the
// chunk-by-chunk decode it replaces: the same place for every block of
// random runs on every shipped machine's map (and small maps), and the same
// completion, wait and stats for random accesses served both ways.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <systemc>
#include <tlm_utils/simple_initiator_socket.h>

#include "sim/mem/hbm.h"
#include "sim/mem/hbm_walk.h"
#include "sim/mem/run_batch.h"
#include "tests/sim/fork_run.h"
#include "tests/sim/hash_mix.h"
#include "tests/sim/mem_stubs.h"
#include "tests/sim/shipped_inputs.h"

using namespace tdmsim;
using namespace tdmsim::sim;

namespace {

std::vector<std::string> shipped_machine_names() {
  std::vector<std::string> names;
  const auto dir = std::filesystem::path(TDMSIM_SOURCE_DIR) / "workloads" / "machines";
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".yaml") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

HbmAddressMap map_of(const HbmSpec& s) {
  return HbmAddressMap(s.interleave.bytes, s.stacks * s.channels_per_stack * s.pseudo_channels, s.banks,
                       s.row_buffer.bytes);
}

// Every block of `runs` random runs walked from its first block, against place().
void check_walk(const HbmAddressMap& map, std::uint64_t seed) {
  REQUIRE(map.pow2());
  const HbmBlockWalk walk(map);
  std::mt19937_64 rng(seed);
  for (int run = 0; run < 400; ++run) {
    // Block indices small and large (the mix's shifted copies reach bit 17 on).
    std::uint64_t blk = (run % 2 == 0 ? rng() % (1ull << 20) : rng() % (1ull << 40));
    const std::uint64_t count = 1 + rng() % 300;
    REQUIRE(walk.block(blk * map.interleave) == blk);
    HbmAddressMap::Place at = walk.at(blk);
    for (std::uint64_t n = 0; n < count; ++n) {
      if (n > 0) at = walk.next(at, ++blk);
      const std::uint64_t addr = blk * map.interleave;
      const HbmAddressMap::Place want = map.place<true>(addr);
      const HbmAddressMap::Place plain = map.place<false>(addr);
      INFO("block " << blk << " of a run of " << count);
      REQUIRE(at.channel == want.channel);
      REQUIRE(at.bank == want.bank);
      REQUIRE(at.row == want.row);
      REQUIRE(want.channel == plain.channel);
      REQUIRE(want.bank == plain.bank);
      REQUIRE(want.row == plain.row);
      // The aligned run holding the block (Hbm::walk_runs): its first
      // block's bank and row, its channel XOR the offset.
      const std::uint64_t low = (std::uint64_t{1} << walk.run_bits()) - 1;
      const HbmAddressMap::Place first = walk.at(blk & ~low);
      REQUIRE((first.channel ^ static_cast<std::uint32_t>(blk & low)) == want.channel);
      REQUIRE(first.bank == want.bank);
      REQUIRE(first.row == want.row);
    }
  }
}

using tdmsim::test::hash_mix;

// Random accesses served by an Hbm walking whole chunks or not; a hash of
// every completion and wait, and the stats.
struct Served {
  std::uint64_t answers = tdmsim::test::kHashStart;
  std::vector<double> stats;
  std::uint64_t chunks_bytes = 0;
};

Served serve_random(const HbmSpec& spec, const std::string& name, bool reference, std::uint64_t seed) {
  StatRegistry stats;
  SimClock time;
  Hbm hbm(name.c_str(), spec, stats, time);
  hbm.set_reference_walk(reference);
  std::mt19937_64 rng(seed);
  const std::uint64_t il = spec.interleave.bytes;
  std::vector<std::uint64_t> gather(16);
  Served s;
  Tick at = 0;
  for (int i = 0; i < 3000; ++i) {
    MemAccess a;
    // Aligned and unaligned starts, in a region small enough for rows to be
    // opened again (row hits) and large enough for the mix's high bits.
    const std::uint64_t region = (i % 3 == 0) ? (64ull << 20) : (1ull << 36);
    a.addr = rng() % region;
    if (rng() % 2 == 0) a.addr -= a.addr % il;
    switch (rng() % 4) {
      case 0: a.row_bytes = static_cast<std::uint32_t>(1 + rng() % (2 * il)); break;       // a piece or two
      case 1: a.row_bytes = 7168; break;                                                   // a token row
      case 2: a.row_bytes = static_cast<std::uint32_t>(il * (1 + rng() % 64)); break;      // whole chunks
      default: a.row_bytes = static_cast<std::uint32_t>(1 + rng() % (300 * il)); break;   // a long run
    }
    const int shape = static_cast<int>(rng() % 4);
    if (shape == 1) {
      a.rows = 1 + static_cast<std::uint32_t>(rng() % 8);
      a.row_stride = a.row_bytes + rng() % (4 * il);
    } else if (shape == 2) {
      for (auto& g : gather) g = (rng() % 512) * 7168;
      a.rows = static_cast<std::uint32_t>(gather.size());
      a.gather = gather.data();
    } else if (shape == 3 && rng() % 8 == 0) {
      a.row_bytes = 0;
    }
    a.write = rng() % 3 == 0;
    // Arrivals close together (queueing, waits) and far apart (refreshes).
    at += (rng() % 10 == 0) ? rng() % (5 * kTicksPerUs) : rng() % (20 * kTicksPerNs);
    const Tick done = hbm.serve(a, at);
    hash_mix(s.answers, done);
    hash_mix(s.answers, hbm.last_wait());
  }
  for (const double v : stats.snapshot()) s.stats.push_back(v);
  s.chunks_bytes = hbm.bytes();
  return s;
}

// Batches of runs (as the MALL sends its misses) through HBM's socket, on
// machine `name`, walked or chunk by chunk; hashes of every answer (done,
// unloaded, wait) and of the stats.
struct BatchOutcome {
  std::uint64_t answers = tdmsim::test::kHashStart, stats = tdmsim::test::kHashStart;
  std::uint64_t reads = 0, writes = 0;
};

BatchOutcome serve_batches(const std::string& name, bool reference) {
  const HbmSpec spec = tdmsim::test::shipped_machine(name).memory.hbm;
  StatRegistry stats;
  SimClock time;
  Hbm hbm("hbm", spec, stats, time);
  hbm.set_reference_walk(reference);
  sim::test::Requester cpu("cpu");
  cpu.socket.bind(hbm.target);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  std::mt19937_64 rng(17);
  const std::uint64_t il = spec.interleave.bytes;
  BatchOutcome o;
  MemPort port;
  Tick at = 0;
  std::vector<ByteRun> runs;
  for (int i = 0; i < 1500; ++i) {
    runs.clear();
    const std::size_t n = 1 + rng() % 40;
    std::uint64_t addr = rng() % (1ull << 34);
    for (std::size_t k = 0; k < n; ++k) {
      // Token-row pieces, whole chunks and long runs, aligned or not.
      std::uint64_t bytes = 0;
      switch (rng() % 4) {
        case 0: bytes = 128 * (1 + rng() % 56); break;
        case 1: bytes = il * (1 + rng() % 8); break;
        case 2: bytes = 1 + rng() % (3 * il); break;
        default: bytes = il * (1 + rng() % 200) + rng() % il; break;
      }
      if (rng() % 2 == 0) addr -= addr % il;
      runs.push_back({addr, bytes});
      addr += bytes + (rng() % 3 == 0 ? 0 : rng() % (1ull << 22));
    }
    MemAccess b{runs.front().addr, static_cast<std::uint32_t>(runs.front().bytes), 1, 0, rng() % 3 == 0, 0};
    if (runs.size() > 1) {
      b.runs = runs.data();
      b.run_count = static_cast<std::uint32_t>(runs.size());
    }
    at += (rng() % 10 == 0) ? rng() % (5 * kTicksPerUs) : rng() % (50 * kTicksPerNs);
    const Tick done = port.send(cpu.socket, b, at, 0);
    hash_mix(o.answers, done);
    hash_mix(o.answers, port.unloaded());
    hash_mix(o.answers, port.wait());
  }
  tdmsim::test::hash_stats(o.stats, stats);
  o.reads = static_cast<std::uint64_t>(stats.sum("hbm", "reads"));
  o.writes = static_cast<std::uint64_t>(stats.sum("hbm", "writes"));
  return o;
}

// HBM's timing model kept plainly, the reference of Hbm's host layout (its
// channels' state in one record each, the banks' records in rotated places,
// hbm.h): a vector of banks per channel, indexed by the bank number, every
// chunk decoded by place().
struct PlainHbm {
  struct Bank {
    std::uint64_t open_row = ~0ull;
    Tick free = 0;
  };
  struct Channel {
    Tick bus = 0, next_refresh = 0;
    bool last_write = false;
    std::vector<Bank> banks;
    std::uint64_t bytes = 0, row_hits = 0, row_misses = 0, refreshes = 0;
  };
  explicit PlainHbm(const HbmSpec& hbm) : map(map_of(hbm)), spec(hbm) {
    bw = units::Bandwidth{hbm.bandwidth.bytes_per_s / map.channels};
    channels.resize(map.channels);
    for (std::size_t i = 0; i < channels.size(); ++i) {
      channels[i].banks.resize(map.banks);
      channels[i].next_refresh = ticks(hbm.refresh_interval) * (i + 1) / channels.size();
    }
  }
  Tick serve(const MemAccess& a, Tick arrive, Tick& wait) {
    Tick done = arrive;
    wait = 0;
    for (std::uint32_t r = 0; r < a.rows; ++r) {
      std::uint64_t addr = a.row(r), left = a.row_bytes;
      while (left > 0) {
        const std::uint64_t chunk = std::min(left, map.interleave - addr % map.interleave);
        const HbmAddressMap::Place p = map.place<false>(addr);
        Channel& ch = channels[p.channel];
        Bank& bank = ch.banks[p.bank];
        Tick ready = std::max(arrive, bank.free);
        if (bank.open_row != p.row) {
          ready += ticks(spec.row_miss_penalty);
          bank.open_row = p.row;
          ++ch.row_misses;
        } else {
          ++ch.row_hits;
        }
        Tick start = std::max(ready, ch.bus);
        wait = std::max(wait, start - ready);
        while (start >= ch.next_refresh) {
          start = std::max(start, ch.next_refresh + ticks(spec.refresh_time));
          ch.next_refresh += ticks(spec.refresh_interval);
          ++ch.refreshes;
        }
        if (a.write != ch.last_write) start += ticks(spec.turnaround);
        ch.last_write = a.write;
        ch.bus = start + transfer_ticks(chunk, bw);
        bank.free = ch.bus;
        ch.bytes += chunk;
        done = std::max(done, ch.bus);
        addr += chunk;
        left -= chunk;
      }
    }
    return done + ticks(spec.latency);
  }
  HbmAddressMap map;
  HbmSpec spec;
  units::Bandwidth bw{};
  std::vector<Channel> channels;
};

// Random accesses (as serve_random's) served by Hbm (walked, or chunk by
// chunk with `reference`) and by PlainHbm side by side: the same completion
// and wait for each, the same bytes, row hits, misses and refreshes per
// channel at the end. Returns the accesses compared.
int compare_with_plain(const HbmSpec& spec, const std::string& name, bool reference, std::uint64_t seed) {
  StatRegistry stats;
  SimClock time;
  Hbm hbm(name.c_str(), spec, stats, time);
  hbm.set_reference_walk(reference);
  PlainHbm plain(spec);
  std::mt19937_64 rng(seed);
  const std::uint64_t il = spec.interleave.bytes;
  std::vector<std::uint64_t> gather(16);
  Tick at = 0;
  int compared = 0;
  for (int i = 0; i < 2000; ++i) {
    MemAccess a;
    // A region small enough for rows to be opened again (row hits), and
    // one large enough for the mix's high bits.
    const std::uint64_t region = (i % 2 == 0) ? (16ull << 20) : (1ull << 36);
    a.addr = rng() % region;
    if (rng() % 2 == 0) a.addr -= a.addr % il;
    switch (rng() % 3) {
      case 0: a.row_bytes = static_cast<std::uint32_t>(1 + rng() % (2 * il)); break;
      case 1: a.row_bytes = static_cast<std::uint32_t>(il * (1 + rng() % 64)); break;
      default: a.row_bytes = static_cast<std::uint32_t>(1 + rng() % (100 * il)); break;
    }
    if (rng() % 3 == 0) {
      for (auto& g : gather) g = (rng() % 512) * 7168;
      a.rows = static_cast<std::uint32_t>(gather.size());
      a.gather = gather.data();
    }
    a.write = rng() % 3 == 0;
    at += (rng() % 10 == 0) ? rng() % (5 * kTicksPerUs) : rng() % (20 * kTicksPerNs);
    Tick want_wait = 0;
    const Tick want = plain.serve(a, at, want_wait);
    const Tick got = hbm.serve(a, at);
    INFO("access " << i);
    REQUIRE(got == want);
    REQUIRE(hbm.last_wait() == want_wait);
    ++compared;
  }
  for (std::uint32_t c = 0; c < plain.map.channels; ++c) {
    INFO("channel " << c);
    const std::string ch = name + ".ch[" + std::to_string(c) + "]";
    REQUIRE(hbm.channel_bytes(c) == plain.channels[c].bytes);
    REQUIRE(stats.sum(ch, "row_hits") == static_cast<double>(plain.channels[c].row_hits));
    REQUIRE(stats.sum(ch, "row_misses") == static_cast<double>(plain.channels[c].row_misses));
    REQUIRE(stats.sum(ch, "refreshes") == static_cast<double>(plain.channels[c].refreshes));
  }
  return compared;
}

}  // namespace

TEST_CASE("HBM's channel and bank records give what a plain vector of banks per channel gives", "[hbm_walk]") {
  int machines = 0;
  for (const std::string& name : shipped_machine_names()) {
    const HbmSpec spec = tdmsim::test::shipped_machine(name).memory.hbm;
    INFO(name);
    CHECK(compare_with_plain(spec, "hbm_plain_w_" + name, false, 7) == 2000);
    CHECK(compare_with_plain(spec, "hbm_plain_r_" + name, true, 8) == 2000);
    ++machines;
  }
  CHECK(machines >= 6);
  // Interleave blocks of one row and of more rows than banks, 32 banks, one bank.
  HbmSpec spec = tdmsim::test::shipped_machine("mi355x").memory.hbm;
  for (const auto& [il, row, banks] : {std::tuple{1024ull, 1024ull, 16u}, std::tuple{65536ull, 1024ull, 16u},
                                       std::tuple{4096ull, 2048ull, 32u}, std::tuple{4096ull, 1024ull, 1u}}) {
    spec.interleave.bytes = il;
    spec.row_buffer.bytes = row;
    spec.banks = banks;
    INFO("interleave " << il << ", rows " << row << ", banks " << banks);
    CHECK(compare_with_plain(spec, "hbm_plain_" + std::to_string(il) + "_" + std::to_string(banks), false, 9) == 2000);
  }
}

TEST_CASE("HBM's batches walked in one walk give what their runs served one by one give", "[hbm_walk]") {
  for (const std::string name : {"mi355x", "mi300x", "h200"}) {
    INFO(name);
    const BatchOutcome ref = tdmsim::test::in_child<BatchOutcome>([&] { return serve_batches(name, true); });
    const BatchOutcome got = tdmsim::test::in_child<BatchOutcome>([&] { return serve_batches(name, false); });
    CHECK(ref.reads > 10000);
    CHECK(ref.writes > 5000);
    CHECK(got.reads == ref.reads);
    CHECK(got.writes == ref.writes);
    CHECK(got.answers == ref.answers);
    CHECK(got.stats == ref.stats);
  }
}

TEST_CASE("HBM's block walk places every block of a run as place() does, on every shipped machine", "[hbm_walk]") {
  int walked = 0, walked_mi355x = 0;
  for (const std::string& name : shipped_machine_names()) {
    const HbmAddressMap map = map_of(tdmsim::test::shipped_machine(name).memory.hbm);
    if (!map.pow2()) continue;  // (MI455X: 768 channels, decoded chunk by chunk)
    INFO(name);
    check_walk(map, 11);
    ++walked;
    if (name == "mi355x") ++walked_mi355x;
  }
  // (H200's 192 and MI455X's 768 channels are no powers of two.)
  CHECK(walked >= 4);
  CHECK(walked_mi355x == 1);
  // Small maps: fewer than 8 channels (fewer low bits move the channel alone),
  // one channel, an interleave under the row, one bank.
  for (const auto& m : {HbmAddressMap(4096, 4, 16, 1024), HbmAddressMap(4096, 2, 16, 1024),
                        HbmAddressMap(4096, 1, 16, 1024), HbmAddressMap(256, 64, 16, 1024),
                        HbmAddressMap(256, 8, 1, 2048), HbmAddressMap(1024, 512, 32, 1024)}) {
    INFO("map " << m.interleave << " B x " << m.channels << " channels x " << m.banks << " banks, rows "
                << m.row_bytes);
    check_walk(m, 5);
  }
}

TEST_CASE("HBM served with the block walk gives what chunk-by-chunk decoding gives", "[hbm_walk]") {
  int compared = 0;
  for (const std::string& name : shipped_machine_names()) {
    const HbmSpec spec = tdmsim::test::shipped_machine(name).memory.hbm;
    INFO(name);
    const Served ref = serve_random(spec, "hbm_ref_" + name, true, 3);
    const Served got = serve_random(spec, "hbm_walk_" + name, false, 3);
    CHECK(got.answers == ref.answers);
    CHECK(got.chunks_bytes == ref.chunks_bytes);
    REQUIRE(got.stats.size() == ref.stats.size());
    for (std::size_t i = 0; i < ref.stats.size(); ++i) {
      INFO("stat " << i);
      CHECK(std::memcmp(&got.stats[i], &ref.stats[i], sizeof(double)) == 0);
    }
    ++compared;
  }
  CHECK(compared >= 6);
}

TEST_CASE("the MALL's block walk decodes every block of a run as channel_and_group_local does", "[hbm_walk]") {
  std::mt19937_64 rng(9);
  const auto check = [&](const HbmAddressMap& map, const Divisor& per_group) {
    REQUIRE(map.pow2());
    REQUIRE(per_group.pow2());
    const HbmGroupBlockWalk walk(map, per_group);
    for (int run = 0; run < 400; ++run) {
      std::uint64_t blk = (run % 2 == 0 ? rng() % (1ull << 20) : rng() % (1ull << 40));
      const std::uint64_t count = 1 + rng() % 300;
      HbmGroupBlockWalk::Place at = walk.at(blk);
      for (std::uint64_t n = 0; n < count; ++n) {
        if (n > 0) at = walk.next(at, ++blk);
        const std::uint64_t addr = blk * map.interleave;
        const auto [channel, local] = map.channel_and_group_local<true>(addr, per_group);
        const auto [plain_channel, plain_local] = map.channel_and_group_local<false>(addr, per_group);
        INFO("block " << blk << " of a run of " << count);
        REQUIRE(at.group == per_group.div(channel));
        REQUIRE(at.local == local);
        REQUIRE(channel == plain_channel);
        REQUIRE(local == plain_local);
        // The aligned run holding the block (chunk_streak): its first
        // block's group, its local address XOR the offset in blocks.
        const std::uint64_t low = (std::uint64_t{1} << walk.run_bits()) - 1;
        const HbmGroupBlockWalk::Place first = walk.at(blk & ~low);
        REQUIRE(first.group == at.group);
        REQUIRE((first.local ^ ((blk & low) * map.interleave)) == local);
      }
    }
  };
  int walked = 0;
  for (const std::string& name : shipped_machine_names()) {
    const HbmSpec spec = tdmsim::test::shipped_machine(name).memory.hbm;
    const HbmAddressMap map = map_of(spec);
    const Divisor per_stack(std::max(1u, map.channels / spec.stacks));  // the MALL's (mall.cpp)
    if (!map.pow2() || !per_stack.pow2()) continue;
    INFO(name);
    check(map, per_stack);
    ++walked;
  }
  CHECK(walked >= 4);
  // Groups of fewer than 8 channels, of one, of all.
  for (const std::uint64_t pg : {1ull, 2ull, 4ull, 8ull, 64ull}) {
    INFO("per group " << pg);
    check(HbmAddressMap(4096, 64, 16, 1024), Divisor(pg));
  }
  check(HbmAddressMap(4096, 4, 16, 1024), Divisor(2));
}
