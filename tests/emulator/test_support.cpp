#include "tests/emulator/test_support.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tdmsim::emu::test {

plan::LayerShape make_shape(const ShapeSpec& s) {
  plan::LayerShape shape;
  shape.tokens = s.tokens;
  shape.hidden = s.hidden;
  shape.inter = s.inter;
  shape.shared_inter = s.shared_experts > 0 ? s.shared_inter : 0;
  shape.experts_total = s.experts;
  shape.experts_local = s.experts / s.ep;
  shape.shared_experts = s.shared_experts;
  shape.shared_chunks = s.shared_experts > 0 ? (s.shared_inter + s.inter - 1) / s.inter : 0;
  shape.shared = shape.shared_experts * shape.shared_chunks;
  shape.top_k = s.top_k;
  shape.dtype = s.dtype;
  shape.weight_dtype = s.weight_dtype.value_or(s.dtype);
  shape.quant = s.quant;
  shape.activation = s.activation;
  shape.activation_limit = s.activation_limit;
  shape.weight_on_input = s.weight_on_input;
  return shape;
}

plan::Routing random_routing(const plan::LayerShape& shape, RoutingMode mode,
                             std::mt19937_64& rng) {
  const std::uint32_t e = shape.experts_total, k = shape.top_k;
  plan::Routing r;
  r.ids.resize(std::size_t{shape.tokens} * k);
  r.weights.resize(r.ids.size());
  std::vector<std::uint32_t> perm(e);
  std::iota(perm.begin(), perm.end(), 0u);
  std::vector<std::uint32_t> fixed(perm.begin(), perm.begin() + k);
  std::shuffle(fixed.begin(), fixed.end(), rng);
  std::uniform_real_distribution<float> wdist(0.05f, 1.0f);
  for (std::uint32_t t = 0; t < shape.tokens; ++t) {
    if (mode == RoutingMode::one_expert) {
      std::copy(fixed.begin(), fixed.end(), r.ids.begin() + std::ptrdiff_t{t} * k);
    } else {
      const std::uint32_t first = mode == RoutingMode::skip_first ? 1 : 0;
      std::shuffle(perm.begin() + first, perm.end(), rng);
      std::copy_n(perm.begin() + first, k, r.ids.begin() + std::ptrdiff_t{t} * k);
    }
    for (std::uint32_t j = 0; j < k; ++j) r.weights[std::size_t{t} * k + j] = wdist(rng);
  }
  return r;
}

plan::MoePlan make_plan(const plan::LayerShape& shape, const plan::Routing& routing,
                        std::uint32_t block_m, std::uint32_t stages, std::uint64_t seed) {
  plan::MoePlan p;
  p.shape = shape;
  p.seed = seed;
  p.routing = routing;
  p.fused = plan::fuse_routing(shape, routing);
  p.layout = plan::sort_into_blocks(shape, p.fused, block_m);
  p.kernel.stages = stages;
  p.kernel.block_m = block_m;
  return p;
}

double rel_error(const std::vector<float>& a, const std::vector<double>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    num += d * d;
    den += b[i] * b[i];
  }
  if (den == 0) return num == 0 ? 0.0 : INFINITY;
  return std::sqrt(num / den);
}

}  // namespace tdmsim::emu::test
