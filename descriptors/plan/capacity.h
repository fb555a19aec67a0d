// Expert capacity (routing.capacity_factor, routing.overflow): the
// token-dropping alternative to a TDM unit. Each expert takes at most
// capacity = ceil(capacity_factor * tokens * top_k / experts) picks (GShard,
// Lepikhin et al. 2020; Switch Transformer, Fedus et al. 2021); picks above it
// are dropped, or rerouted to the token's next-best expert with room. See
// docs/moe-plan.md "Expert capacity".
#pragma once

#include <cstdint>
#include <span>

#include "descriptors/plan/moe_plan.h"

namespace tdmsim::plan {

// A dropped pick runs on no GPU: every consumer of the routing already skips
// picks that do not run here (expert parallelism), so it shares that id.
inline constexpr std::uint32_t kDroppedPick = kRemoteExpert;

// Picks per expert for a capacity factor: ceil(factor * tokens * top_k /
// experts), at most `tokens` (a token picks an expert once). 0 for no limit.
std::uint32_t expert_capacity(double factor, std::uint32_t tokens, std::uint32_t top_k,
                              std::uint32_t experts);

// Where a token's overflowing pick goes under overflow: reroute: the token's
// best-ranked expert e that it does not hold and that has room
// (load[e] < capacity), with that expert's routing weight; expert
// kDroppedPick if there is none. One implementation per routing source that
// ranks experts (routing.cpp: router scores; synthetic_routing.cpp: the
// source's next draw).
class RerouteRanking {
 public:
  struct Choice {
    std::uint32_t expert = kDroppedPick;
    float weight = 0.0f;
  };
  virtual ~RerouteRanking() = default;
  virtual Choice next(std::uint32_t token, std::uint32_t j, std::span<const std::uint32_t> held,
                      std::span<const std::uint32_t> load, std::uint32_t capacity) const = 0;
};

// Applies the capacity to `routing` in place ([tokens][top_k] over `experts`
// routed experts) and returns what happened. Picks keep their place in
// priority order: every token's first pick before any second pick, and so on,
// earlier tokens first (GShard's order: a token's first choice outranks
// another's second). Kept picks keep their weights; a dropped pick becomes
// kDroppedPick with weight 0; a rerouted pick takes the ranking's expert and
// weight. `ranking` may be null only for overflow: drop.
CapacityReport apply_capacity(const CapacityFactor& factor, CapacityOverflow overflow,
                              std::uint32_t tokens, std::uint32_t top_k, std::uint32_t experts,
                              Routing& routing, const RerouteRanking* ranking);

}  // namespace tdmsim::plan
