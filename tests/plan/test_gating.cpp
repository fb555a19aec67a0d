// Gating on hand-computed cases: every expected number is derived in the test
// from the math of docs/moe-plan.md "Gating", not copied from the code.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <vector>

#include "descriptors/plan/gating.h"

using namespace tdmsim;
using namespace tdmsim::plan;

namespace {

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

struct Result {
  std::vector<std::uint32_t> ids;
  std::vector<float> weights;
};

Result run(const Gate& g, const std::vector<float>& logits, const std::vector<float>& bias = {}) {
  Result r{std::vector<std::uint32_t>(g.top_k), std::vector<float>(g.top_k)};
  gate_token(g, logits, bias, r.ids, r.weights);
  return r;
}

Gate gate(Scoring scoring, std::uint32_t top_k, bool renormalize, double scaling = 1.0) {
  Gate g;
  g.scoring = scoring;
  g.top_k = top_k;
  g.renormalize = renormalize;
  g.routed_scaling = scaling;
  return g;
}

}  // namespace

TEST_CASE("softmax top-2 with and without renormalisation", "[gating]") {
  // exp(logits) = 1, 2, 3, 4 -> softmax 0.1, 0.2, 0.3, 0.4; top-2 = experts 3, 2.
  const std::vector<float> logits = {0.0f, std::log(2.0f), std::log(3.0f), std::log(4.0f)};
  const Result plain = run(gate(Scoring::softmax, 2, false), logits);
  CHECK(plain.ids == std::vector<std::uint32_t>{3, 2});
  CHECK(plain.weights[0] == Approx(0.4).epsilon(1e-6));
  CHECK(plain.weights[1] == Approx(0.3).epsilon(1e-6));

  const Result renorm = run(gate(Scoring::softmax, 2, true), logits);
  CHECK(renorm.ids == std::vector<std::uint32_t>{3, 2});
  CHECK(renorm.weights[0] == Approx(0.4 / 0.7).epsilon(1e-6));
  CHECK(renorm.weights[1] == Approx(0.3 / 0.7).epsilon(1e-6));
}

TEST_CASE("sigmoid scores and routed scaling", "[gating]") {
  const std::vector<float> logits = {0.0f, 1.0f, -1.0f, 2.0f};
  const Result r = run(gate(Scoring::sigmoid, 2, false, 2.5), logits);
  CHECK(r.ids == std::vector<std::uint32_t>{3, 1});
  CHECK(r.weights[0] == Approx(2.5 * sigmoid(2.0)).epsilon(1e-6));
  CHECK(r.weights[1] == Approx(2.5 * sigmoid(1.0)).epsilon(1e-6));

  // Same logits, softmax: the same experts win but the weights differ.
  const Result s = run(gate(Scoring::softmax, 2, false), logits);
  const double z = 1.0 + std::exp(1.0) + std::exp(-1.0) + std::exp(2.0);
  CHECK(s.ids == std::vector<std::uint32_t>{3, 1});
  CHECK(s.weights[0] == Approx(std::exp(2.0) / z).epsilon(1e-6));
  CHECK(s.weights[1] == Approx(std::exp(1.0) / z).epsilon(1e-6));
}

TEST_CASE("a correction bias changes the selection, never the weights", "[gating]") {
  const std::vector<float> logits = {0.0f, 1.0f, -1.0f, 2.0f};
  // Selection scores: 0.5, 0.731, 0.269 + 0.75 = 1.019, 0.881 -> experts 2, 3.
  const std::vector<float> bias = {0.0f, 0.0f, 0.75f, 0.0f};
  const Result r = run(gate(Scoring::sigmoid, 2, true), logits, bias);
  CHECK(r.ids == std::vector<std::uint32_t>{2, 3});
  const double w2 = sigmoid(-1.0);  // unbiased
  const double w3 = sigmoid(2.0);
  CHECK(r.weights[0] == Approx(w2 / (w2 + w3)).epsilon(1e-6));
  CHECK(r.weights[1] == Approx(w3 / (w2 + w3)).epsilon(1e-6));
  // Without the bias the selection is the plain top-2.
  CHECK(run(gate(Scoring::sigmoid, 2, true), logits).ids == std::vector<std::uint32_t>{3, 1});
}

