// Expert placement, rank shares and dispatch traffic (expert_parallel.h).
#include "descriptors/plan/expert_parallel.h"

#include <algorithm>
#include <cassert>
#include <numeric>
#include <utility>

namespace tdmsim::plan {

std::vector<std::uint64_t> expert_load(const Routing& routing, std::uint32_t experts) {
  std::vector<std::uint64_t> load(experts, 0);
  for (const std::uint32_t e : routing.ids) {
    if (e < experts) ++load[e];
  }
  return load;
}

namespace {

// Rank r's slots hold `held[r]` (global expert ids, any order): sorted and
// numbered, then every expert's copies listed.
ExpertMap from_ranks(std::vector<std::vector<std::uint32_t>> held, std::uint32_t experts, std::uint32_t slots) {
  ExpertMap m;
  m.ranks = static_cast<std::uint32_t>(held.size());
  m.slots = slots;
  m.slot_expert.resize(std::size_t(m.ranks) * slots);
  m.copies.assign(experts, {});
  for (std::uint32_t r = 0; r < m.ranks; ++r) {
    auto& h = held[r];
    assert(h.size() == slots);
    std::sort(h.begin(), h.end());
    for (std::uint32_t i = 0; i < slots; ++i) {
      const std::uint32_t slot = r * slots + i;
      m.slot_expert[slot] = h[i];
      m.copies[h[i]].push_back(slot);
    }
  }
  return m;
}

}  // namespace

ExpertMap place_experts(ExpertPlacement policy, std::uint32_t experts, std::uint32_t ranks,
                        std::uint32_t redundant, std::span<const std::uint64_t> load) {
  assert(ranks > 0 && experts % ranks == 0 && redundant % ranks == 0);
  const std::uint32_t slots = (experts + redundant) / ranks;
  std::vector<std::vector<std::uint32_t>> held(ranks);
  if (policy == ExpertPlacement::contiguous || policy == ExpertPlacement::round_robin) {
    assert(redundant == 0);
    for (std::uint32_t e = 0; e < experts; ++e) {
      held[policy == ExpertPlacement::contiguous ? e / slots : e % ranks].push_back(e);
    }
    return from_ranks(std::move(held), experts, slots);
  }
  assert(load.size() == experts);
  // Replicate: each extra copy to the expert with the most picks per copy
  // (ties: the lower id), never more copies than ranks.
  std::vector<std::uint32_t> copies(experts, 1);
  for (std::uint32_t i = 0; i < redundant; ++i) {
    std::uint32_t best = experts;
    for (std::uint32_t e = 0; e < experts; ++e) {
      if (copies[e] >= ranks) continue;
      // load[e] / copies[e] > load[best] / copies[best], exactly.
      if (best == experts || load[e] * copies[best] > load[best] * copies[e]) best = e;
    }
    assert(best < experts);
    ++copies[best];
  }
  // Pack: copies heaviest first (ties: lower expert id), each onto the
  // least-loaded rank (ties: the lower rank) with a free slot and no copy of
  // its expert; a rank that already holds it only if no other has room.
  struct Item {
    std::uint32_t expert;
    double weight;
  };
  std::vector<Item> items;
  for (std::uint32_t e = 0; e < experts; ++e) {
    for (std::uint32_t c = 0; c < copies[e]; ++c) items.push_back({e, double(load[e]) / copies[e]});
  }
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.weight > b.weight; });
  std::vector<double> rank_load(ranks, 0.0);
  for (const Item& it : items) {
    std::uint32_t pick = ranks, fallback = ranks;
    for (std::uint32_t r = 0; r < ranks; ++r) {
      if (held[r].size() >= slots) continue;
      const bool has = std::find(held[r].begin(), held[r].end(), it.expert) != held[r].end();
      std::uint32_t& choice = has ? fallback : pick;
      if (choice == ranks || rank_load[r] < rank_load[choice]) choice = r;
    }
    const std::uint32_t r = pick < ranks ? pick : fallback;
    assert(r < ranks);
    held[r].push_back(it.expert);
    rank_load[r] += it.weight;
  }
  return from_ranks(std::move(held), experts, slots);
}

Range own_tokens(std::uint32_t tokens, std::uint32_t ranks, std::uint32_t rank) {
  const auto at = [&](std::uint32_t r) {
    return static_cast<std::uint32_t>(std::uint64_t(tokens) * r / ranks);
  };
  return {at(rank), at(rank + 1)};
}

