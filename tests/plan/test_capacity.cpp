// Expert capacity (routing.capacity_factor, routing.overflow): the capacity
// formula, the priority order of GShard, drop and reroute on hand-made
// routings, and invariants over every routing source.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <set>

#include "descriptors/plan/capacity.h"
#include "descriptors/plan/gating.h"
#include "descriptors/plan/routing.h"
#include "plan_test_util.h"

using namespace tdmsim;
using namespace tdmsim::plan;
using namespace tdmsim::plan::test;

namespace {

// Reroutes to the lowest-numbered expert the token does not hold that has
// room, with weight 0.125: a ranking whose every choice a test can predict.
class LowestFirst final : public RerouteRanking {
 public:
  Choice next(std::uint32_t, std::uint32_t, std::span<const std::uint32_t> held,
              std::span<const std::uint32_t> load, std::uint32_t capacity) const override {
    for (std::uint32_t e = 0; e < load.size(); ++e) {
      if (load[e] < capacity && std::find(held.begin(), held.end(), e) == held.end()) {
        return {e, 0.125f};
      }
    }
    return {};
  }
};

// Four tokens of top-2 over four experts, all wanting expert 0 first.
Routing crowded() {
  Routing r;
  r.ids = {0, 1, 0, 1, 0, 2, 0, 3};
  r.weights = {0.6f, 0.4f, 0.7f, 0.3f, 0.55f, 0.45f, 0.9f, 0.1f};
  return r;
}

CapacityFactor factor(double f) { return CapacityFactor{f}; }

}  // namespace

TEST_CASE("capacity is ceil(factor * tokens * top_k / experts), at most the tokens", "[capacity]") {
  CHECK(expert_capacity(1.0, 64, 8, 128) == 4);
  CHECK(expert_capacity(1.25, 64, 8, 128) == 5);
  CHECK(expert_capacity(1.1, 64, 8, 128) == 5);  // 4.4 rounds up
  CHECK(expert_capacity(2.0, 1024, 8, 128) == 128);
  CHECK(expert_capacity(1e-9, 64, 8, 128) == 1);   // never below one pick
  CHECK(expert_capacity(1000.0, 64, 8, 128) == 64);  // a token picks an expert once
  CHECK(expert_capacity(0.0, 64, 8, 128) == 0);      // none
}

TEST_CASE("no capacity factor leaves the routing alone", "[capacity]") {
  Routing r = crowded();
  const CapacityReport rep = apply_capacity(CapacityFactor{}, CapacityOverflow::drop, 4, 2, 4, r, nullptr);
  CHECK_FALSE(rep.enabled);
  CHECK(rep.dropped == 0);
  CHECK(r.ids == crowded().ids);
  CHECK(r.weights == crowded().weights);
}

TEST_CASE("drop: first choices of earlier tokens keep their place - the rest run nowhere",
          "[capacity]") {
  Routing r = crowded();
  // capacity = ceil(1 * 4 * 2 / 4) = 2: expert 0 keeps tokens 0 and 1.
  const CapacityReport rep = apply_capacity(factor(1.0), CapacityOverflow::drop, 4, 2, 4, r, nullptr);
  CHECK(rep.enabled);
  CHECK(rep.capacity == 2);
  CHECK(rep.pairs == 8);
  CHECK(rep.overflowed == 2);
  CHECK(rep.dropped == 2);
  CHECK(rep.rerouted == 0);
  CHECK(rep.tokens_with_drops == 2);
  CHECK(rep.tokens_dropped == 0);
  CHECK(rep.experts_over == 1);
  CHECK(rep.max_demand == 4);
  CHECK(r.ids == std::vector<std::uint32_t>{0, 1, 0, 1, kDroppedPick, 2, kDroppedPick, 3});
  // Kept picks keep their weights exactly; dropped ones weigh nothing.
  CHECK(r.weights == std::vector<float>{0.6f, 0.4f, 0.7f, 0.3f, 0.0f, 0.45f, 0.0f, 0.1f});
}

