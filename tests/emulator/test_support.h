// Test helpers: layer shapes, random routings and plans built without a
// scenario file, so emulator tests can cover shapes no shipped model has.
#pragma once

#include <optional>
#include <cstdint>
#include <random>

#include "descriptors/plan/moe_plan.h"

namespace tdmsim::emu::test {

struct ShapeSpec {
  std::uint32_t tokens = 4;
  std::uint32_t hidden = 32;
  std::uint32_t inter = 32;
  std::uint32_t experts = 4;  // routed experts of the model
  std::uint32_t ep = 1;       // this GPU holds experts / ep of them
  std::uint32_t top_k = 2;
  std::uint32_t shared_experts = 0;
  std::uint32_t shared_inter = 0;
  DType dtype = DType::fp32;
  std::optional<DType> weight_dtype;  // unset: dtype
  Quant quant = Quant::none;
  Activation activation = Activation::silu;
  double activation_limit = 0.0;
  bool weight_on_input = false;
};

// The LayerShape a plan builder would derive (shared experts as chunks of I).
plan::LayerShape make_shape(const ShapeSpec& s);

enum class RoutingMode {
  uniform,      // distinct experts drawn uniformly per token
  one_expert,   // every token picks the same top_k experts
  skip_first,   // expert 0 never picked (an expert with zero tokens); needs experts > top_k
};

// top_k distinct experts per token and weights in [0.05, 1).
plan::Routing random_routing(const plan::LayerShape& shape, RoutingMode mode, std::mt19937_64& rng);

// A plan from a routing via the plan library's fuse_routing / sort_into_blocks.
plan::MoePlan make_plan(const plan::LayerShape& shape, const plan::Routing& routing,
                        std::uint32_t block_m, std::uint32_t stages, std::uint64_t seed);

// Relative Frobenius error ||a - b|| / ||b|| (0 when both are zero).
double rel_error(const std::vector<float>& a, const std::vector<double>& b);

}  // namespace tdmsim::emu::test
