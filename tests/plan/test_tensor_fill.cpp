// Batch generation of synthetic tensor values (descriptors/plan/tensor_fill.h):
// every variant the host runs gives tensor_value()'s bits, index by index.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "descriptors/plan/tensor_fill.h"

using namespace tdmsim::plan;

TEST_CASE("tensor_fill gives tensor_value's bits for every variant the host runs", "[routing][host-speed]") {
  struct Case {
    std::uint64_t seed;
    TensorId id;
    std::uint64_t part, first, stride;
    std::size_t n;
    float scale;
  };
  const std::vector<Case> cases = {
      {1, TensorId::router_weight, 0, 5, 7168, 256, 0.0118f},  // a row of DeepSeek-V3's W^T
      {1, TensorId::activations, 0, 7168 * 63, 1, 300, 1.0f},
      {99, TensorId::w_gate_up, 17, 0, 1, 13, 3.5f},            // a remainder after one vector
      {~0ull, TensorId::router_bias, 3, (1ull << 40) + 1, 3, 7, 1e-3f},  // no full vector
      {0, TensorId::routing_draw, 2, 0, 0, 9, 1.0f},            // stride 0: one index repeated
      {5, TensorId::w_down, 1, 3, 11, 15, 0.37f},               // 8 at once, then 4, then 3
  };
  for (const FillIsa isa : {FillIsa::scalar, FillIsa::avx2}) {
    if (!fill_isa_supported(isa)) {
      WARN("variant " << static_cast<int>(isa) << " not supported by this host: not checked here");
      continue;
    }
    for (const Case& c : cases) {
      std::vector<float> got(c.n, -7.0f);
      tensor_fill(isa, c.seed, c.id, c.part, c.first, c.stride, c.n, c.scale, got.data());
      for (std::size_t i = 0; i < c.n; ++i) {
        const float want = tensor_value(c.seed, c.id, c.part, c.first + i * c.stride, c.scale);
        INFO("isa " << static_cast<int>(isa) << ", index " << i);
        CHECK(std::memcmp(&got[i], &want, sizeof(float)) == 0);
      }
    }
  }
  CHECK(fill_isa_supported(fill_isa_best()));
}
