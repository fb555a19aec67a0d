// The router's multiply-add kernel (descriptors/plan/router_accumulate.h):
// every instruction-set variant the host runs gives the scalar reference's
// bits, and the reference is the documented sum (double, increasing h).
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "descriptors/plan/router_accumulate.h"
#include "descriptors/plan/tensor_rng.h"

using namespace tdmsim::plan;

namespace {

struct Case {
  std::uint32_t rows, experts, tokens;
};

// Inputs of mixed magnitudes (so that sums round), from the project's RNG.
void fill(std::vector<float>& v, std::uint64_t part) {
  for (std::size_t i = 0; i < v.size(); ++i) {
    const float u = tensor_value(7, TensorId::routing_draw, part, i, 1.0f);
    v[i] = u * (i % 3 == 0 ? 1e-3f : i % 3 == 1 ? 1.0f : 37.0f);
  }
}

std::vector<double> run(RouterIsa isa, const Case& c, const std::vector<float>& wt, const std::vector<float>& x,
                        std::size_t stride) {
  std::vector<double> acc(std::size_t(c.tokens) * c.experts);
  for (std::size_t i = 0; i < acc.size(); ++i) acc[i] = 0.25 * static_cast<double>(i % 5);  // a running sum
  router_accumulate(isa, wt.data(), c.rows, c.experts, x.data(), stride, c.tokens, acc.data());
  return acc;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

}  // namespace

TEST_CASE("router_accumulate's scalar reference is the sum in double in increasing h", "[routing][host-speed]") {
  const Case c{37, 11, 3};
  std::vector<float> wt(std::size_t(c.rows) * c.experts), x(std::size_t(c.tokens) * 40);
  fill(wt, 1);
  fill(x, 2);
  const std::vector<double> acc = run(RouterIsa::scalar, c, wt, x, 40);
  for (std::uint32_t t = 0; t < c.tokens; ++t) {
    for (std::uint32_t e = 0; e < c.experts; ++e) {
      double s = 0.25 * static_cast<double>((t * c.experts + e) % 5);
      for (std::uint32_t h = 0; h < c.rows; ++h) {
        s += static_cast<double>(x[t * 40 + h]) * static_cast<double>(wt[h * c.experts + e]);
      }
      CHECK(acc[t * c.experts + e] == s);  // bit-exact
    }
  }
}

TEST_CASE("every router_accumulate variant the host runs gives the scalar bits", "[routing][host-speed]") {
  // Shapes that exercise full vector blocks, token and expert remainders.
  const std::vector<Case> cases = {{1, 1, 1},    {7, 16, 2},    {64, 32, 4},  {300, 256, 9},
                                   {129, 37, 5}, {256, 72, 64}, {33, 48, 3},  {5, 257, 7}};
  for (const RouterIsa isa : {RouterIsa::avx2_fma}) {
    if (!router_isa_supported(isa)) {
      WARN("variant " << static_cast<int>(isa) << " not supported by this host: not checked here");
      continue;
    }
    for (const Case& c : cases) {
      const std::size_t stride = c.rows + 3;
      std::vector<float> wt(std::size_t(c.rows) * c.experts), x(std::size_t(c.tokens) * stride);
      fill(wt, 3 + c.rows);
      fill(x, 4 + c.experts);
      INFO("isa " << static_cast<int>(isa) << ", rows " << c.rows << ", experts " << c.experts << ", tokens "
                  << c.tokens);
      CHECK(same_bits(run(isa, c, wt, x, stride), run(RouterIsa::scalar, c, wt, x, stride)));
    }
  }
  CHECK(router_isa_supported(router_isa_best()));
}