TEST_CASE("drop: a second choice never displaces another token's first choice", "[capacity]") {
  // Token 0's second pick and token 1's first pick both want expert 1, room 1
  // (capacity = ceil(0.5 * 2 * 2 / 2) = 1): the first pick wins, although
  // token 0 comes first.
  Routing r;
  r.ids = {0, 1, 1, 0};
  r.weights = {0.5f, 0.5f, 0.5f, 0.5f};
  const CapacityReport rep = apply_capacity(factor(0.5), CapacityOverflow::drop, 2, 2, 2, r, nullptr);
  CHECK(rep.capacity == 1);
  CHECK(r.ids == std::vector<std::uint32_t>{0, kDroppedPick, 1, kDroppedPick});
  CHECK(rep.tokens_with_drops == 2);
}

TEST_CASE("drop: a token that loses every pick is counted as dropped", "[capacity]") {
  Routing r;
  r.ids = {0, 0, 0};  // top-1, three tokens on expert 0 of 3; capacity 1
  r.weights = {1.0f, 1.0f, 1.0f};
  const CapacityReport rep = apply_capacity(factor(1.0), CapacityOverflow::drop, 3, 1, 3, r, nullptr);
  CHECK(rep.capacity == 1);
  CHECK(rep.dropped == 2);
  CHECK(rep.tokens_dropped == 2);
  CHECK(r.ids == std::vector<std::uint32_t>{0, kDroppedPick, kDroppedPick});
}

TEST_CASE("reroute: overflowing picks take the ranking's expert and weight, in priority order",
          "[capacity]") {
  Routing r = crowded();
  const LowestFirst ranking;
  const CapacityReport rep =
      apply_capacity(factor(1.0), CapacityOverflow::reroute, 4, 2, 4, r, &ranking);
  CHECK(rep.overflowed == 2);
  CHECK(rep.rerouted == 2);
  CHECK(rep.dropped == 0);
  // After the kept picks, loads are {2, 2, 1, 1}: token 2 (holding 0, 2)
  // goes to 3, then token 3 (holding 0, 3) to 2.
  CHECK(r.ids == std::vector<std::uint32_t>{0, 1, 0, 1, 3, 2, 2, 3});
  CHECK(r.weights == std::vector<float>{0.6f, 0.4f, 0.7f, 0.3f, 0.125f, 0.45f, 0.125f, 0.1f});
}

TEST_CASE("reroute: a pick with nowhere to go is dropped", "[capacity]") {
  Routing r;
  r.ids = {0, 0, 0};
  r.weights = {1.0f, 1.0f, 1.0f};
  const LowestFirst ranking;
  // Two experts of room 1 ... capacity = ceil(0.5 * 3 / 2) = 1 each; three picks.
  const CapacityReport rep = apply_capacity(factor(0.5), CapacityOverflow::reroute, 3, 1, 2, r, &ranking);
  CHECK(rep.capacity == 1);
  CHECK(rep.rerouted == 1);
  CHECK(rep.dropped == 1);
  CHECK(r.ids == std::vector<std::uint32_t>{0, 1, kDroppedPick});
}

TEST_CASE("capped routings keep every invariant, for every source and both policies", "[capacity]") {
  ModelSpec model = make_model(16, 4);
  const auto source = GENERATE(RoutingSource::uniform, RoutingSource::zipf, RoutingSource::lognormal,
                               RoutingSource::hot, RoutingSource::router);
  const auto overflow = GENERATE(CapacityOverflow::drop, CapacityOverflow::reroute);
  const double f = GENERATE(0.5, 1.0, 1.25);
  const auto renormalize = GENERATE(true, false);
  model.gating.renormalize = renormalize;
  CAPTURE(config::enum_name(source), config::enum_name(overflow), f, renormalize);
  config::ResolvedScenario sc = make_scenario(model, 96, 7, source);
  sc.scenario.spec.routing.zipf_s = 1.5;
  sc.scenario.spec.routing.hot_experts = {3, 9};
  const Routing free = route(sc);
  sc.scenario.spec.routing.capacity_factor = factor(f);
  sc.scenario.spec.routing.overflow = overflow;
  CapacityReport rep;
  const Routing capped = route(sc, &rep);

  const std::uint32_t k = model.top_k;
  REQUIRE(rep.enabled);
  CHECK(rep.capacity == expert_capacity(f, 96, k, 16));
  CHECK(rep.pairs == 96u * k);
  CHECK(rep.overflowed == rep.dropped + rep.rerouted);
  if (overflow == CapacityOverflow::drop) CHECK(rep.rerouted == 0);
  std::vector<std::uint32_t> load(16, 0);
  std::uint64_t dropped = 0, moved = 0;
  for (std::uint32_t t = 0; t < 96; ++t) {
    std::set<std::uint32_t> distinct;
    for (std::uint32_t j = 0; j < k; ++j) {
      const std::size_t i = std::size_t(t) * k + j;
      const std::uint32_t e = capped.ids[i];
      if (e == kDroppedPick) {
        ++dropped;
        CHECK(capped.weights[i] == 0.0f);
        continue;
      }
      REQUIRE(e < 16);
      ++load[e];
      CHECK(distinct.insert(e).second);  // a token still picks an expert once
      if (e == free.ids[i]) {
        CHECK(capped.weights[i] == free.weights[i]);  // kept: bit-identical weight
      } else {
        ++moved;
        // A rerouted expert ranked below the pick it replaces: on the same
        // scale, never heavier.
        CHECK(capped.weights[i] >= 0.0f);
        CHECK(capped.weights[i] <= free.weights[i]);
      }
    }
  }
  for (const std::uint32_t l : load) CHECK(l <= rep.capacity);
  CHECK(dropped == rep.dropped);
  CHECK(moved == rep.rerouted);
  if (f < 1.0) CHECK(rep.overflowed > 0);  // half the room cannot hold every pick
  // Deterministic: the same scenario gives the same capped routing.
  const Routing again = route(sc);
  CHECK(again.ids == capped.ids);
  CHECK(again.weights == capped.weights);
}

