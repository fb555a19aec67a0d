// The expert-parallel layer's timeline (apps/tdmsim/ep_timeline.h): one
// micro-batch is the barrier rule bit for bit; with several, overlap can only
// shorten the micro-batches run one after another, never below either
// resource's busy time; every rank's compute + exposed communication + wait
// is the layer.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

#include "apps/tdmsim/ep_timeline.h"

namespace tdmsim::cli {
namespace {

using Grid = std::vector<std::vector<double>>;

net::CollectiveResult coll(double time, std::size_t ranks, std::mt19937_64& rng) {
  net::CollectiveResult r;
  r.time_s = time;
  std::uniform_real_distribution<double> share(0.2, 1.0);
  for (std::size_t i = 0; i < ranks; ++i) {
    r.rank_time_s.push_back(time * share(rng));
    r.sent_bytes.push_back(1.0);
    r.received_bytes.push_back(1.0);
  }
  return r;
}

struct Case {
  Grid routing, experts, compute;
  std::vector<net::CollectiveResult> dispatch, combine;
};

Case random_case(std::size_t chunks, std::size_t ranks, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> t(1e-6, 50e-6);
  Case c;
  for (std::size_t k = 0; k < chunks; ++k) {
    c.routing.emplace_back();
    c.experts.emplace_back();
    c.compute.emplace_back();
    for (std::size_t r = 0; r < ranks; ++r) {
      c.routing.back().push_back(t(rng) * 0.1);
      c.experts.back().push_back(t(rng));
      c.compute.back().push_back(c.routing.back().back() + c.experts.back().back());
    }
    c.dispatch.push_back(coll(t(rng), ranks, rng));
    c.combine.push_back(coll(t(rng), ranks, rng));
  }
  return c;
}

EpTimeline run(const Case& c) { return ep_timeline(c.routing, c.experts, c.compute, c.dispatch, c.combine); }

}  // namespace

TEST_CASE("ep timeline: one micro-batch is the barrier rule bit for bit", "[ep]") {
  std::mt19937_64 rng(7);
  for (std::size_t ranks : {1, 2, 4, 8}) {
    const Case c = random_case(1, ranks, rng);
    const EpTimeline t = run(c);
    const double before = *std::max_element(c.routing[0].begin(), c.routing[0].end());
    const double after = *std::max_element(c.experts[0].begin(), c.experts[0].end());
    CHECK(t.total_s == before + c.dispatch[0].time_s + after + c.combine[0].time_s);
    CHECK(t.serial_s == t.total_s);
    for (std::size_t r = 0; r < ranks; ++r) {
      CHECK(t.dispatch_s[r] == c.dispatch[0].rank_time_s[r]);
      CHECK(t.combine_s[r] == c.combine[0].rank_time_s[r]);
      CHECK(t.dispatch_hidden_s[r] == 0.0);
      CHECK(t.combine_hidden_s[r] == 0.0);
      CHECK(t.wait_s[r] == std::max(0.0, t.total_s - c.compute[0][r] -
                                             (c.dispatch[0].rank_time_s[r] + c.combine[0].rank_time_s[r])));
    }
  }
}

TEST_CASE("ep timeline: overlap only helps, within the resources' busy time", "[ep]") {
  std::mt19937_64 rng(11);
  std::size_t strictly_faster = 0, cases = 0;
  for (std::size_t chunks = 2; chunks <= 6; ++chunks) {
    for (std::size_t ranks : {1, 2, 3, 8}) {
      for (int draw = 0; draw < 40; ++draw, ++cases) {
        const Case c = random_case(chunks, ranks, rng);
        const EpTimeline t = run(c);
        INFO("chunks " << chunks << " ranks " << ranks << " draw " << draw);
        // Never later than the micro-batches one after another.
        REQUIRE(t.total_s <= t.serial_s * (1 + 1e-12));
        strictly_faster += t.total_s < t.serial_s * (1 - 1e-9) ? 1 : 0;
        // Never earlier than any rank's compute or the collectives back to back.
        double comm = 0;
        for (std::size_t k = 0; k < chunks; ++k) comm += c.dispatch[k].time_s + c.combine[k].time_s;
        REQUIRE(t.total_s >= comm * (1 - 1e-12));
        for (std::size_t r = 0; r < ranks; ++r) {
          double busy = 0, own = 0;
          for (std::size_t k = 0; k < chunks; ++k) {
            busy += c.routing[k][r] + c.experts[k][r];
            own += c.dispatch[k].rank_time_s[r] + c.combine[k].rank_time_s[r];
          }
          REQUIRE(t.total_s >= busy * (1 - 1e-12));
          // Exposed + hidden is the rank's own share; the four terms are the layer.
          REQUIRE(t.dispatch_s[r] + t.combine_s[r] + t.dispatch_hidden_s[r] + t.combine_hidden_s[r] ==
                  Approx(own).epsilon(1e-12));
          REQUIRE(t.dispatch_s[r] >= 0);
          REQUIRE(t.combine_s[r] >= 0);
          REQUIRE(t.compute_s[r] + t.dispatch_s[r] + t.combine_s[r] + t.wait_s[r] ==
                  Approx(t.total_s).epsilon(1e-12));
        }
        // Dependencies and one-at-a-time order hold in the spans.
        for (std::size_t k = 0; k < chunks; ++k) {
          for (std::size_t r = 0; r < ranks; ++r) {
            REQUIRE(t.dispatch[k].start_s >= t.routing[k][r].end_s);
            REQUIRE(t.experts[k][r].start_s >= t.dispatch[k].end_s);
            REQUIRE(t.combine[k].start_s >= t.experts[k][r].end_s);
            if (k + 1 < chunks) REQUIRE(t.experts[k][r].start_s >= t.routing[k + 1][r].end_s);
          }
          if (k + 1 < chunks) REQUIRE(t.combine[k].start_s >= t.dispatch[k + 1].end_s);
          if (k >= 2) REQUIRE(t.dispatch[k].start_s >= t.combine[k - 2].end_s);
        }
      }
    }
  }
  // The pipeline does hide communication on most draws.
  CHECK(strictly_faster > cases / 2);
}

TEST_CASE("ep timeline: two equal micro-batches hide one collective under compute", "[ep]") {
  // One rank, no routing time: E = 10, D = K = 4 per micro-batch. Serial:
  // 2 x (4 + 10 + 4) = 36. Pipelined: D0 [0,4], D1 [4,8], E0 [4,14],
  // K0 [14,18], E1 [14,24], K1 [24,28].
  std::mt19937_64 rng(1);
  Case c;
  c.routing = {{0.0}, {0.0}};
  c.experts = c.compute = {{10.0}, {10.0}};
  for (int k = 0; k < 2; ++k) {
    c.dispatch.push_back(coll(4.0, 1, rng));
    c.combine.push_back(coll(4.0, 1, rng));
  }
  const EpTimeline t = run(c);
  CHECK(t.serial_s == 36.0);
  CHECK(t.total_s == 28.0);
  CHECK(t.experts[1][0].start_s == 14.0);
  CHECK(t.combine[0].start_s == 14.0);
}

TEST_CASE("ep timeline: the collectives of the micro-batches add up", "[ep]") {
  std::mt19937_64 rng(3);
  std::vector<net::CollectiveResult> parts = {coll(2.0, 2, rng), coll(5.0, 2, rng)};
  parts[0].bottleneck = "a";
  parts[1].bottleneck = "b";
  const net::CollectiveResult s = sum_collectives(parts);
  CHECK(s.time_s == 7.0);
  CHECK(s.bottleneck == "b");
  CHECK(s.sent_bytes[1] == 2.0);
  CHECK(s.rank_time_s[0] == parts[0].rank_time_s[0] + parts[1].rank_time_s[0]);
  CHECK(sum_collectives({parts[0]}).time_s == 2.0);
}

}  // namespace tdmsim::cli
