// Expert capacity: which picks each expert keeps, and where the rest go.
#include "descriptors/plan/capacity.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <vector>

namespace tdmsim::plan {

std::uint32_t expert_capacity(double factor, std::uint32_t tokens, std::uint32_t top_k,
                              std::uint32_t experts) {
  if (factor <= 0.0 || experts == 0) return 0;
  // factor * (tokens * top_k) first, then / experts: exact for the factors
  // people write (1, 1.25, 2) on any batch a scenario accepts (< 2^31 picks).
  const double c = std::ceil(factor * static_cast<double>(std::uint64_t(tokens) * top_k) /
                             static_cast<double>(experts));
  // A token picks an expert at most once, so more room than tokens is no limit.
  return c >= static_cast<double>(tokens) ? tokens : static_cast<std::uint32_t>(std::max(c, 1.0));
}

CapacityReport apply_capacity(const CapacityFactor& factor, CapacityOverflow overflow,
                              std::uint32_t tokens, std::uint32_t top_k, std::uint32_t experts,
                              Routing& routing, const RerouteRanking* ranking) {
  CapacityReport rep;
  if (factor.none()) return rep;
  assert(overflow == CapacityOverflow::drop || ranking != nullptr);
  assert(routing.ids.size() == std::size_t(tokens) * top_k);
  rep.enabled = true;
  rep.factor = factor.factor;
  rep.overflow = overflow;
  rep.capacity = expert_capacity(factor.factor, tokens, top_k, experts);
  rep.pairs = std::uint64_t(tokens) * top_k;

  std::vector<std::uint32_t> demand(experts, 0);
  for (const std::uint32_t e : routing.ids) {
    if (e < experts) ++demand[e];
  }
  for (const std::uint32_t d : demand) {
    rep.max_demand = std::max(rep.max_demand, d);
    rep.experts_over += d > rep.capacity ? 1 : 0;
  }

  // Pass 1, in priority order (slot j outer, token inner): a pick keeps its
  // expert while the expert has room; the rest overflow, in the same order.
  std::vector<std::uint32_t> load(experts, 0);
  std::vector<std::size_t> over;  // indices t * top_k + j
  for (std::uint32_t j = 0; j < top_k; ++j) {
    for (std::uint32_t t = 0; t < tokens; ++t) {
      const std::size_t i = std::size_t(t) * top_k + j;
      const std::uint32_t e = routing.ids[i];
      if (e >= experts) continue;  // nothing to place
      if (load[e] < rep.capacity) {
        ++load[e];
      } else {
        over.push_back(i);
      }
    }
  }
  rep.overflowed = over.size();

  // Pass 2: each overflowing pick, in priority order, goes to the token's
  // next-best expert with room (reroute) or nowhere (drop). Rerouting after
  // every kept pick is placed means a reroute never displaces a first choice.
  std::vector<char> lost(tokens, 0);
  for (const std::size_t i : over) {
    const auto t = static_cast<std::uint32_t>(i / top_k);
    const auto j = static_cast<std::uint32_t>(i % top_k);
    RerouteRanking::Choice c;
    if (overflow == CapacityOverflow::reroute) {
      c = ranking->next(t, j, std::span<const std::uint32_t>(routing.ids).subspan(std::size_t(t) * top_k, top_k),
                        load, rep.capacity);
    }
    if (c.expert < experts) {
      assert(load[c.expert] < rep.capacity);
      ++load[c.expert];
      ++rep.rerouted;
    } else {
      c = {};
      ++rep.dropped;
      lost[t] = 1;
    }
    routing.ids[i] = c.expert;
    routing.weights[i] = c.weight;
  }
  for (std::uint32_t t = 0; t < tokens; ++t) {
    if (!lost[t]) continue;
    ++rep.tokens_with_drops;
    const auto* ids = &routing.ids[std::size_t(t) * top_k];
    if (std::all_of(ids, ids + top_k, [](std::uint32_t e) { return e == kDroppedPick; })) {
      ++rep.tokens_dropped;
    }
  }
  return rep;
}

}  // namespace tdmsim::plan
