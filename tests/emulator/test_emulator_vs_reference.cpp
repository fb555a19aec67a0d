// The emulator against the dense fp64 reference on 260 random shapes and
// routing draws (plus forced degenerate ones), with the per-dtype tolerances
// of docs/emulator.md on the relative Frobenius error of y.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>

#include <catch2/catch.hpp>
#include <fmt/core.h>

#include "descriptors/emulator/emulator.h"
#include "descriptors/emulator/synthetic.h"
#include "tests/emulator/dense_reference.h"
#include "tests/emulator/test_support.h"
#include "workloads/config/schema.h"

namespace tdmsim::emu::test {
namespace {

struct Numerics {
  DType dtype;
  Quant quant;
  double tolerance;  // relative Frobenius error of y; reasoning in docs/emulator.md
  std::optional<DType> weight = std::nullopt;  // weight dtype of a mixed pair (unset: dtype)
};

// Keep in sync with the table in docs/emulator.md ("Tolerances").
const Numerics kNumerics[] = {
    {DType::fp32, Quant::none, 1e-5},
    {DType::bf16, Quant::none, 1e-2},
    {DType::fp16, Quant::none, 2e-3},
    {DType::fp8_e4m3, Quant::per_tensor, 8e-2},
    {DType::fp8_e4m3, Quant::per_token, 6e-2},
    {DType::fp8_e4m3, Quant::block_128, 6e-2},
    {DType::fp8_e5m2, Quant::per_tensor, 1.6e-1},
    {DType::fp8_e5m2, Quant::per_token, 1.2e-1},
    {DType::fp8_e5m2, Quant::block_128, 1.2e-1},
    {DType::int8, Quant::per_tensor, 1e-1},
    {DType::int8, Quant::per_token, 3e-2},
    {DType::int8, Quant::block_128, 3e-2},
    {DType::mxfp4, Quant::none, 3.5e-1},
    // The AITER formats (docs/yaml-reference.md "Formats").
    {DType::fp8_e4m3_fnuz, Quant::per_tensor, 8e-2},
    {DType::fp8_e4m3_fnuz, Quant::per_token, 6e-2},
    {DType::fp8_e4m3_fnuz, Quant::block_128, 6e-2},
    {DType::fp8_e4m3, Quant::per_1x32, 1e-1},                   // MXFP8
    {DType::mxfp4, Quant::per_1x32, 3.5e-1},                    // MXFP4, fp4 x fp4
    {DType::bf16, Quant::per_1x32, 1e-2, DType::mxfp4},         // a16w4
    {DType::fp8_e4m3, Quant::per_1x32, 1e-1, DType::mxfp4},     // a8w4
    {DType::bf16, Quant::per_token, 1e-2, DType::int4},         // bf16 x int4
    {DType::bf16, Quant::group_32, 1e-2, DType::int4},
    {DType::bf16, Quant::group_128, 1e-2, DType::int4},
    {DType::fp8_e4m3, Quant::per_token, 6e-2, DType::int4},     // AITER's int4 a8w4
};
constexpr std::size_t kNumericsCount = sizeof(kNumerics) / sizeof(kNumerics[0]);

struct Case {
  ShapeSpec spec;
  RoutingMode mode = RoutingMode::uniform;
  std::uint32_t block_m = 16;
  std::uint32_t stages = 2;
  std::uint64_t seed = 1;
  const Numerics* numerics = nullptr;

