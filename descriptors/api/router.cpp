#include "descriptors/api/router.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include <fmt/core.h>
#include <tbb/parallel_for.h>

#include "descriptors/plan/gating.h"
#include "descriptors/plan/synthetic_tensors.h"

namespace tdmsim::api {

plan::Routing route_activations(const ModelSpec& model, std::span<const float> x,
                                std::uint32_t tokens, std::uint64_t seed) {
  const std::uint32_t experts = model.experts, hidden = model.hidden_size;
  const float scale = plan::router_weight_scale(hidden);
  std::vector<float> w(std::size_t{experts} * hidden);
  for (std::uint32_t e = 0; e < experts; ++e) {
    for (std::uint32_t h = 0; h < hidden; ++h) {
      w[std::size_t{e} * hidden + h] = plan::router_weight_value(seed, hidden, scale, e, h);
    }
  }
  std::vector<float> bias, correction;
  if (model.gating.router_bias) {
    bias.resize(experts);
    for (std::uint32_t e = 0; e < experts; ++e) bias[e] = plan::router_bias_value(seed, e);
  }
  if (model.gating.correction_bias) {
    correction.resize(experts);
    for (std::uint32_t e = 0; e < experts; ++e) correction[e] = plan::correction_bias_value(seed, e);
  }
  return route_activations(model, x, tokens, RouterWeights{w, bias, correction});
}

plan::Routing route_activations(const ModelSpec& model, std::span<const float> x,
                                std::uint32_t tokens, const RouterWeights& router) {
  const std::uint32_t experts = model.experts, hidden = model.hidden_size, k = model.top_k;
  const auto check = [&](std::span<const float> v, std::size_t n, const char* what) {
    if (!v.empty() && v.size() != n) {
      throw std::invalid_argument(fmt::format("router {} has {} values, expected {}", what,
                                              v.size(), n));
    }
  };
  check(router.w, std::size_t{experts} * hidden, "weights");
  if (router.w.empty()) throw std::invalid_argument("router weights are empty");
  check(router.bias, experts, "bias");
  check(router.correction, experts, "correction bias");
  const plan::Gate gate = plan::Gate::from_model(model);
  plan::Routing r;
  r.ids.resize(std::size_t{tokens} * k);
  r.weights.resize(r.ids.size());
  // Tokens are independent and each one's arithmetic is fixed: splitting them
  // over threads cannot change a bit.
  tbb::parallel_for(std::uint32_t{0}, tokens, [&](std::uint32_t t) {
    std::vector<float> logits(experts);
    const float* xt = x.data() + std::size_t{t} * hidden;
    for (std::uint32_t e = 0; e < experts; ++e) {
      double acc = 0.0;  // float x float is exact in double: only the adds round
      const float* we = router.w.data() + std::size_t{e} * hidden;
      for (std::uint32_t h = 0; h < hidden; ++h) acc += double(xt[h]) * double(we[h]);
      if (!router.bias.empty()) acc += double(router.bias[e]);
      logits[e] = static_cast<float>(acc);
    }
    plan::gate_token(gate, logits, router.correction,
                     std::span(r.ids).subspan(std::size_t{t} * k, k),
                     std::span(r.weights).subspan(std::size_t{t} * k, k));
  });
  return r;
}

std::optional<RouteProblem> route_problem(std::span<const std::uint32_t> experts, std::span<const float> weights,
                                          std::uint32_t model_experts) {
  for (std::uint32_t j = 0; j < experts.size(); ++j) {
    const std::uint32_t e = experts[j];
    if (e >= model_experts) return RouteProblem{RouteProblem::Kind::missing_expert, j, 0};
    const auto first = std::find(experts.begin(), experts.begin() + j, e);
    if (first != experts.begin() + j) {
      return RouteProblem{RouteProblem::Kind::repeated_expert, j,
                          static_cast<std::uint32_t>(first - experts.begin())};
    }
    if (j < weights.size() && !std::isfinite(weights[j])) {
      return RouteProblem{RouteProblem::Kind::non_finite_weight, j, 0};
    }
  }
  return std::nullopt;
}

plan::Routing route_callback(const RoutingCallback& callback, const ModelSpec& model,
                             std::span<const float> x, std::uint32_t tokens) {
  const std::uint32_t k = model.top_k, hidden = model.hidden_size;
  plan::Routing r;
  r.ids.reserve(std::size_t{tokens} * k);
  r.weights.reserve(std::size_t{tokens} * k);
  for (std::uint32_t t = 0; t < tokens; ++t) {
    const TokenRoute route = callback(t, x.subspan(std::size_t{t} * hidden, hidden));
    const auto bad = [t](const std::string& what) {
      return std::invalid_argument(fmt::format("routing callback, token {}: {}", t, what));
    };
    if (route.experts.size() != k || route.weights.size() != k) {
      throw bad(fmt::format("returned {} experts and {} weights, the model routes to top_k = {}",
                            route.experts.size(), route.weights.size(), k));
    }
    if (const auto p = route_problem(route.experts, route.weights, model.experts)) {
      const std::uint32_t e = route.experts[p->at];
      switch (p->kind) {
        case RouteProblem::Kind::missing_expert:
          throw bad(fmt::format("expert {} does not exist (model {} has {})", e, model.name, model.experts));
        case RouteProblem::Kind::repeated_expert: throw bad(fmt::format("expert {} picked twice", e));
        case RouteProblem::Kind::non_finite_weight: throw bad("non-finite weight");
      }
    }
    r.ids.insert(r.ids.end(), route.experts.begin(), route.experts.end());
    r.weights.insert(r.weights.end(), route.weights.begin(), route.weights.end());
  }
  return r;
}

}  // namespace tdmsim::api
