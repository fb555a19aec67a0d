// Properties of the fused routing, the padded block layout and the tile jobs
// over hundreds of seeded random shapes and routings, plus the degenerate
// cases by name. Each case states its shape in INFO so a failure reproduces.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <sstream>

#include "descriptors/plan/routing.h"
#include "plan_checks.h"
#include "plan_test_util.h"

using namespace tdmsim;
using namespace tdmsim::plan;
using namespace tdmsim::plan::test;

TEST_CASE("layout and tile-job properties over 240 random shapes and routings",
          "[layout][property]") {
  std::mt19937_64 rng(20261130);  // fixed: the cases are the same every run
  const auto pick = [&](std::uint32_t lo, std::uint32_t hi) {
    return std::uniform_int_distribution<std::uint32_t>(lo, hi)(rng);
  };
  for (int c = 0; c < 240; ++c) {
    // Tokens spread over 1..2048 on a log scale: decode and prefill sizes.
    const auto tokens = static_cast<std::uint32_t>(
        std::min(2048.0, std::exp2(std::uniform_real_distribution<double>(0.0, 11.0)(rng))));
    const std::uint32_t experts = c % 10 == 0 ? 1 : pick(1, 256);
    const std::uint32_t top_k = pick(1, std::min(8u, experts));
    const std::uint32_t inter = 16 * pick(1, 24);
    ModelSpec m = make_model(experts, top_k, 16 * pick(1, 32), inter);
    if (pick(0, 2) == 0) {
      m.shared_experts = pick(1, 2);
      // Smaller, equal and larger shared experts (chunked, last chunk partial).
      const std::uint32_t mult[] = {inter / 2 + 8, inter, 2 * inter + inter / 2};
      m.shared_intermediate_size = mult[pick(0, 2)];
    }
    m.gating.scoring = pick(0, 1) ? Scoring::softmax : Scoring::sigmoid;
    m.gating.renormalize = pick(0, 1) == 1;
    const RoutingSource sources[] = {RoutingSource::uniform, RoutingSource::zipf,
                                     RoutingSource::lognormal, RoutingSource::hot};
    auto r = make_scenario(m, tokens, rng(), sources[pick(0, 3)]);
    ScenarioSpec& s = r.scenario.spec;
    s.routing.zipf_s = 1.2;
    s.routing.hot_experts = {pick(0, experts - 1)};
    s.routing.hot_fraction = 0.7;
    const std::uint32_t eps[] = {1, 2, 4, 8};
    const std::uint32_t ep = eps[pick(0, 3)];
    if (experts % ep == 0) s.parallel.ep = ep;
    const std::uint32_t blocks[] = {0, 16, 32, 64, 128};
    s.kernel.block_m = blocks[pick(0, 4)];  // 0: the heuristic picks
    if (pick(0, 3) == 0) s.kernel.split_k = pick(1, 4);
    if (pick(0, 3) == 0) s.kernel.stages = pick(1, 2);

    std::ostringstream what;
    what << "case " << c << ": T=" << tokens << " E=" << experts << " top_k=" << top_k
         << " H=" << m.hidden_size << " I=" << inter << " shared=" << m.shared_experts << "x"
         << m.shared_intermediate_size << " ep=" << s.parallel.ep << " block_m="
         << s.kernel.block_m << " source=" << static_cast<int>(s.routing.source)
         << " seed=" << s.seed;
    INFO(what.str());
    const MoePlan p = build_plan(r);
    check_plan(p);
    if (c % 40 == 0) CHECK(same_plan(p, build_plan(r)));
  }
}

TEST_CASE("degenerate layouts", "[layout]") {
  SECTION("one token, top-1, one expert") {
    auto r = make_scenario(make_model(1, 1), 1, 1);
    const MoePlan p = build_plan(r);
    check_plan(p);
    CHECK(p.layout.expert_rows == std::vector<std::uint32_t>{1});
    CHECK(p.layout.sorted_rows[0] == 0);
    CHECK(p.layout.sentinel == 1);
  }
  SECTION("all tokens to one expert: the others get no block") {
    auto r = make_scenario(make_model(16, 1), 300, 4, RoutingSource::hot);
    r.scenario.spec.routing.hot_experts = {9};
    r.scenario.spec.routing.hot_fraction = 1.0;
    r.scenario.spec.kernel.block_m = 64;
    const MoePlan p = build_plan(r);
    check_plan(p);
    for (std::uint32_t e = 0; e < 16; ++e) CHECK(p.layout.expert_rows[e] == (e == 9 ? 300u : 0u));
    CHECK(p.layout.padded_rows == 320);  // ceil(300 / 64) = 5 blocks
    CHECK(p.layout.block_expert == std::vector<std::uint32_t>(5, 9));
    CHECK(p.layout.sorted_rows[299] == 299);
    CHECK(p.layout.sorted_rows[300] == p.layout.sentinel);
  }
  SECTION("expert parallelism: remote picks are skipped") {
    auto r = make_scenario(make_model(8, 2), 64, 5);
    r.scenario.spec.parallel.ep = 4;  // this GPU holds experts 0 and 1
    const MoePlan p = build_plan(r);
    check_plan(p);
    CHECK(p.shape.experts_fused() == 2);
    const auto remote = std::count(p.fused.expert.begin(), p.fused.expert.end(), kRemoteExpert);
    CHECK(remote == 128 - p.layout.expert_rows[0] - p.layout.expert_rows[1]);
    CHECK(remote > 0);
  }
}

