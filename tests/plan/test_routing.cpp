// Routing sources: the router's math and order, the synthetic distributions'
// shapes, and determinism (seed in, bits out, whatever the thread count).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include <tbb/task_arena.h>

#include "descriptors/plan/routing.h"
#include "plan_test_util.h"

using namespace tdmsim;
using namespace tdmsim::plan;
using namespace tdmsim::plan::test;

namespace {

// Picks per expert over a whole routing.
std::vector<std::uint32_t> loads(const Routing& r, std::uint32_t experts) {
  std::vector<std::uint32_t> n(experts, 0);
  for (const std::uint32_t e : r.ids) ++n[e];
  return n;
}

double max_over_mean(const std::vector<std::uint32_t>& load) {
  const double total = std::accumulate(load.begin(), load.end(), 0.0);
  return *std::max_element(load.begin(), load.end()) / (total / static_cast<double>(load.size()));
}

void check_distinct_in_range(const Routing& r, std::uint32_t experts, std::uint32_t k) {
  REQUIRE(r.ids.size() % k == 0);
  REQUIRE(r.weights.size() == r.ids.size());
  for (std::size_t t = 0; t < r.ids.size() / k; ++t) {
    std::set<std::uint32_t> seen;
    for (std::uint32_t j = 0; j < k; ++j) {
      const std::uint32_t e = r.ids[t * k + j];
      REQUIRE(e < experts);
      REQUIRE(seen.insert(e).second);
      REQUIRE(std::isfinite(r.weights[t * k + j]));
      REQUIRE(r.weights[t * k + j] >= 0.0f);
    }
  }
}

}  // namespace

TEST_CASE("router logits are x.W^T accumulated in double in increasing h", "[routing]") {
  ModelSpec m = make_model(6, 2, 48);
  m.gating.router_bias = true;
  const std::uint64_t seed = 99;
  const std::uint32_t tokens = 5;
  const std::vector<float> logits = router_logits(m, tokens, seed);
  for (std::uint32_t t = 0; t < tokens; ++t) {
    for (std::uint32_t e = 0; e < m.experts; ++e) {
      double acc = 0.0;
      for (std::uint32_t h = 0; h < m.hidden_size; ++h) {
        acc += static_cast<double>(activation_value(seed, m.hidden_size, t, h)) *
               router_weight_value(seed, m.hidden_size, router_weight_scale(m.hidden_size), e, h);
      }
      acc += router_bias_value(seed, e);
      CHECK(logits[t * m.experts + e] == static_cast<float>(acc));  // bit-exact
    }
  }
}

TEST_CASE("router routing is gating applied to the router logits", "[routing]") {
  ModelSpec m = make_model(16, 3, 64);
  m.gating.scoring = Scoring::sigmoid;
  m.gating.correction_bias = true;
  m.gating.n_group = 4;
  m.gating.topk_group = 2;
  m.gating.routed_scaling = 2.5;
  const std::uint32_t tokens = 40;
  const Routing r = route_router(m, tokens, 3);
  check_distinct_in_range(r, 16, 3);
  const std::vector<float> logits = router_logits(m, tokens, 3);
  std::vector<float> bias(16);
  for (std::uint32_t e = 0; e < 16; ++e) bias[e] = correction_bias_value(3, e);
  for (std::uint32_t t = 0; t < tokens; ++t) {
    std::vector<std::uint32_t> ids(3);
    std::vector<float> w(3);
    gate_token(Gate::from_model(m), std::span(logits).subspan(t * 16, 16), bias, ids, w);
    CHECK(std::equal(ids.begin(), ids.end(), r.ids.begin() + t * 3));
    CHECK(std::equal(w.begin(), w.end(), r.weights.begin() + t * 3));
    // Grouped: the picks come from at most topk_group groups; renormalised
    // and scaled weights sum to routed_scaling.
    std::set<std::uint32_t> groups;
    for (std::uint32_t j = 0; j < 3; ++j) groups.insert(r.ids[t * 3 + j] / 4);
    CHECK(groups.size() <= 2);
    CHECK(r.weights[t * 3] + r.weights[t * 3 + 1] + r.weights[t * 3 + 2] ==
          Approx(2.5).epsilon(1e-5));
  }
}

TEST_CASE("routing is independent of the thread count", "[routing][determinism]") {
  ModelSpec m = make_model(64, 6, 128);
  RoutingSpec zipf = config::defaults<RoutingSpec>();
  zipf.source = RoutingSource::zipf;
  zipf.zipf_s = 1.1;
  Routing router_many;
  Routing synth_many;
  Routing router_one;
  Routing synth_one;
  router_many = route_router(m, 300, 11);
  synth_many = route_synthetic(m, zipf, 3000, 11);
  tbb::task_arena one(1);
  one.execute([&] {
    router_one = route_router(m, 300, 11);
    synth_one = route_synthetic(m, zipf, 3000, 11);
  });
  CHECK(router_many.ids == router_one.ids);
  CHECK(router_many.weights == router_one.weights);
  CHECK(synth_many.ids == synth_one.ids);
  CHECK(synth_many.weights == synth_one.weights);
}

