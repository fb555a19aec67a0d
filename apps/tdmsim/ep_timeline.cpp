// The expert-parallel layer's timeline (ep_timeline.h).
#include "apps/tdmsim/ep_timeline.h"

#include <algorithm>
#include <cassert>

namespace tdmsim::cli {
namespace {

// Time [a0, a1) and [b0, b1) share.
double overlap(double a0, double a1, double b0, double b1) {
  return std::max(0.0, std::min(a1, b1) - std::max(a0, b0));
}

}  // namespace

EpTimeline ep_timeline(const std::vector<std::vector<double>>& routing_s,
                       const std::vector<std::vector<double>>& experts_s,
                       const std::vector<std::vector<double>>& compute_s,
                       const std::vector<net::CollectiveResult>& dispatch,
                       const std::vector<net::CollectiveResult>& combine) {
  const std::size_t chunks = routing_s.size();
  assert(chunks > 0 && experts_s.size() == chunks && compute_s.size() == chunks && dispatch.size() == chunks &&
         combine.size() == chunks);
  const std::size_t n = routing_s.front().size();
  EpTimeline t;
  t.routing.assign(chunks, std::vector<EpSpan>(n));
  t.experts.assign(chunks, std::vector<EpSpan>(n));
  t.dispatch.resize(chunks);
  t.combine.resize(chunks);
  std::vector<double> rank_free(n, 0.0);
  double comm_free = 0.0;
  // Micro-batch c's routing on every rank, then its dispatch.
  const auto route = [&](std::size_t c) {
    double last = 0.0;
    for (std::size_t r = 0; r < n; ++r) {
      EpSpan& s = t.routing[c][r];
      s.start_s = rank_free[r];
      s.end_s = s.start_s + routing_s[c][r];
      rank_free[r] = s.end_s;
      last = std::max(last, s.end_s);
    }
    EpSpan& d = t.dispatch[c];
    d.start_s = std::max(comm_free, last);
    d.end_s = d.start_s + dispatch[c].time_s;
    comm_free = d.end_s;
  };
  route(0);
  for (std::size_t c = 0; c < chunks; ++c) {
    if (c + 1 < chunks) route(c + 1);
    double last = comm_free;
    for (std::size_t r = 0; r < n; ++r) {
      EpSpan& s = t.experts[c][r];
      s.start_s = std::max(rank_free[r], t.dispatch[c].end_s);
      s.end_s = s.start_s + experts_s[c][r];
      rank_free[r] = s.end_s;
      last = std::max(last, s.end_s);
    }
    EpSpan& k = t.combine[c];
    k.start_s = last;
    k.end_s = k.start_s + combine[c].time_s;
    comm_free = k.end_s;
  }
  t.total_s = comm_free;
  for (std::size_t c = 0; c < chunks; ++c) {
    const double before = *std::max_element(routing_s[c].begin(), routing_s[c].end());
    const double after = *std::max_element(experts_s[c].begin(), experts_s[c].end());
    t.serial_s += before + dispatch[c].time_s + after + combine[c].time_s;
  }
  // Per rank: its own share of each collective, less what its compute hides.
  t.compute_s.assign(n, 0.0);
  t.dispatch_s.assign(n, 0.0);
  t.combine_s.assign(n, 0.0);
  t.dispatch_hidden_s.assign(n, 0.0);
  t.combine_hidden_s.assign(n, 0.0);
  t.wait_s.assign(n, 0.0);
  for (std::size_t r = 0; r < n; ++r) {
    const auto hidden = [&](const EpSpan& x, double own) {
      double h = 0.0;
      for (std::size_t c = 0; c < chunks; ++c) {
        h += overlap(x.start_s, x.start_s + own, t.routing[c][r].start_s, t.routing[c][r].end_s);
        h += overlap(x.start_s, x.start_s + own, t.experts[c][r].start_s, t.experts[c][r].end_s);
      }
      return std::min(h, own);
    };
    for (std::size_t c = 0; c < chunks; ++c) {
      t.compute_s[r] += compute_s[c][r];
      const double d_own = dispatch[c].rank_time_s[r], k_own = combine[c].rank_time_s[r];
      const double dh = hidden(t.dispatch[c], d_own), kh = hidden(t.combine[c], k_own);
      t.dispatch_s[r] += d_own - dh;
      t.combine_s[r] += k_own - kh;
      t.dispatch_hidden_s[r] += dh;
      t.combine_hidden_s[r] += kh;
    }
    t.wait_s[r] = std::max(0.0, t.total_s - t.compute_s[r] - (t.dispatch_s[r] + t.combine_s[r]));
  }
  return t;
}

net::CollectiveResult sum_collectives(const std::vector<net::CollectiveResult>& parts) {
  assert(!parts.empty());
  if (parts.size() == 1) return parts.front();
  net::CollectiveResult s = parts.front();
  double longest = s.time_s;
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const net::CollectiveResult& p = parts[i];
    s.time_s += p.time_s;
    s.bandwidth_s += p.bandwidth_s;
    s.latency_s += p.latency_s;
    s.overhead_s += p.overhead_s;
    s.steps += p.steps;
    for (std::size_t r = 0; r < s.rank_time_s.size(); ++r) {
      s.sent_bytes[r] += p.sent_bytes[r];
      s.received_bytes[r] += p.received_bytes[r];
      s.rank_time_s[r] += p.rank_time_s[r];
    }
    if (p.time_s > longest) {
      longest = p.time_s;
      s.bottleneck = p.bottleneck;
      s.bottleneck_bytes = p.bottleneck_bytes;
    }
  }
  return s;
}

}  // namespace tdmsim::cli
