#include "apps/tdmsim/serving_queue.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <numeric>
#include <string_view>

#include <fmt/core.h>

#include "apps/tdmsim/output_dir.h"

namespace tdmsim::cli::serving {
namespace {

// The latest arrival an arrival trace may give (us): double us then resolve
// about 0.1 ns.
constexpr double kMaxArrivalUs = 1e12;

// SplitMix64: a small generator whose output is fixed by its definition.
struct SplitMix64 {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1), 53 bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::vector<Request> generate_requests(const ServingSpec& s, std::uint64_t seed) {
  // The stream's own generator, apart from the routing draws (which use the seed directly).
  SplitMix64 rng{seed ^ 0x5E4F1A6C0FFEE123ULL};
  const double gap = s.interarrival.us();
  const std::uint32_t lo = s.request_tokens;
  const std::uint32_t hi = s.request_tokens_max == 0 ? lo : std::max(lo, s.request_tokens_max);
  std::vector<Request> out(s.requests);
  double t = 0;
  for (std::uint32_t i = 0; i < s.requests; ++i) {
    if (s.arrival == ArrivalProcess::poisson) {
      t += -gap * std::log1p(-rng.uniform());
    } else if (i > 0) {
      t += gap;
    }
    std::uint32_t tokens = lo;
    if (hi > lo) {
      const auto span = static_cast<std::uint64_t>(hi - lo) + 1;
      tokens = lo + static_cast<std::uint32_t>(std::min<std::uint64_t>(
                        span - 1, static_cast<std::uint64_t>(rng.uniform() * static_cast<double>(span))));
    }
    out[i] = {i, t, tokens};
  }
  return out;
}

std::vector<Request> parse_arrival_trace(const std::string& text, const std::string& file, std::uint32_t max_tokens) {
  std::vector<Request> out;
  std::size_t line_no = 0;
  std::size_t pos = 0;
  bool first_content = true;
  while (pos <= text.size()) {
    const std::size_t end = std::min(text.find('\n', pos), text.size());
    const std::string_view raw(text.data() + pos, end - pos);
    pos = end + 1;
    ++line_no;
    std::string_view line = raw;
    if (const auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) {
      if (end == text.size()) break;
      continue;
    }
    const auto bad = [&](const std::string& why) {
      return BadInput(fmt::format("{}:{}: arrival trace: {} (lines 'arrival_us,tokens')", file, line_no, why));
    };
    const auto comma = line.find(',');
    if (comma == std::string_view::npos) throw bad(fmt::format("expected 'arrival_us,tokens', got '{}'", line));
    const std::string_view a = trim(line.substr(0, comma));
    const std::string_view b = trim(line.substr(comma + 1));
    if (first_content && a == "arrival_us" && b == "tokens") {
      first_content = false;
      continue;
    }
    first_content = false;
    double arrival = 0;
    const auto ra = std::from_chars(a.data(), a.data() + a.size(), arrival);
    if (ra.ec != std::errc{} || ra.ptr != a.data() + a.size() || !std::isfinite(arrival) || arrival < 0) {
      throw bad(fmt::format("arrival_us '{}' is not a finite number >= 0", a));
    }
    // Beyond it, a latency (done - arrival, in double us) loses its
    // resolution: 1e300 had given latencies of 0.
    if (arrival > kMaxArrivalUs) {
      throw bad(fmt::format("arrival_us {} is beyond 10^12 us (11.6 days), where latencies lose their precision",
                            a));
    }
    std::uint64_t tokens = 0;
    const auto rb = std::from_chars(b.data(), b.data() + b.size(), tokens);
    if (rb.ec != std::errc{} || rb.ptr != b.data() + b.size() || tokens == 0) {
      throw bad(fmt::format("tokens '{}' is not an integer >= 1", b));
    }
    if (tokens > max_tokens) {
      throw bad(fmt::format("a request of {} tokens does not fit a batch of tokens {} (the scenario's tokens)", tokens,
                            max_tokens));
    }
    if (!out.empty() && arrival < out.back().arrival_us) {
      throw bad(fmt::format("arrival {} us is before the previous line's {} us (arrivals in order)", arrival,
                            out.back().arrival_us));
    }
    if (out.size() >= 1000000) throw bad("more than 1000000 requests");
    out.push_back({static_cast<std::uint32_t>(out.size()), arrival, static_cast<std::uint32_t>(tokens)});
    if (end == text.size()) break;
  }
  if (out.empty()) throw BadInput(fmt::format("{}: arrival trace: no requests", file));
  return out;
}

std::vector<Batch> serve(const std::vector<Request>& requests, const BatchPolicy& policy, const ServiceTime& service) {
  std::vector<Batch> batches;
  const std::size_t n = requests.size();
  const double inf = std::numeric_limits<double>::infinity();
  double free_at = 0;
  std::size_t head = 0;
  while (head < n) {
    // The batch the queue would give if every request had arrived: head..j-1.
    std::size_t j = head;
    std::uint64_t tokens = 0;
    // (A request larger than max_tokens is refused before this; should one
    // come, it runs alone.)
    if (requests[head].tokens > policy.max_tokens) {
      tokens = requests[head].tokens;
      ++j;
    }
    while (j < n && (policy.max_batch == 0 || j - head < policy.max_batch) &&
           tokens + requests[j].tokens <= policy.max_tokens) {
      tokens += requests[j].tokens;
      ++j;
    }
    // When that batch is known to be full: its last request fills it, or the
    // next one arrives and does not fit.
    double full_at = inf;
    if ((policy.max_batch != 0 && j - head == policy.max_batch) || tokens >= policy.max_tokens) {
      full_at = requests[j - 1].arrival_us;
    } else if (j < n) {
      full_at = requests[j].arrival_us;
    }
    const double start = std::max(free_at, std::min(requests[head].arrival_us + policy.timeout_us, full_at));
    std::size_t k = head;
    std::uint32_t batch_tokens = 0;
    while (k < j && requests[k].arrival_us <= start) batch_tokens += requests[k++].tokens;
    Batch b;
    b.index = static_cast<std::uint32_t>(batches.size());
    b.first = requests[head].id;
    b.count = static_cast<std::uint32_t>(k - head);
    b.tokens = batch_tokens;
    b.start_us = start;
    b.service_us = service(b);
    free_at = b.end_us();
    batches.push_back(b);
    head = k;
  }
  return batches;
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

Spread spread(const std::vector<double>& v) {
  Spread s;
  if (v.empty()) return s;
  s.p50 = percentile(v, 0.5);
  s.p90 = percentile(v, 0.9);
  s.p99 = percentile(v, 0.99);
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  return s;
}

void refuse_serving(const config::ResolvedScenario& sc, const std::string& command) {
  if (!sc.scenario.spec.serving) return;
  const config::Location at =
      config::nearest_location(sc.scenario.set_at, "serving", {sc.scenario.file.string(), 1, 1});
  throw BadInput(config::Diagnostic{at, "serving",
                                    fmt::format("a request stream is run by tdmsim run only; {} takes one layer "
                                                "(remove the serving: section)",
                                                command)}
                     .to_string());
}

}  // namespace tdmsim::cli::serving
