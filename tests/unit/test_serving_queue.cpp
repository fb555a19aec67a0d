// The request stream's queue without the simulator (apps/tdmsim/serving_queue.h):
// batches formed by hand-worked rules, arrivals by their definition, traces
// refused with file and line.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "apps/tdmsim/output_dir.h"
#include "apps/tdmsim/serving_queue.h"

using namespace tdmsim;
using namespace tdmsim::cli::serving;

namespace {

std::vector<Request> at(const std::vector<double>& times, std::uint32_t tokens = 1) {
  std::vector<Request> r;
  for (std::size_t i = 0; i < times.size(); ++i) r.push_back({static_cast<std::uint32_t>(i), times[i], tokens});
  return r;
}

ServiceTime constant(double us) {
  return [us](const Batch&) { return us; };
}

}  // namespace

TEST_CASE("serve: timeout 0 runs whatever has arrived when the GPU frees up") {
  // Arrivals 0,1,2,3,4 us; service 2.5 us; no limits.
  const auto b = serve(at({0, 1, 2, 3, 4}), {0, 100, 0.0}, constant(2.5));
  // [0] at 0 -> 2.5; [1,2] at 2.5 -> 5; [3,4] at 5 -> 7.5.
  REQUIRE(b.size() == 3);
  CHECK(b[0].first == 0);
  CHECK(b[0].count == 1);
  CHECK(b[1].first == 1);
  CHECK(b[1].count == 2);
  CHECK(b[1].start_us == 2.5);
  CHECK(b[2].first == 3);
  CHECK(b[2].count == 2);
  CHECK(b[2].start_us == 5.0);
}

TEST_CASE("serve: a batch waits for its timeout, or less when it fills") {
  // max_batch 3, timeout 10 us, service 1 us.
  // Arrivals 0, 2, 4 fill the first batch at 4; 20 waits alone until 30; 40, 41, 42 fill at 42.
  const auto b = serve(at({0, 2, 4, 20, 40, 41, 42}), {3, 100, 10.0}, constant(1.0));
  REQUIRE(b.size() == 3);
  CHECK(b[0].start_us == 4.0);
  CHECK(b[0].count == 3);
  CHECK(b[1].start_us == 30.0);
  CHECK(b[1].count == 1);
  CHECK(b[2].start_us == 42.0);
  CHECK(b[2].count == 3);
}

TEST_CASE("serve: the token limit closes a batch when the next request would not fit") {
  // max_tokens 10, requests of 4 tokens at 0, 1, 2: two fit; the third's arrival at 2 closes the batch.
  const auto b = serve(at({0, 1, 2}, 4), {0, 10, 50.0}, constant(3.0));
  REQUIRE(b.size() == 2);
  CHECK(b[0].start_us == 2.0);
  CHECK(b[0].count == 2);
  CHECK(b[0].tokens == 8);
  // The third request then waits its timeout (from 2 us) alone: the stream has ended.
  CHECK(b[1].start_us == 52.0);
  CHECK(b[1].tokens == 4);
}

TEST_CASE("serve: a busy GPU delays the batch past its timeout, and it takes what has queued") {
  // Service 100 us: requests at 1..5 queue behind the first batch and go together at 100.
  const auto b = serve(at({0, 1, 2, 3, 4, 5}), {0, 100, 0.0}, constant(100.0));
  REQUIRE(b.size() == 2);
  CHECK(b[1].start_us == 100.0);
  CHECK(b[1].count == 5);
  CHECK(b[1].end_us() == 200.0);
}

TEST_CASE("serve: the service time is asked once per batch with its tokens") {
  std::vector<std::uint32_t> seen;
  const auto b = serve(at({0, 0, 0, 10}, 3), {2, 100, 0.0}, [&](const Batch& x) {
    seen.push_back(x.tokens);
    return 1.0 + x.tokens;
  });
  REQUIRE(b.size() == 3);
  CHECK(seen == std::vector<std::uint32_t>{6, 3, 3});
  CHECK(b[1].start_us == 7.0);  // 0 + (1 + 6)
  CHECK(b[2].start_us == 11.0);  // max(7 + 4, 10)
}

TEST_CASE("generate_requests: fixed gaps, Poisson gaps of the given mean, tokens in range, deterministic") {
  ServingSpec s;
  s.arrival = ArrivalProcess::fixed;
  s.interarrival.ps = 5'000'000;  // 5 us
  s.requests = 4;
  s.request_tokens = 2;
  const auto f = generate_requests(s, 1);
  REQUIRE(f.size() == 4);
  CHECK(f[3].arrival_us == 15.0);
  CHECK(f[2].tokens == 2);

  s.arrival = ArrivalProcess::poisson;
  s.requests = 20000;
  s.request_tokens = 1;
  s.request_tokens_max = 8;
  const auto p = generate_requests(s, 7);
  const double mean_gap = p.back().arrival_us / static_cast<double>(p.size());
  CHECK(mean_gap == Approx(5.0).epsilon(0.03));  // 20000 gaps: standard error 0.7%
  bool low = false, high = false;
  for (const auto& r : p) {
    REQUIRE(r.tokens >= 1);
    REQUIRE(r.tokens <= 8);
    low |= r.tokens == 1;
    high |= r.tokens == 8;
  }
  CHECK(low);
  CHECK(high);
  const auto again = generate_requests(s, 7);
  CHECK(again.back().arrival_us == p.back().arrival_us);
  CHECK(generate_requests(s, 8).back().arrival_us != p.back().arrival_us);
}

TEST_CASE("parse_arrival_trace: header, comments, and refusals naming file and line") {
  const auto r = parse_arrival_trace("arrival_us,tokens\n# a comment\n0,4\n\n2.5, 1\n", "t.csv", 8);
  REQUIRE(r.size() == 2);
  CHECK(r[1].arrival_us == 2.5);
  CHECK(r[1].tokens == 1);
  const auto refused = [](const std::string& text, const std::string& what) {
    try {
      (void)parse_arrival_trace(text, "t.csv", 8);
    } catch (const tdmsim::cli::BadInput& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(what) != std::string::npos);
      return;
    }
    FAIL("not refused: " << text);
  };
  refused("0,1\n3,9\n", "t.csv:2: arrival trace: a request of 9 tokens");
  refused("5,1\n3,1\n", "t.csv:2: arrival trace: arrival 3 us is before");
  refused("0,1\nx,1\n", "t.csv:2: arrival trace: arrival_us 'x'");
  refused("0;1\n", "t.csv:1:");
  refused("0,0\n", "tokens '0'");
  refused("# nothing\n", "no requests");
  // Arrivals where latencies (done - arrival, double us) keep their resolution.
  refused("1e300,1\n", "t.csv:1: arrival trace: arrival_us 1e300 is beyond 10^12 us");
  CHECK(parse_arrival_trace("1e12,1\n", "t.csv", 8).size() == 1);
  // The user's bytes, printable: a byte-order mark and a NUL are shown, not sent raw.
  refused("\xef\xbb\xbf" "0,1\n", "arrival_us '\\ufeff0'");
  refused(std::string("0,1\0\n", 5), "tokens '1\\x00'");
}

TEST_CASE("percentile: nearest rank") {
  CHECK(percentile({3, 1, 2, 4}, 0.5) == 2);
  CHECK(percentile({3, 1, 2, 4}, 0.99) == 4);
  CHECK(percentile({}, 0.5) == 0);
  const auto s = spread({1, 2, 3, 4});
  CHECK(s.mean == 2.5);
  CHECK(s.min == 1);
  CHECK(s.max == 4);
}
