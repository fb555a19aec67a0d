// The order a compute unit steps its slots in (sim/cu/slot_order.h) against
// the scan ComputeUnit::resume did before it (a copy below, the reference):
// random streams of slot times through both, the slot chosen compared at
// every step.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <vector>

#include "sim/cu/slot_order.h"

using tdmsim::sim::Tick;
using tdmsim::sim::SlotOrder;

namespace {

constexpr Tick kOrderIdle = ~Tick{0};

// The busy slot with the earliest time, the first of equals (resume()'s
// scan until 2026-12-03); times.size() when every slot is idle.
std::size_t scan_earliest_slot(const std::vector<Tick>& times) {
  std::size_t n = 0;
  Tick earliest = times[0];
  for (std::size_t i = 1; i < times.size(); ++i) {
    if (times[i] < earliest) {
      earliest = times[i];
      n = i;
    }
  }
  return earliest == kOrderIdle ? times.size() : n;
}

}  // namespace

TEST_CASE("slots come in the order of a scan for the earliest, the first of equals", "[cu]") {
  std::mt19937_64 rng(20261203);
  for (int round = 0; round < 400; ++round) {
    const std::size_t count = 1 + rng() % 9;
    // Few distinct times (many ties), or spread ones; some slots idle.
    const Tick spread = round % 3 == 0 ? 4 : round % 3 == 1 ? 64 : 1'000'000;
    std::vector<Tick> times(count);
    for (auto& t : times) t = rng() % 8 == 0 ? kOrderIdle : rng() % spread;
    SlotOrder order;
    order.reset(times);
    REQUIRE(order.size() == count);
    for (int step = 0; step < 300; ++step) {
      const std::size_t want = scan_earliest_slot(times);
      if (want == count) {
        REQUIRE(order.first().time == kOrderIdle);
        break;
      }
      REQUIRE(order.first().slot == want);
      REQUIRE(order.first().time == times[want]);
      // The slot runs on by a step (often 0: it stays), waits a while, goes
      // idle, or is refilled at the same time.
      const auto what = rng() % 16;
      Tick t = times[want];
      if (what < 4) {
        t += 0;
      } else if (what < 13) {
        t += rng() % spread;
      } else if (what < 15) {
        t += spread * (1 + rng() % 4);
      } else {
        t = kOrderIdle;
      }
      times[want] = t;
      order.requeue_first(t);
      // The whole order stays sorted by (time, slot).
      for (std::size_t k = 1; k < count; ++k) {
        const auto& a = order.at(k - 1);
        const auto& b = order.at(k);
        REQUIRE((a.time < b.time || (a.time == b.time && a.slot < b.slot)));
      }
    }
  }
}
