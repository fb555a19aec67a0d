// A request stream on one GPU (docs/serving.md), without the simulator:
// arrivals (Poisson, fixed or a trace), one FIFO queue, the batching rule, and
// each request's wait and latency given a batch's service time. `tdmsim run`
// (serving_run.h) supplies the service times from the timing model.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "workloads/config/resolved.h"
#include "workloads/specs/serving_spec.h"

namespace tdmsim::cli::serving {

struct Request {
  std::uint32_t id = 0;
  double arrival_us = 0;
  std::uint32_t tokens = 0;
};

// Requests of a poisson or fixed stream, from `seed` (the scenario's): fixed
// arrivals at 0, gap, 2 gap, ...; Poisson arrivals at cumulative exponential
// gaps of mean interarrival from time 0; tokens uniform over
// request_tokens..request_tokens_max when that is set. The draws use their own
// generator (SplitMix64 of the seed), so they do not depend on the C++ library.
std::vector<Request> generate_requests(const ServingSpec& s, std::uint64_t seed);

// An arrival trace's text: lines "arrival_us,tokens" (an optional first line
// "arrival_us,tokens" as header, blank lines and # comments skipped), arrival
// times non-decreasing and >= 0, tokens 1..max_tokens. Throws BadInput naming
// `file`:line and what is wrong.
std::vector<Request> parse_arrival_trace(const std::string& text, const std::string& file, std::uint32_t max_tokens);

// How batches are formed: at most max_batch requests (0 = no limit) and
// max_tokens tokens, in arrival order, none skipped.
struct BatchPolicy {
  std::uint32_t max_batch = 0;
  std::uint32_t max_tokens = 1;
  double timeout_us = 0;
};

struct Batch {
  std::uint32_t index = 0;
  std::uint32_t first = 0;   // first request (id) of the batch
  std::uint32_t count = 0;   // requests first .. first + count - 1
  std::uint32_t tokens = 0;
  double start_us = 0;
  double service_us = 0;
  double end_us() const { return start_us + service_us; }
};

// The batch's service time in microseconds (given index, first, count, tokens
// and start_us).
using ServiceTime = std::function<double(const Batch&)>;

// One GPU serving `requests` (sorted by arrival) in FIFO batches. A batch
// starts when the GPU is free and either the batch is full (max_batch
// requests, max_tokens tokens, or the next request would not fit) or its
// oldest request has waited timeout_us; it holds every request that has
// arrived by then, up to the limits.
std::vector<Batch> serve(const std::vector<Request>& requests, const BatchPolicy& policy, const ServiceTime& service);

// Nearest-rank percentile (the smallest value with at least q of the samples
// at or below it); 0 for no samples.
double percentile(std::vector<double> v, double q);

struct Spread {
  double p50 = 0, p90 = 0, p99 = 0, mean = 0, min = 0, max = 0;
};
Spread spread(const std::vector<double>& v);

// Throws BadInput (naming the serving: section's file and line) when `command`
// (e.g. "tdmsim emulate") is given a scenario with a serving: section, which
// only `tdmsim run` reads.
void refuse_serving(const config::ResolvedScenario& sc, const std::string& command);

}  // namespace tdmsim::cli::serving