TEST_CASE("reroute with the router: the next-best expert by score, weighted on the token's scale",
          "[capacity]") {
  ModelSpec model = make_model(16, 2);
  model.gating.routed_scaling = 2.5;
  config::ResolvedScenario sc = make_scenario(model, 64, 3, RoutingSource::router);
  const Routing free = route(sc);
  sc.scenario.spec.routing.capacity_factor = factor(0.75);
  sc.scenario.spec.routing.overflow = CapacityOverflow::reroute;
  CapacityReport rep;
  const Routing capped = route(sc, &rep);
  REQUIRE(rep.rerouted > 0);
  const std::vector<float> logits = router_logits(model, 64, 3);
  std::uint64_t checked = 0;
  for (std::uint32_t t = 0; t < 64; ++t) {
    std::vector<double> scores(16);
    score_logits(model.gating.scoring, std::span(logits).subspan(std::size_t(t) * 16, 16), scores);
    const double sum = scores[free.ids[t * 2]] + scores[free.ids[t * 2 + 1]];
    for (std::uint32_t j = 0; j < 2; ++j) {
      const std::uint32_t e = capped.ids[t * 2 + j];
      if (e == kDroppedPick || e == free.ids[t * 2 + j]) continue;
      // Below both original picks (they were the top 2) ...
      CHECK(scores[e] <= scores[free.ids[t * 2]]);
      CHECK(scores[e] <= scores[free.ids[t * 2 + 1]]);
      // ... and weighted as the gate weighs a pick, on the original sum.
      CHECK(capped.weights[t * 2 + j] == static_cast<float>(scores[e] / sum * 2.5));
      ++checked;
    }
  }
  CHECK(checked == rep.rerouted);
}

TEST_CASE("the plan, its layout and its tile jobs use the capped routing", "[capacity]") {
  const ModelSpec model = make_model(16, 4);
  config::ResolvedScenario sc = make_scenario(model, 128, 5, RoutingSource::zipf);
  sc.scenario.spec.routing.zipf_s = 1.5;
  const MoePlan free = build_plan(sc);
  sc.scenario.spec.routing.capacity_factor = factor(1.0);
  const MoePlan capped = build_plan(sc);
  REQUIRE(capped.capacity.dropped > 0);
  std::uint64_t rows_free = 0, rows_capped = 0;
  for (const auto r : free.layout.expert_rows) rows_free += r;
  for (const auto r : capped.layout.expert_rows) rows_capped += r;
  CHECK(rows_capped == rows_free - capped.capacity.dropped);
  for (std::uint32_t e = 0; e < 16; ++e) CHECK(capped.layout.expert_rows[e] <= capped.capacity.capacity);
  for (std::size_t i = 0; i < capped.routing.ids.size(); ++i) {
    if (capped.routing.ids[i] == kDroppedPick) CHECK(capped.fused.expert[i] == kRemoteExpert);
  }
}