TEST_CASE("a worked example, by hand (docs/moe-plan.md)", "[layout]") {
  // 4 tokens, top-2 of 4 experts, one shared expert, block_m 4:
  // token 0 -> 2, 0; token 1 -> 2, 3; token 2 -> 0, 2; token 3 -> 3, 2.
  LayerShape s;
  s.tokens = 4;
  s.hidden = 8;
  s.inter = 8;
  s.shared_inter = 8;
  s.experts_total = s.experts_local = 4;
  s.shared_experts = s.shared_chunks = s.shared = 1;
  s.top_k = 2;
  Routing r;
  r.ids = {2, 0, 2, 3, 0, 2, 3, 2};
  r.weights = {0.6f, 0.4f, 0.7f, 0.3f, 0.5f, 0.5f, 0.9f, 0.1f};
  const FusedRouting f = fuse_routing(s, r);
  // Row ids t*3 + slot: token 0 rows 0 1 2, token 1 rows 3 4 5, ...
  CHECK(f.expert == std::vector<std::uint32_t>{2, 0, 4, 2, 3, 4, 0, 2, 4, 3, 2, 4});
  const BlockLayout L = sort_into_blocks(s, f, 4);
  const std::uint32_t X = 12;  // sentinel = tokens * slots
  CHECK(L.capacity == 12 + 5 * 4 - 3);
  CHECK(L.expert_rows == std::vector<std::uint32_t>{2, 0, 4, 2, 4});
  CHECK(L.expert_first_block == std::vector<std::uint32_t>{0, 1, 1, 2, 3, 4});
  CHECK(L.block_expert == std::vector<std::uint32_t>{0, 2, 3, 4});
  CHECK(L.padded_rows == 16);
  const std::vector<std::uint32_t> expect = {1, 6, X, X,  0, 3, 7, 10,  4, 9, X, X,
                                             2, 5, 8, 11};
  CHECK(std::vector<std::uint32_t>(L.sorted_rows.begin(), L.sorted_rows.begin() + 16) == expect);
  CHECK(std::all_of(L.sorted_rows.begin() + 16, L.sorted_rows.end(),
                    [&](std::uint32_t v) { return v == X; }));
  CHECK(L.sorted_weights[4] == 0.6f);
  CHECK(L.sorted_weights[12] == 1.0f);
  CHECK(L.sorted_weights[2] == 0.0f);
}

TEST_CASE("shared experts of another size are split into routed-size chunks", "[layout]") {
  ModelSpec m = make_model(64, 8, 512, 256);
  m.shared_experts = 1;
  m.shared_intermediate_size = 2048;  // Qwen2-57B-like: 8 chunks of 256
  auto r = make_scenario(m, 8, 1);
  LayerShape s = layer_shape(r);
  CHECK(s.shared_chunks == 8);
  CHECK(s.shared == 8);
  CHECK(s.slots() == 16);
  CHECK(shared_slot(s, 7).expert == 0);
  CHECK(shared_slot(s, 7).column == 1792);
  CHECK(shared_slot(s, 7).columns == 256);

  m.shared_experts = 2;
  m.shared_intermediate_size = 640;  // 2.5 routed sizes: chunks of 256, 256, 128 + padding
  r = make_scenario(m, 8, 1);
  r.scenario.spec.parallel.tp = 2;  // per GPU: inter 128, shared 320 -> 3 chunks
  s = layer_shape(r);
  CHECK(s.inter == 128);
  CHECK(s.shared_chunks == 3);
  CHECK(s.shared == 6);
  CHECK(shared_slot(s, 4).expert == 1);
  CHECK(shared_slot(s, 4).column == 128);
  CHECK(shared_slot(s, 5).column == 256);
  CHECK(shared_slot(s, 5).columns == 64);
  const MoePlan p = build_plan(r);
  check_plan(p);
  for (std::uint32_t c = 0; c < 6; ++c) CHECK(p.layout.expert_rows[64 + c] == 8);

  m.shared_intermediate_size = 100;  // smaller than a routed expert: one padded chunk
  s = layer_shape(make_scenario(m, 8, 1));
  CHECK(s.shared_chunks == 1);
  CHECK(shared_slot(s, 1).columns == 100);
}

TEST_CASE("the same seed gives an identical plan, another seed another routing",
          "[layout][determinism]") {
  ModelSpec m = make_model(64, 6, 128, 64);
  m.shared_experts = 2;
  m.shared_intermediate_size = 64;
  for (const RoutingSource src : {RoutingSource::router, RoutingSource::zipf}) {
    const MoePlan a = build_plan(make_scenario(m, 333, 12, src));
    const MoePlan b = build_plan(make_scenario(m, 333, 12, src));
    const MoePlan c = build_plan(make_scenario(m, 333, 13, src));
    CHECK(same_plan(a, b));
    CHECK(a.routing.ids != c.routing.ids);
  }
}