TEST_CASE("grouped top-k: 8 experts in 4 groups, keep 2, top-3", "[gating]") {
  // Groups of two: {0,1} {2,3} {4,5} {6,7}.
  const std::vector<float> logits = {1.0f, -1.0f, 0.5f, 2.0f, 0.0f, -0.5f, 1.5f, -2.0f};
  Gate g = gate(Scoring::sigmoid, 3, true, 2.5);
  g.n_group = 4;
  g.topk_group = 2;
  const double s0 = sigmoid(1.0), s1 = sigmoid(-1.0), s2 = sigmoid(0.5), s3 = sigmoid(2.0);
  const double s6 = sigmoid(1.5), s7 = sigmoid(-2.0);

  SECTION("with a (zero) correction bias: groups scored by the sum of their top two") {
    // Group scores: g0 = s0+s1 = 1.0, g1 = s2+s3 = 1.503, g2 = 0.5+0.378 = 0.878,
    // g3 = s6+s7 = 0.937 -> keep g1, g0; top-3 of {0,1,2,3} = 3, 0, 2. Expert 6
    // (second best overall) is excluded with its group.
    REQUIRE(s0 + s1 < s2 + s3);
    REQUIRE(s6 + s7 < s0 + s1);
    const Result r = run(g, logits, std::vector<float>(8, 0.0f));
    CHECK(r.ids == std::vector<std::uint32_t>{3, 0, 2});
    const double sum = s3 + s0 + s2;
    CHECK(r.weights[0] == Approx(2.5 * s3 / sum).epsilon(1e-6));
    CHECK(r.weights[1] == Approx(2.5 * s0 / sum).epsilon(1e-6));
    CHECK(r.weights[2] == Approx(2.5 * s2 / sum).epsilon(1e-6));
  }
  SECTION("without a bias: groups scored by their best expert") {
    // Group maxima: g0 0.731, g1 0.881, g2 0.5, g3 0.818 -> keep g1, g3;
    // top-3 of {2,3,6,7} = 3, 6, 2.
    const Result r = run(g, logits);
    CHECK(r.ids == std::vector<std::uint32_t>{3, 6, 2});
    const double sum = s3 + s6 + s2;
    CHECK(r.weights[1] == Approx(2.5 * s6 / sum).epsilon(1e-6));
  }
  SECTION("ungrouped, the same logits pick 3, 6, 0") {
    g.n_group = 1;
    g.topk_group = 1;
    CHECK(run(g, logits).ids == std::vector<std::uint32_t>{3, 6, 0});
  }
}

TEST_CASE("ties go to the lower expert and the lower group", "[gating]") {
  // All logits 0 -> every sigmoid score 0.5; biases are exact binary fractions.
  // Selection: 0.625 0.5 | 0.875 0.25 | 0.75 0.75 | 1.0 0.0
  // Group sums: 1.125, 1.125, 1.5, 1.0 -> keep g2, then g0 (ties g1, lower index).
  // Top-3 of {0,1,4,5}: 4 (0.75), 5 (0.75, tie -> after 4), 0 (0.625).
  const std::vector<float> logits(8, 0.0f);
  const std::vector<float> bias = {0.125f, 0.0f, 0.375f, -0.25f, 0.25f, 0.25f, 0.5f, -0.5f};
  Gate g = gate(Scoring::sigmoid, 3, true, 1.0);
  g.n_group = 4;
  g.topk_group = 2;
  const Result r = run(g, logits, bias);
  CHECK(r.ids == std::vector<std::uint32_t>{4, 5, 0});
  for (const float w : r.weights) CHECK(w == Approx(1.0 / 3.0).epsilon(1e-6));

  const Result flat = run(gate(Scoring::softmax, 4, false), std::vector<float>(6, 1.0f));
  CHECK(flat.ids == std::vector<std::uint32_t>{0, 1, 2, 3});
}

TEST_CASE("top-1 sigmoid without renormalisation keeps the raw score (Llama-4)", "[gating]") {
  const std::vector<float> logits = {0.25f, -3.0f, 1.0f, 0.0f};
  const Result r = run(gate(Scoring::sigmoid, 1, false), logits);
  CHECK(r.ids == std::vector<std::uint32_t>{2});
  CHECK(r.weights[0] == Approx(sigmoid(1.0)).epsilon(1e-6));
  // top_k = E: every expert, ordered by score.
  const Result all = run(gate(Scoring::softmax, 4, true), logits);
  CHECK(all.ids == std::vector<std::uint32_t>{2, 0, 3, 1});
  double sum = 0;
  for (const float w : all.weights) sum += w;
  CHECK(sum == Approx(1.0).epsilon(1e-6));
}
