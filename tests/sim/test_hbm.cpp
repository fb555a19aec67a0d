// HBM block harness: accesses driven straight into Hbm::serve with absolute
// arrival ticks; properties checked against the timing formula rather than
// golden numbers.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "sim/mem/hbm.h"
#include "workloads/config/loader.h"

using namespace tdmsim;
using namespace tdmsim::sim;

namespace {
HbmSpec test_spec() {
  HbmSpec s = config::defaults<HbmSpec>();
  s.generation = HbmGeneration::hbm3;
  s.stacks = 8;
  s.capacity = units::Bytes{192'000'000'000};
  s.bandwidth = units::Bandwidth{5'300'000'000'000};
  s.latency = units::Duration{300'000};
  s.interleave = units::Bytes{4096};
  return s;
}
}  // namespace

TEST_CASE("unloaded HBM latency follows the timing formula", "[hbm]") {
  StatRegistry stats;
  SimClock time;
  const HbmSpec spec = test_spec();
  Hbm hbm("hbm_latency", spec, stats, time);
  const Tick arrive = 10 * kTicksPerUs;
  const Tick done = hbm.serve({0x100000, 128, 1, 0, false, 0}, arrive);
  const units::Bandwidth per_channel{spec.bandwidth.bytes_per_s / hbm.channels()};
  // A cold row: activate, transfer, then the access latency; a refresh may
  // delay it at most once.
  const Tick expect = arrive + ticks(spec.row_miss_penalty) + transfer_ticks(128, per_channel) +
                      ticks(spec.latency);
  CHECK(done >= expect);
  CHECK(done <= expect + ticks(spec.refresh_time));
  // The same row again, right after: a row hit, no activation.
  const Tick again = hbm.serve({0x100080, 128, 1, 0, false, 0}, done);
  CHECK(again - done <= transfer_ticks(128, per_channel) + ticks(spec.latency) + ticks(spec.refresh_time));
  CHECK(again - done >= transfer_ticks(128, per_channel) + ticks(spec.latency));
}

TEST_CASE("streaming reads stay under peak and lose only refresh and row overheads", "[hbm]") {
  StatRegistry stats;
  SimClock time;
  const HbmSpec spec = test_spec();
  Hbm hbm("hbm_stream", spec, stats, time);
  const std::uint64_t total = 256ull << 20, chunk = 64 << 10;
  Tick done = 0;
  for (std::uint64_t off = 0; off < total; off += chunk) {
    done = std::max(done, hbm.serve({off, static_cast<std::uint32_t>(chunk), 1, 0, false, 0}, 0));
  }
  const double bw = static_cast<double>(total) / (static_cast<double>(done - ticks(spec.latency)) * 1e-12);
  const double peak = static_cast<double>(spec.bandwidth.bytes_per_s);
  const double refresh_loss =
      static_cast<double>(spec.refresh_time.ps) / static_cast<double>(spec.refresh_interval.ps);
  INFO("achieved " << bw / 1e12 << " TB/s of " << peak / 1e12);
  CHECK(bw <= peak);
  CHECK(bw >= peak * (1.0 - refresh_loss) * 0.95);
}

TEST_CASE("bandwidth grows with requesters until the channels saturate", "[hbm]") {
  // 1..N requesters each streaming its own region, all starting at 0.
  double previous = 0;
  for (std::uint32_t requesters : {1u, 4u, 16u, 64u}) {
    StatRegistry stats;
  SimClock time;
    const HbmSpec spec = test_spec();
    Hbm hbm(("hbm_req" + std::to_string(requesters)).c_str(), spec, stats, time);
    const std::uint64_t per = 4 << 20, chunk = 4096;
    Tick done = 0;
    for (std::uint32_t r = 0; r < requesters; ++r) {
      Tick t = 0;  // each requester issues its chunks one after another
      for (std::uint64_t off = 0; off < per; off += chunk) {
        t = hbm.serve({r * (1ull << 32) + off, static_cast<std::uint32_t>(chunk), 1, 0, false, 0}, t);
      }
      done = std::max(done, t);
    }
    const double bw = static_cast<double>(per) * requesters / (static_cast<double>(done) * 1e-12);
    INFO(requesters << " requesters: " << bw / 1e12 << " TB/s");
    CHECK(bw >= previous * 0.99);
    CHECK(bw <= static_cast<double>(spec.bandwidth.bytes_per_s));
    previous = bw;
  }
}

TEST_CASE("interleaving spreads sequential and strided addresses evenly over channels", "[hbm]") {
  StatRegistry stats;
  SimClock time;
  HbmSpec spec = test_spec();
  spec.interleave = units::Bytes{256};
  Hbm hbm("hbm_spread", spec, stats, time);
  const auto& map = hbm.map();
  for (std::uint64_t stride : {256ull, 4096ull, 1ull << 20}) {
    std::vector<std::uint64_t> count(map.channels, 0);
    const std::uint64_t n = map.channels * 64ull;
    for (std::uint64_t i = 0; i < n; ++i) ++count[map.channel(i * stride)];
    const auto [mn, mx] = std::minmax_element(count.begin(), count.end());
    INFO("stride " << stride << ": min " << *mn << " max " << *mx);
    CHECK(*mx <= 2 * 64);
    CHECK(*mn >= 64 / 2);
  }
}

TEST_CASE("the rows of a weight tile, kilobytes apart, reach every channel", "[hbm]") {
  // A K step of a weight tile reads one 128 B line from each of 128 rows
  // 32 KiB apart (bf16 rows of K = 16384), with MI300X's 4 KiB interleave:
  // the channel hash must not confine such strides to a fraction of the
  // 256 pseudo-channels (the plain block number mod 256 uses 32 of them).
  StatRegistry stats;
  SimClock time;
  Hbm hbm("hbm_tile_rows", test_spec(), stats, time);
  const auto& map = hbm.map();
  REQUIRE(map.channels == 256);
  std::vector<std::uint64_t> count(map.channels, 0);
  for (std::uint64_t tile = 0; tile < 8; ++tile) {     // 8 N tiles of 128 rows
    for (std::uint64_t k = 0; k < 256; k += 32) {       // a few K steps
      for (std::uint64_t r = 0; r < 128; ++r) ++count[map.channel((tile * 128 + r) * 32768 + k * 128)];
    }
  }
  const auto used = std::count_if(count.begin(), count.end(), [](std::uint64_t c) { return c > 0; });
  const auto mx = *std::max_element(count.begin(), count.end());
  INFO("channels used " << used << ", busiest " << mx << " of " << 8 * 8 * 128 << " lines");
  CHECK(used >= 240);
  CHECK(mx <= 3 * 8 * 8 * 128 / 256);
}

TEST_CASE("every address keeps one home: channel and local address are a bijection", "[hbm]") {
  StatRegistry stats;
  SimClock time;
  Hbm hbm("hbm_bijection", test_spec(), stats, time);
  const auto& map = hbm.map();
  std::set<std::pair<std::uint32_t, std::uint64_t>> homes;
  const std::uint64_t blocks = 4096;
  for (std::uint64_t b = 0; b < blocks; ++b) {
    const std::uint64_t addr = (std::uint64_t{1} << 32) + b * map.interleave + 64;
    homes.insert({map.channel(addr), map.local(addr)});
  }
  CHECK(homes.size() == blocks);
}