TEST_CASE("synthetic sources draw distinct experts with realistic weights", "[routing]") {
  for (const RoutingSource source :
       {RoutingSource::uniform, RoutingSource::zipf, RoutingSource::lognormal, RoutingSource::hot}) {
    for (const std::uint32_t experts : {1u, 2u, 8u, 33u, 256u}) {
      const std::uint32_t k = std::min(experts, 8u);
      ModelSpec m = make_model(experts, k);
      RoutingSpec spec = config::defaults<RoutingSpec>();
      spec.source = source;
      spec.zipf_s = 3.0;  // steep: forces the exact fallback after repeats
      spec.hot_experts = {0};
      INFO("source " << static_cast<int>(source) << " experts " << experts);
      const Routing r = route_synthetic(m, spec, 200, 5);
      check_distinct_in_range(r, experts, k);
      for (std::size_t t = 0; t < 200; ++t) {  // renormalised softmax: sums to 1
        double sum = 0;
        for (std::uint32_t j = 0; j < k; ++j) sum += r.weights[t * k + j];
        CHECK(sum == Approx(1.0).epsilon(1e-5));
      }
    }
  }
}

TEST_CASE("synthetic weights follow the model's gating", "[routing]") {
  ModelSpec m = make_model(64, 8);
  m.gating.renormalize = false;  // OLMoE-like: softmax over all experts, no renorm
  RoutingSpec spec = config::defaults<RoutingSpec>();
  const Routing r = route_synthetic(m, spec, 100, 1);
  for (std::size_t t = 0; t < 100; ++t) {
    double sum = 0;
    for (std::uint32_t j = 0; j < 8; ++j) sum += r.weights[t * 8 + j];
    // Chosen logits in [0, 2) against 56 others at mean exp mass 0.432: the
    // top-8 mass is between 8/(8+56*0.432) = 0.25 and 8e^2/(8e^2+24.2) = 0.71.
    CHECK(sum > 0.2);
    CHECK(sum < 0.75);
  }
  ModelSpec ds = make_model(64, 8);
  ds.gating.scoring = Scoring::sigmoid;
  ds.gating.routed_scaling = 2.5;
  const Routing d = route_synthetic(ds, spec, 100, 1);
  for (std::size_t t = 0; t < 100; ++t) {
    double sum = 0;
    for (std::uint32_t j = 0; j < 8; ++j) sum += d.weights[t * 8 + j];
    CHECK(sum == Approx(2.5).epsilon(1e-5));
  }
}

TEST_CASE("Zipf(1.2) over 256 experts is measurably skewed, uniform is not", "[routing]") {
  const ModelSpec m = make_model(256, 8);
  RoutingSpec uniform = config::defaults<RoutingSpec>();
  RoutingSpec zipf = uniform;
  zipf.source = RoutingSource::zipf;
  zipf.zipf_s = 1.2;
  RoutingSpec lognormal = uniform;
  lognormal.source = RoutingSource::lognormal;
  lognormal.lognormal_sigma = 1.0;
  const double u = max_over_mean(loads(route_synthetic(m, uniform, 2048, 1), 256));
  const double z = max_over_mean(loads(route_synthetic(m, zipf, 2048, 1), 256));
  const double l = max_over_mean(loads(route_synthetic(m, lognormal, 2048, 1), 256));
  // Uniform: mean 64 picks per expert, the max is a few standard deviations
  // (8) above. Zipf: the top-ranked expert takes a quarter of all draws and so
  // is in nearly every token's top-8, about 2048 / 64 = 32x the mean.
  CHECK(u < 1.6);
  CHECK(z > 20.0);
  CHECK(l > 2.0);
  CHECK(l < z);
}

TEST_CASE("hot source: hot_fraction 1 with one hot expert sends every token there",
          "[routing]") {
  const ModelSpec m = make_model(16, 1);
  RoutingSpec hot = config::defaults<RoutingSpec>();
  hot.source = RoutingSource::hot;
  hot.hot_experts = {11};
  hot.hot_fraction = 1.0;
  const Routing r = route_synthetic(m, hot, 100, 2);
  CHECK(std::all_of(r.ids.begin(), r.ids.end(), [](std::uint32_t e) { return e == 11; }));
  // top-2: the hot set is exhausted after one pick, the second comes from the rest.
  const Routing r2 = route_synthetic(make_model(16, 2), hot, 100, 2);
  for (std::size_t t = 0; t < 100; ++t) {
    CHECK(r2.ids[2 * t] == 11);
    CHECK(r2.ids[2 * t + 1] != 11);
  }
  // hot_fraction 0.5 with four hot experts: about half of the picks are hot.
  hot.hot_experts = {1, 2, 3, 4};
  hot.hot_fraction = 0.5;
  const Routing half = route_synthetic(make_model(16, 1), hot, 4000, 3);
  const auto n_hot = std::count_if(half.ids.begin(), half.ids.end(),
                                   [](std::uint32_t e) { return e >= 1 && e <= 4; });
  CHECK(static_cast<double>(n_hot) / 4000.0 == Approx(0.5).margin(0.04));
}

TEST_CASE("the same seed gives the same routing, another seed another", "[routing][determinism]") {
  const ModelSpec m = make_model(32, 4, 64);
  for (const RoutingSource source :
       {RoutingSource::uniform, RoutingSource::zipf, RoutingSource::lognormal}) {
    RoutingSpec spec = config::defaults<RoutingSpec>();
    spec.source = source;
    const Routing a = route_synthetic(m, spec, 64, 7);
    const Routing b = route_synthetic(m, spec, 64, 7);
    const Routing c = route_synthetic(m, spec, 64, 8);
    CHECK(a.ids == b.ids);
    CHECK(a.weights == b.weights);
    CHECK(a.ids != c.ids);
  }
  CHECK(route_router(m, 64, 7).ids == route_router(m, 64, 7).ids);
  CHECK(route_router(m, 64, 7).ids != route_router(m, 64, 8).ids);
}
