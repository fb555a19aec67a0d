// The router's synthetic tensors, defined once so that the plan (CPU), the
// emulator and the GPU kernels regenerate identical values from the seed.
// Host/device: the kernels include this too (see docs/moe-plan.md "Router").
#pragma once

#include <cmath>
#include <cstdint>

#include "descriptors/plan/tensor_rng.h"

namespace tdmsim::plan {

// Scale of the router and correction biases: small beside the logits
// (standard deviation ~1/3) so that they shift, not dictate, the selection.
inline constexpr float kRouterBiasScale = 0.1f;

// Scale of the router weight, 1/sqrt(H) in float, so a logit's variance does
// not grow with H. sqrtf and the division are correctly rounded under IEEE
// rules; a device build without them should take this value from the host.
inline float router_weight_scale(std::uint32_t hidden) {
  return 1.0f / std::sqrt(static_cast<float>(hidden));
}

// x[t][h], the MoE layer input (also the router input), uniform in [-1, 1).
TDMSIM_HD inline float activation_value(std::uint64_t seed, std::uint32_t hidden,
                                        std::uint32_t t, std::uint32_t h) {
  return tensor_value(seed, TensorId::activations, 0, std::uint64_t(t) * hidden + h, 1.0f);
}
// W_router[e][h], uniform in [-scale, scale) with scale = router_weight_scale(H).
TDMSIM_HD inline float router_weight_value(std::uint64_t seed, std::uint32_t hidden,
                                           float scale, std::uint32_t e, std::uint32_t h) {
  return tensor_value(seed, TensorId::router_weight, 0, std::uint64_t(e) * hidden + h, scale);
}
TDMSIM_HD inline float router_bias_value(std::uint64_t seed, std::uint32_t e) {
  return tensor_value(seed, TensorId::router_bias, 0, e, kRouterBiasScale);
}
TDMSIM_HD inline float correction_bias_value(std::uint64_t seed, std::uint32_t e) {
  return tensor_value(seed, TensorId::correction_bias, 0, e, kRouterBiasScale);
}

}  // namespace tdmsim::plan