  std::string describe() const {
    const auto& s = spec;
    return fmt::format(
        "T={} H={} I={} E={} ep={} top_k={} shared={}x{} {}/{} act={} limit={} woi={} "
        "mode={} block_m={} stages={} seed={}",
        s.tokens, s.hidden, s.inter, s.experts, s.ep, s.top_k, s.shared_experts, s.shared_inter,
        config::enum_name(s.dtype), config::enum_name(s.quant), config::enum_name(s.activation),
        s.activation_limit, s.weight_on_input, static_cast<int>(mode), block_m, stages, seed);
  }
};

std::uint32_t pick(std::mt19937_64& rng, std::initializer_list<std::uint32_t> v) {
  return *(v.begin() + std::uniform_int_distribution<std::size_t>(0, v.size() - 1)(rng));
}

// Sizes are mostly small multiples of 16, sometimes not, sometimes beyond one
// 128-column chunk (several chunks and ragged 128-blocks).
std::uint32_t dim(std::mt19937_64& rng) {
  return pick(rng, {16, 32, 48, 64, 96, 128, 24, 40, 56, 100, 8, 144, 200, 136});
}

Case random_case(std::size_t i, std::mt19937_64& rng) {
  Case c;
  ShapeSpec& s = c.spec;
  c.numerics = &kNumerics[i % kNumericsCount];
  s.dtype = c.numerics->dtype;
  s.weight_dtype = c.numerics->weight;
  s.quant = c.numerics->quant;
  s.tokens = std::uniform_int_distribution<std::uint32_t>(1, 3)(rng) == 1
                 ? std::uniform_int_distribution<std::uint32_t>(1, 300)(rng)
                 : std::uniform_int_distribution<std::uint32_t>(1, 60)(rng);
  s.hidden = dim(rng);
  s.inter = dim(rng);
  s.experts = std::uniform_int_distribution<std::uint32_t>(1, 64)(rng);
  s.top_k = std::uniform_int_distribution<std::uint32_t>(1, std::min(8u, s.experts))(rng);
  if (s.experts % 2 == 0 && rng() % 5 == 0) s.ep = 2;
  if (rng() % 4 == 0) {
    s.shared_experts = 1 + static_cast<std::uint32_t>(rng() % 2);
    s.shared_inter = pick(rng, {s.inter, 2 * s.inter, s.inter / 2 + 3, s.inter + 16});
  }
  s.activation = static_cast<Activation>(rng() % 3);
  if (s.activation == Activation::swiglu_oai) s.activation_limit = rng() % 2 == 0 ? 7.0 : 0.0;
  s.weight_on_input = rng() % 8 == 0;
  c.mode = static_cast<RoutingMode>(rng() % 3);
  if (c.mode == RoutingMode::skip_first && s.experts <= s.top_k) c.mode = RoutingMode::uniform;
  c.block_m = pick(rng, {16, 32, 64});
  c.stages = 1 + static_cast<std::uint32_t>(rng() % 2);
  c.seed = rng();
  return c;
}

// The degenerate shapes the issue names, forced rather than left to chance.
std::vector<Case> degenerate_cases() {
  std::vector<Case> out;
  const auto add = [&out](auto edit) {
    for (std::size_t n = 0; n < kNumericsCount; n += 4) {  // a few dtypes each
      Case c;
      c.numerics = &kNumerics[n];
      c.spec.dtype = c.numerics->dtype;
      c.spec.weight_dtype = c.numerics->weight;
      c.spec.quant = c.numerics->quant;
      c.seed = 1000 + out.size();
      edit(c);
      out.push_back(c);
    }
  };
  add([](Case& c) { c.spec.tokens = 1; });                                          // T = 1
  add([](Case& c) { c.spec.top_k = 1; c.spec.tokens = 37; });                       // top-1
  add([](Case& c) { c.spec.experts = 1; c.spec.top_k = 1; c.spec.tokens = 50; });   // E = 1
  add([](Case& c) { c.mode = RoutingMode::one_expert; c.spec.tokens = 70; });      // one expert
  add([](Case& c) { c.mode = RoutingMode::skip_first; c.spec.tokens = 9; });       // empty expert
  add([](Case& c) { c.spec.tokens = 33; c.spec.hidden = 40; c.spec.inter = 24; c.block_m = 32; });
  add([](Case& c) { c.spec.tokens = 45; c.block_m = 48; });  // AITER's blocks of a multiple of 16
  add([](Case& c) { c.spec.tokens = 90; c.block_m = 80; c.stages = 1; });
  add([](Case& c) {  // shared experts (two chunks each), DeepSeek-like
    c.spec.shared_experts = 2;
    c.spec.shared_inter = 56;
    c.spec.tokens = 21;
  });
  add([](Case& c) {  // Llama-4-like: top-1, weight on the input, one shared expert
    c.spec.top_k = 1;
    c.spec.weight_on_input = true;
    c.spec.shared_experts = 1;
    c.spec.shared_inter = 32;
    c.spec.tokens = 19;
  });
  add([](Case& c) { c.spec.experts = 8; c.spec.ep = 4; c.spec.tokens = 17; });    // mostly remote
  add([](Case& c) {  // gpt-oss clamped SwiGLU with its limit
    c.spec.activation = Activation::swiglu_oai;
    c.spec.activation_limit = 7.0;
    c.spec.tokens = 12;
    c.stages = 1;
  });
  return out;
}

}  // namespace

TEST_CASE("emulator matches the dense fp64 reference on random shapes", "[emulator][reference]") {
  std::mt19937_64 rng(20261129);
  std::vector<Case> cases = degenerate_cases();
  const std::size_t random_count = 360;
  for (std::size_t i = 0; i < random_count; ++i) cases.push_back(random_case(i, rng));
  REQUIRE(cases.size() >= 200);

  std::map<std::string, double> worst;  // per dtype/quant, for calibrating the table
  for (const Case& c : cases) {
    const plan::LayerShape shape = make_shape(c.spec);
    std::mt19937_64 routing_rng(c.seed);
    const plan::Routing routing = random_routing(shape, c.mode, routing_rng);
    const plan::MoePlan plan = make_plan(shape, routing, c.block_m, c.stages, c.seed);
    const auto x = seeded_activations(c.seed, shape.tokens, shape.hidden);
    const EmulatorResult got = emulate(plan, x);
    const std::vector<double> want = dense_reference(shape, c.seed, plan.fused, x);
    const double err = rel_error(got.y, want);
    const std::string key = fmt::format(
        "{}x{}/{}", config::enum_name(c.spec.dtype),
        config::enum_name(c.spec.weight_dtype.value_or(c.spec.dtype)), config::enum_name(c.spec.quant));
    worst[key] = std::max(worst[key], err);
    INFO(c.describe() << " rel_error=" << err);
    CHECK(err <= c.numerics->tolerance);
  }
  if (std::getenv("TDMSIM_EMU_REPORT") != nullptr) {
    for (const auto& [key, err] : worst) std::printf("worst %-22s %.3e\n", key.c_str(), err);
  }
}

}  // namespace tdmsim::emu::test
