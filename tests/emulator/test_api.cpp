// The descriptor API: capabilities, binding, backend fallback, custom
// routing, caller activations and the descriptors it writes.
#include <memory>
#include <stdexcept>

#include <catch2/catch.hpp>

#include "descriptors/api/moe_api.h"
#include "descriptors/api/router.h"
#include "descriptors/emulator/synthetic.h"
#include "descriptors/format/moe_descriptor.h"
#include "descriptors/plan/routing.h"
#include "tests/emulator/scenario_files.h"
#include "workloads/config/loader.h"

namespace tdmsim::api {
namespace {

using emu::test::TempDir;
using emu::test::write_tiny_scenario;

config::ResolvedScenario tiny(const TempDir& dir, const std::string& extra = "") {
  const config::Loader loader(config::default_roots());
  return loader.resolve_scenario(write_tiny_scenario(dir.path(), 10, extra));
}

struct Bound {
  std::shared_ptr<Context> context = std::make_shared<Context>();
  std::shared_ptr<Stream> stream = std::make_shared<Stream>(context, "s0");
};

}  // namespace

TEST_CASE("capabilities report what this build runs", "[api]") {
  const Context ctx;
  const Capabilities c = ctx.capabilities();
  REQUIRE(c.backends == std::vector<Backend>{Backend::emulate});
  CHECK(ctx.available(Backend::emulate));
  CHECK_FALSE(ctx.available(Backend::simulate));
  CHECK_FALSE(ctx.available(Backend::gpu));
  CHECK(c.dtypes.size() == 9);  // incl. fp8_e4m3_fnuz and int4
  CHECK(c.quant_schemes.size() == 7);  // incl. per_1x32, group_32, group_128
  CHECK(c.policies.size() == 5);  // incl. dynamic
  CHECK(c.max_experts == format::kMoeMaxExperts);
  CHECK(c.descriptor_version == format::kMoeVersion);
  CHECK(c.custom_routing);
  CHECK(c.caller_activations);
}

TEST_CASE("forward runs the emulator on caller activations", "[api]") {
  const TempDir dir("api");
  MoeDescriptor desc(tiny(dir), TdmPolicy::load_balance);
  std::vector<float> x(7 * 64);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.01f * static_cast<float>(i % 37) - 0.2f;
  SECTION("unbound") {
    const auto r = desc.forward(x, 7);
    CHECK(r.status == Status::not_bound);
    CHECK_FALSE(r.message.empty());
  }
  SECTION("bound") {
    Bound b;
    desc.bind(b.stream);
    const auto r = desc.forward(x, 7);
    REQUIRE(r.ok());
    CHECK(r.ran == Backend::emulate);
    CHECK_FALSE(r.fell_back);
    CHECK(r.output.y.size() == x.size());
    CHECK(r.output.y == emu::emulate(r.plan, x).y);
    CHECK(r.plan.shape.tokens == 7);
    CHECK(r.descriptors.size() == (r.plan.kernel.stages == 1 ? 1u : 2u));
    CHECK(format::decode_moe(r.descriptors[0]).ok());
    CHECK(b.stream->launches() == 1);
    // The router ran on these activations: seeded ones route differently.
    const auto seeded = desc.forward_seeded(7);
    REQUIRE(seeded.ok());
    CHECK(seeded.output.y != r.output.y);
    CHECK(b.stream->launches() == 2);
  }
  SECTION("wrong size") {
    Bound b;
    desc.bind(b.stream);
    const auto r = desc.forward(std::span(x).first(100), 7);
    CHECK(r.status == Status::invalid_argument);
    CHECK(b.stream->launches() == 0);
  }
}

TEST_CASE("router on given activations equals the plan's router on seeded ones", "[api]") {
  const TempDir dir("api-router");
  const auto scenario = tiny(dir);
  const auto& model = scenario.model.spec;
  const auto x = emu::seeded_activations(5, 10, model.hidden_size);
  const auto mine = route_activations(model, x, 10, 5);
  const auto plans = plan::route_router(model, 10, 5);
  CHECK(mine.ids == plans.ids);
  CHECK(mine.weights == plans.weights);
  // And forward_seeded reproduces build_plan end to end.
  MoeDescriptor desc(scenario, TdmPolicy::load_balance);
  Bound b;
  desc.bind(b.stream);
  const auto r = desc.forward_seeded(10);
  REQUIRE(r.ok());
  const auto built = plan::build_plan(scenario);
  CHECK(r.plan.layout.sorted_rows == built.layout.sorted_rows);
  CHECK(r.output.y == emu::emulate(built).y);
}

TEST_CASE("an unavailable backend falls back to emulate only when allowed", "[api]") {
  const TempDir dir("api-fallback");
  MoeDescriptor desc(tiny(dir), TdmPolicy::low_latency);
  Bound b;
  desc.bind(b.stream);
  ForwardOptions opts;
  opts.backend = Backend::simulate;
  const auto fell = desc.forward_seeded(3, opts);
  REQUIRE(fell.ok());
  CHECK(fell.requested == Backend::simulate);
  CHECK(fell.ran == Backend::emulate);
  CHECK(fell.fell_back);
  CHECK_THAT(fell.message, Catch::Contains("fell back to emulate"));
  opts.backend = Backend::gpu;
  opts.allow_fallback = false;
  const auto refused = desc.forward_seeded(3, opts);
  CHECK(refused.status == Status::backend_unavailable);
  CHECK_THAT(refused.message, Catch::Contains("gpu is not available"));
  CHECK(refused.output.y.empty());
  CHECK(b.stream->launches() == 1);
}

TEST_CASE("an installed backend runs instead of the fallback", "[api]") {
  const TempDir dir("api-install");
  MoeDescriptor desc(tiny(dir), TdmPolicy::load_balance);
  auto ctx = std::make_shared<Context>();
  bool called = false;
  ctx->install(Backend::simulate, [&called](const plan::MoePlan& p, std::span<const float>,
                                            const ForwardOptions&) {
    called = true;
    return BackendOutput{std::vector<float>(std::size_t{p.shape.tokens} * p.shape.hidden, 1.0f),
                         std::nullopt};
  });
  CHECK(ctx->capabilities().backends.size() == 2);
  desc.bind(std::make_shared<Stream>(ctx, "sim"));
  ForwardOptions opts;
  opts.backend = Backend::simulate;
  const auto r = desc.forward_seeded(2, opts);
  REQUIRE(r.ok());
  CHECK(called);
  CHECK(r.ran == Backend::simulate);
  CHECK_FALSE(r.fell_back);
  CHECK(r.output.y[0] == 1.0f);
}

TEST_CASE("custom routing callbacks", "[api]") {
  const TempDir dir("api-custom");
  MoeDescriptor desc(tiny(dir), TdmPolicy::custom);
  Bound b;
  desc.bind(b.stream);
  SECTION("custom policy needs a callback") {
    CHECK(desc.forward_seeded(4).status == Status::routing_missing);
  }
  SECTION("the callback's routing is what runs") {
    std::vector<float> seen;
    desc.set_routing([&seen](std::uint32_t t, std::span<const float> row) {
      seen.push_back(row[0]);
      return TokenRoute{{3, t % 2 == 0 ? 5u : 6u}, {0.7f, 0.3f}};
    });
    std::vector<float> x(4 * 64, 0.5f);
    x[2 * 64] = -1.0f;
    const auto r = desc.forward(x, 4);
    REQUIRE(r.ok());
    CHECK(seen == std::vector<float>{0.5f, 0.5f, -1.0f, 0.5f});
    CHECK(r.plan.routing.ids == std::vector<std::uint32_t>{3, 5, 3, 6, 3, 5, 3, 6});
    CHECK(r.plan.layout.expert_rows[3] == 4);
    CHECK(r.plan.layout.expert_rows[0] == 0);
    CHECK(r.plan.layout.expert_rows[8] == 4);  // the shared expert
  }
  SECTION("bad callback output is an invalid_argument naming the token") {
    desc.set_routing([](std::uint32_t t, std::span<const float>) {
      return t == 2 ? TokenRoute{{1, 1}, {0.5f, 0.5f}} : TokenRoute{{0, 1}, {0.5f, 0.5f}};
    });
    const auto r = desc.forward_seeded(4);
    CHECK(r.status == Status::invalid_argument);
    CHECK_THAT(r.message, Catch::Contains("token 2") && Catch::Contains("picked twice"));
    desc.set_routing([](std::uint32_t, std::span<const float>) {
      return TokenRoute{{0, 99}, {0.5f, 0.5f}};
    });
    CHECK_THAT(desc.forward_seeded(4).message, Catch::Contains("expert 99 does not exist"));
    desc.set_routing([](std::uint32_t, std::span<const float>) { return TokenRoute{{0}, {1.0f}}; });
    CHECK_THAT(desc.forward_seeded(4).message, Catch::Contains("top_k = 2"));
  }
  SECTION("a callback also overrides a non-custom policy's routing") {
    MoeDescriptor lb(tiny(dir), TdmPolicy::load_balance);
    lb.bind(b.stream);
    lb.set_routing([](std::uint32_t, std::span<const float>) {
      return TokenRoute{{7, 0}, {0.5f, 0.5f}};
    });
    const auto r = lb.forward_seeded(3);
    REQUIRE(r.ok());
    CHECK(r.plan.layout.expert_rows[7] == 3);
  }
}

}  // namespace tdmsim::api
