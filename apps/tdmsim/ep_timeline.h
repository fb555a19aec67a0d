// The timeline of an expert-parallel layer (docs/expert-parallel.md "Timing
// rule" and "Overlap"): when each GPU's kernels and each collective run, from
// the simulated kernel times of every GPU and micro-batch and the collectives'
// times (sim/net). A pure function: no SystemC, no simulation.
//
// The layer runs as C micro-batches (C = 1 without overlap). Micro-batch c is,
// on every rank r, R[c][r] (its kernels up to the end of the routing stage:
// the router on its own tokens of c) and E[c][r] (the rest: sort, experts),
// and two collectives over the group, the dispatch D[c] and the combine K[c].
//   D[c] starts when every rank has routed c;  E[c][r] when D[c] has ended;
//   K[c] when every rank has ended E[c].
// A rank computes one thing at a time in the order R0, R1, E0, R2, E1, ...,
// E[C-1]; the group's collectives run one at a time in the order D0, D1, K0,
// D2, K1, ..., K[C-1] (two-batch overlap: micro-batch c+1 is dispatched while
// c computes, c is combined while c+1 computes). Each starts as early as
// these rules allow. With C = 1 this is the barrier rule
//   layer = max R + D + max E + K
// exactly (the same additions in the same order). For any C the layer is at
// most `serial_s`, the micro-batches one after another under the barrier
// rule: a chain of dependencies passes through at most one R, one E and each
// collective of every micro-batch (tests/net/test_ep_timeline.cpp).
//
// Per rank: compute (its kernels), its exposed share of each collective (the
// time its own links and messages take, CollectiveResult::rank_time_s, less
// what overlaps its own compute), the hidden rest, and wait = layer - compute
// - exposed communication, so the four add up to the layer.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/net/collective.h"

namespace tdmsim::cli {

struct EpSpan {
  double start_s = 0;
  double end_s = 0;
};

struct EpTimeline {
  std::vector<std::vector<EpSpan>> routing, experts;  // [chunk][rank]
  std::vector<EpSpan> dispatch, combine;              // [chunk]
  double total_s = 0;   // the layer
  double serial_s = 0;  // the micro-batches one after another, each under the barrier rule
  // Per rank.
  std::vector<double> compute_s;
  std::vector<double> dispatch_s, combine_s;                // its own share, exposed (not under its compute)
  std::vector<double> dispatch_hidden_s, combine_hidden_s;  // its own share under its compute
  std::vector<double> wait_s;
};

// routing_s[c][r], experts_s[c][r]: the durations of R and E; compute_s[c][r]:
// the rank's simulated time of micro-batch c (what it is charged; R + E up to
// rounding); dispatch[c], combine[c]: the collectives (time_s, rank_time_s).
EpTimeline ep_timeline(const std::vector<std::vector<double>>& routing_s,
                       const std::vector<std::vector<double>>& experts_s,
                       const std::vector<std::vector<double>>& compute_s,
                       const std::vector<net::CollectiveResult>& dispatch,
                       const std::vector<net::CollectiveResult>& combine);

// The collectives of several micro-batches as one: times and terms added,
// bytes added per rank, the bottleneck of the longest.
net::CollectiveResult sum_collectives(const std::vector<net::CollectiveResult>& parts);

}  // namespace tdmsim::cli