std::vector<std::uint32_t> pick_ranks(const Routing& routing, const ExpertMap& map, std::uint32_t tokens,
                                      std::uint32_t top_k) {
  const auto experts = static_cast<std::uint32_t>(map.copies.size());
  std::vector<std::uint32_t> out(std::size_t(tokens) * top_k, map.ranks);
  for (std::uint32_t t = 0; t < tokens; ++t) {
    for (std::uint32_t j = 0; j < top_k; ++j) {
      const std::uint32_t e = routing.ids[std::size_t(t) * top_k + j];
      if (e < experts) out[std::size_t(t) * top_k + j] = map.rank_of_slot(map.slot_of(e, t));
    }
  }
  return out;
}

std::vector<std::uint64_t> dispatch_tokens(const std::vector<std::uint32_t>& pick_rank, std::uint32_t tokens,
                                           std::uint32_t top_k, std::uint32_t ranks,
                                           const std::vector<std::uint8_t>* batch) {
  std::vector<std::uint64_t> m(std::size_t(ranks) * ranks, 0);
  std::vector<std::uint8_t> seen(ranks);
  for (std::uint32_t src = 0; src < ranks; ++src) {
    const Range own = own_tokens(tokens, ranks, src);
    for (std::uint32_t t = own.begin; t < own.end; ++t) {
      if (batch != nullptr && (*batch)[t] == 0) continue;
      std::fill(seen.begin(), seen.end(), 0);
      for (std::uint32_t j = 0; j < top_k; ++j) {
        const std::uint32_t dst = pick_rank[std::size_t(t) * top_k + j];
        if (dst >= ranks || seen[dst]) continue;
        seen[dst] = 1;
        ++m[std::size_t(src) * ranks + dst];
      }
    }
  }
  return m;
}

std::vector<std::uint8_t> chunk_tokens(std::uint32_t tokens, std::uint32_t ranks, std::uint32_t chunks,
                                       std::uint32_t chunk) {
  std::vector<std::uint8_t> in(tokens, 0);
  for (std::uint32_t r = 0; r < ranks; ++r) {
    const Range own = own_tokens(tokens, ranks, r);
    const Range part = own_tokens(own.end - own.begin, chunks, chunk);
    std::fill(in.begin() + own.begin + part.begin, in.begin() + own.begin + part.end, std::uint8_t{1});
  }
  return in;
}

MoePlan rank_plan(const config::ResolvedScenario& scenario, const Routing& routing, const CapacityReport& capacity,
                  const ExpertMap& map, std::uint32_t rank, std::vector<std::uint32_t>* tokens_out,
                  const std::vector<std::uint8_t>* batch) {
  MoePlan p;
  p.shape = layer_shape(scenario);
  p.seed = scenario.scenario.spec.seed;
  p.capacity = capacity;
  const std::uint32_t all = p.shape.tokens, k = p.shape.top_k;
  const Range own = own_tokens(all, map.ranks, rank);
  const std::vector<std::uint32_t> where = pick_ranks(routing, map, all, k);
  std::vector<std::uint32_t> tokens;
  std::uint32_t routed = 0;  // tokens of the batch it owns (routes)
  for (std::uint32_t t = 0; t < all; ++t) {
    if (batch != nullptr && (*batch)[t] == 0) continue;
    bool here = t >= own.begin && t < own.end;
    routed += here ? 1 : 0;
    for (std::uint32_t j = 0; j < k && !here; ++j) here = where[std::size_t(t) * k + j] == rank;
    if (here) tokens.push_back(t);
  }
  p.shape.tokens = static_cast<std::uint32_t>(tokens.size());
  p.shape.experts_local = map.slots;
  if (map.ranks > 1) p.shape.router_tokens = routed;
  const std::uint32_t slots = p.shape.slots();
  p.routing.ids.reserve(tokens.size() * k);
  p.routing.weights.reserve(tokens.size() * k);
  p.fused.expert.resize(tokens.size() * slots);
  p.fused.weight.resize(tokens.size() * slots);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const std::uint32_t t = tokens[i];
    const bool mine = t >= own.begin && t < own.end;
    for (std::uint32_t j = 0; j < k; ++j) {
      const std::size_t in = std::size_t(t) * k + j;
      const std::uint32_t e = routing.ids[in];
      p.routing.ids.push_back(e);
      p.routing.weights.push_back(routing.weights[in]);
      p.fused.expert[i * slots + j] = where[in] == rank ? map.slot_of(e, t) - rank * map.slots : kRemoteExpert;
      p.fused.weight[i * slots + j] = routing.weights[in];
    }
    // Shared experts run on every rank, each on the tokens it owns.
    for (std::uint32_t s = 0; s < p.shape.shared; ++s) {
      p.fused.expert[i * slots + k + s] = mine ? p.shape.experts_local + s : kRemoteExpert;
      p.fused.weight[i * slots + k + s] = 1.0f;
    }
  }
  finish_plan(scenario, p);
  if (tokens_out != nullptr) *tokens_out = std::move(tokens);
  return p;
}

}  // namespace tdmsim::plan
