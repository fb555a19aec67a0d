// A request stream served by one GPU (docs/serving.md): requests arrive
// (Poisson, at fixed intervals, or from a trace), wait in one FIFO queue, and
// are batched (up to max_batch requests and the scenario's `tokens`, or until
// the oldest has waited batch_timeout); each batch is `layers` MoE layers of
// the scenario, every layer simulated with its own routing draw. The
// scenario's optional `serving:` section.
#pragma once

#include <cstdint>
#include <string>

#include "workloads/config/schema.h"
#include "workloads/config/units.h"
#include "workloads/specs/enums.h"

namespace tdmsim {

struct ServingSpec {
  ArrivalProcess arrival{};
  units::Duration interarrival{};
  std::string trace;
  std::uint32_t requests{};
  std::uint32_t request_tokens{};
  std::uint32_t request_tokens_max{};
  std::uint32_t max_batch{};
  units::Duration batch_timeout{};
  std::uint32_t layers{};
  std::uint32_t draws_per_size{};

  template <class V>
  void visit(V& v) {
    v.param(arrival, "arrival",
            "how requests arrive: poisson (exponential gaps of mean interarrival), fixed (every "
            "interarrival) or trace (the arrival times and tokens of serving.trace)",
            config::Default{ArrivalProcess::poisson});
    v.param(interarrival, "interarrival",
            "mean time between arrivals (poisson) or the time between them (fixed), above 0 for both; not with trace",
            config::Default{"0ns"}, config::Max{"10s"});
    v.param(trace, "trace",
            "arrival trace (arrival trace), relative to this file: CSV lines 'arrival_us,tokens' in "
            "non-decreasing arrival order, an optional header line, # comments");
    v.param(requests, "requests", "requests in the stream (poisson, fixed: at least 1; a trace has its own)",
            config::Default{0u}, config::Max{1000000u});
    v.param(request_tokens, "request_tokens",
            "tokens per request (poisson, fixed); with request_tokens_max, the smallest of a uniform draw",
            config::Default{1u}, config::Min{1u}, config::Max{16777216u});
    v.param(request_tokens_max, "request_tokens_max",
            "the largest tokens per request of a uniform draw over request_tokens..request_tokens_max "
            "(0 = every request has request_tokens)",
            config::Default{0u}, config::Max{16777216u});
    v.param(max_batch, "max_batch",
            "most requests in a batch (0 = no limit but the scenario's tokens, the most tokens in a batch)",
            config::Default{0u}, config::Max{1000000u});
    v.param(batch_timeout, "batch_timeout",
            "how long the oldest queued request waits for a batch to fill before the batch runs "
            "(0 = a batch runs as soon as the GPU is free)",
            config::Default{"0ns"}, config::Max{"10s"});
    v.param(layers, "layers",
            "MoE layers per batch: each simulated with its own routing draw; a batch's service time "
            "is their sum", config::Default{1u}, config::Min{1u}, config::Max{1024u});
    v.param(draws_per_size, "draws_per_size",
            "0: every layer of every batch gets its own routing draw; N > 0: batches of one token "
            "count reuse N draws (fewer simulations, less routing jitter)",
            config::Default{0u}, config::Max{1000000u});
  }
};

}  // namespace tdmsim
