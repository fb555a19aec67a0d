// The emulator on capped routings (routing.capacity_factor), bit-exact:
// a dropped pick adds nothing to its token's output, a token that lost no
// pick comes out exactly as without the capacity, and a rerouted pick
// computes exactly what picking the rerouted expert with its gate weight in
// the first place computes.
#include <cstring>
#include <vector>

#include <catch2/catch.hpp>

#include "descriptors/emulator/emulator.h"
#include "descriptors/plan/capacity.h"
#include "tests/emulator/test_support.h"
#include "tests/plan/plan_test_util.h"

namespace tdmsim::emu {
namespace {

// A skewed layer whose kernel the scenario fixes, so capping the routing
// cannot change the kernel (and with it the emulator's arithmetic).
config::ResolvedScenario skewed(DType dtype, std::uint32_t shared) {
  ModelSpec model = plan::test::make_model(16, 4, 128, 64);
  if (shared > 0) {
    model.shared_experts = shared;
    model.shared_intermediate_size = 64;
  }
  config::ResolvedScenario sc = plan::test::make_scenario(model, 80, 11, RoutingSource::zipf);
  ScenarioSpec& s = sc.scenario.spec;
  s.routing.zipf_s = 1.5;
  s.dtype = dtype;
  s.kernel.block_m = 16;
  s.kernel.stages = 2;
  s.kernel.split_k = 1;
  return sc;
}

const float* row(const std::vector<float>& m, std::size_t r, std::size_t h) { return m.data() + r * h; }

bool same_row(const float* a, const float* b, std::size_t h) {
  return std::memcmp(a, b, h * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("dropped picks add nothing to the output, bit for bit", "[emulator][capacity]") {
  const DType dtype = GENERATE(DType::fp32, DType::bf16);
  const std::uint32_t shared = GENERATE(0u, 1u);
  CAPTURE(config::enum_name(dtype), shared);
  config::ResolvedScenario sc = skewed(dtype, shared);
  const plan::MoePlan free = plan::build_plan(sc);
  sc.scenario.spec.routing.capacity_factor = CapacityFactor{0.75};
  const plan::MoePlan capped = plan::build_plan(sc);
  REQUIRE(capped.capacity.dropped > 0);
  REQUIRE(capped.kernel.block_m == free.kernel.block_m);
  REQUIRE(capped.kernel.stages == free.kernel.stages);

  const EmulatorResult a = emulate(free);
  const EmulatorResult b = emulate(capped);
  const std::size_t h = capped.shape.hidden, slots = capped.shape.slots();
  const std::uint32_t k = capped.shape.top_k;
  std::uint32_t fully_dropped = 0, with_drops = 0;
  for (std::size_t t = 0; t < capped.shape.tokens; ++t) {
    std::vector<float> expect(h, 0.0f);
    bool lost = false, all_lost = true;
    for (std::size_t j = 0; j < slots; ++j) {
      const std::size_t r = t * slots + j;
      const bool dropped = j < k && capped.routing.ids[t * k + j] == plan::kDroppedPick;
      lost = lost || dropped;
      all_lost = all_lost && dropped;
      if (dropped) {
        // Nothing computed for it ...
        CHECK(std::all_of(row(b.expert_out, r, h), row(b.expert_out, r, h) + h,
                          [](float v) { return v == 0.0f; }));
        continue;
      }
      // ... and a kept pick computes exactly what it did without the capacity.
      CHECK(same_row(row(b.expert_out, r, h), row(a.expert_out, r, h), h));
      // The combine's order: slot by slot from zero, the dropped ones left out.
      for (std::size_t i = 0; i < h; ++i) expect[i] += row(a.expert_out, r, h)[i];
    }
    CHECK(same_row(row(b.y, t, h), expect.data(), h));
    if (!lost) CHECK(same_row(row(b.y, t, h), row(a.y, t, h), h));
    if (all_lost) {
      ++fully_dropped;
      CHECK(std::all_of(row(b.y, t, h), row(b.y, t, h) + h, [](float v) { return v == 0.0f; }));
    }
    with_drops += lost ? 1 : 0;
  }
  CHECK(with_drops == capped.capacity.tokens_with_drops);
  if (shared == 0) CHECK(fully_dropped == capped.capacity.tokens_dropped);
}

TEST_CASE("a rerouted pick computes the rerouted expert with its gate weight, bit for bit",
          "[emulator][capacity]") {
  const DType dtype = GENERATE(DType::fp32, DType::bf16);
  CAPTURE(config::enum_name(dtype));
  config::ResolvedScenario sc = skewed(dtype, 0);
  const plan::MoePlan free = plan::build_plan(sc);
  sc.scenario.spec.routing.capacity_factor = CapacityFactor{1.0};
  sc.scenario.spec.routing.overflow = CapacityOverflow::reroute;
  const plan::MoePlan capped = plan::build_plan(sc);
  REQUIRE(capped.capacity.rerouted > 0);
  const EmulatorResult b = emulate(capped);
  const std::size_t h = capped.shape.hidden;
  const std::uint32_t k = capped.shape.top_k;

  // The free routing with only token t's picks replaced by its capped ones:
  // a layer in which token t chose the rerouted experts with their weights
  // from the start (every other token, and so every block, differs).
  std::uint64_t checked = 0;
  for (std::uint32_t t = 0; t < capped.shape.tokens; ++t) {
    bool moved = false;
    for (std::uint32_t j = 0; j < k; ++j) {
      const auto e = capped.routing.ids[t * k + j];
      moved = moved || (e != plan::kDroppedPick && e != free.routing.ids[t * k + j]);
    }
    if (!moved) continue;
    plan::Routing probe = free.routing;
    for (std::uint32_t j = 0; j < k; ++j) {
      probe.ids[t * k + j] = capped.routing.ids[t * k + j];
      probe.weights[t * k + j] = capped.routing.weights[t * k + j];
    }
    const plan::MoePlan p =
        test::make_plan(capped.shape, probe, capped.kernel.block_m, capped.kernel.stages, capped.seed);
    const EmulatorResult c = emulate(p);
    CHECK(same_row(row(b.y, t, h), row(c.y, t, h), h));
    for (std::uint32_t j = 0; j < k; ++j) {
      CHECK(same_row(row(b.expert_out, t * k + j, h), row(c.expert_out, t * k + j, h), h));
    }
    if (++checked == 6) break;  // a few tokens: each probe is a whole layer
  }
  CHECK(checked > 0);
}

}  // namespace tdmsim::emu
