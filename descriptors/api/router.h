// Routing for forward(x) on caller activations: the model's router applied to
// the given x (routing.source: router), or a caller's routing callback,
// checked before any of it reaches the plan.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "descriptors/api/moe_api.h"

namespace tdmsim::api {

// The router on given activations x [tokens][hidden]: logits x . W_router^T
// (+ router bias) accumulated in double in increasing h and rounded once to
// float, then the model's gating. With the seed's weights this is exactly
// what plan::route_router does on the seeded activations (a test holds the
// two equal); a caller's weights replace W and both biases.
plan::Routing route_activations(const ModelSpec& model, std::span<const float> x,
                                std::uint32_t tokens, std::uint64_t seed);
plan::Routing route_activations(const ModelSpec& model, std::span<const float> x,
                                std::uint32_t tokens, const RouterWeights& router);

// The first problem of one token's route (top_k experts and their weights):
// an expert the model lacks (index `at`), one picked again (at `at`, first
// at `first`), a non-finite weight (at `at`). The one check of a callback's
// answers (route_callback) and of the C API's precomputed ids, each of which
// names the problem its own way.
struct RouteProblem {
  enum class Kind { missing_expert, repeated_expert, non_finite_weight } kind;
  std::uint32_t at = 0;
  std::uint32_t first = 0;
};
std::optional<RouteProblem> route_problem(std::span<const std::uint32_t> experts, std::span<const float> weights,
                                          std::uint32_t model_experts);

// Calls `callback` once per token, in token order. Throws std::invalid_argument
// naming the token if it returns other than top_k ids and weights, an id
// outside the model's experts, a repeated id or a non-finite weight.
plan::Routing route_callback(const RoutingCallback& callback, const ModelSpec& model,
                             std::span<const float> x, std::uint32_t tokens);

}  // namespace tdmsim::api
