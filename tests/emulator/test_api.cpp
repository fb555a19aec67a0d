// The descriptor API: capabilities, binding, backend fallback, custom
// routing, caller activations and the descriptors it writes.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>

#include <catch2/catch.hpp>

#include "descriptors/api/moe_api.h"
#include "descriptors/api/router.h"
#include "descriptors/emulator/synthetic.h"
#include "descriptors/format/moe_descriptor.h"
#include "descriptors/plan/routing.h"
#include "descriptors/plan/synthetic_tensors.h"
#include "tests/emulator/dense_reference.h"
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

// The scenario's layer run by the API on its seeded activations.
ForwardResult forward_seeded(const config::ResolvedScenario& sc, std::uint32_t tokens) {
  MoeDescriptor desc(sc, TdmPolicy::load_balance);
  Bound b;
  desc.bind(b.stream);
  return desc.forward_seeded(tokens);
}

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

TEST_CASE("the API's plan chooses the kernel as build_plan does (kernel.heuristic)", "[api]") {
  const TempDir dir("api-kernel");
  const auto sc = tiny(dir, "kernel: {heuristic: aiter}\n");
  const auto r = forward_seeded(sc, 10);
  REQUIRE(r.ok());
  const plan::MoePlan p = plan::build_plan(sc);
  CHECK(r.plan.kernel.source.chosen_by == "aiter heuristic");
  CHECK(r.plan.kernel.source.chosen_by == p.kernel.source.chosen_by);
  CHECK(r.plan.kernel.block_m == p.kernel.block_m);
  CHECK(r.plan.kernel.stages == p.kernel.stages);
  CHECK(r.plan.kernel.reason == p.kernel.reason);
}

TEST_CASE("the API's plan takes a kernel.config row, as build_plan does", "[api]") {
  // tiny.yaml on MI300X: H 64, I 96, 8 experts top-2 + 1 shared (expert 9,
  // topk 3), bf16; 10 tokens pad to 16. The row sets block_m 64, which the
  // project's rule would not pick for 10 tokens.
  const TempDir dir("api-config");
  std::ofstream(dir.path() / "k.csv")
      << "cu_num,token,model_dim,inter_dim,expert,topk,act_type,q_dtype_a,q_dtype_w,q_type,block_m,ksplit,us1,"
         "tile1,us2,tile2,us,run_1stage\n"
      << "304,16,64,96,9,3,ActivationType.Silu,torch.bfloat16,torch.bfloat16,QuantType.No,64,0,1,,1,,2,0\n";
  const auto sc = tiny(dir, "kernel: {config: k.csv}\n");
  const auto r = forward_seeded(sc, 10);
  REQUIRE(r.ok());
  CHECK(r.plan.kernel.source.chosen_by == "kernel.config row");
  CHECK(r.plan.kernel.source.config_line == 2);
  CHECK(r.plan.kernel.block_m == 64);
  CHECK(r.plan.kernel.reason == plan::build_plan(sc).kernel.reason);
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
    BackendOutput out;
    out.y.assign(std::size_t{p.shape.tokens} * p.shape.hidden, 1.0f);
    return out;
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

namespace tdmsim::api {
namespace {

// Random fp32 weights for every routed expert, in the emulator's layout.
struct RandomWeights {
  std::vector<float> w13, w2;
  emu::ExpertWeights view() const { return {w13.data(), w2.data()}; }
};

RandomWeights random_weights(const plan::LayerShape& s, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-0.25f, 0.25f);
  RandomWeights w;
  w.w13.resize(std::size_t{s.experts_local} * 2 * s.inter * s.hidden);
  w.w2.resize(std::size_t{s.experts_local} * s.hidden * s.inter);
  for (float& v : w.w13) v = u(rng);
  for (float& v : w.w2) v = u(rng);
  return w;
}

// The tiny scenario in another format (replaces its `dtype: bf16` line).
config::ResolvedScenario tiny_in(const TempDir& dir, const std::string& format) {
  const auto path = emu::test::write_tiny_scenario(dir.path(), 10);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto at = text.find("dtype: bf16\n");
  REQUIRE(at != std::string::npos);
  text.replace(at, 12, format);
  std::ofstream(path) << text;
  return config::Loader(config::default_roots()).resolve_scenario(path.string());
}

double rel_frobenius(const std::vector<float>& y, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    num += (y[i] - ref[i]) * (y[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / den);
}

}  // namespace

TEST_CASE("caller expert weights give the emulator's result for those weights", "[api]") {
  // bf16; fp8 per_tensor, whose static weight scale comes from each given
  // matrix's absolute maximum.
  const auto format = GENERATE(std::string("dtype: bf16\n"),
                               std::string("dtype: fp8_e4m3\nquant: per_tensor\n"));
  const double tolerance = format.find("fp8") != std::string::npos ? 8e-2 : 1e-2;  // docs/emulator.md
  const TempDir dir("api-weights");
  MoeDescriptor desc(tiny_in(dir, format), TdmPolicy::load_balance);
  Bound b;
  desc.bind(b.stream);
  const auto x = emu::seeded_activations(11, 9, 64);
  const auto seeded = desc.forward(x, 9);
  REQUIRE(seeded.ok());
  const RandomWeights w = random_weights(seeded.plan.shape, 3);
  const emu::ExpertWeights view = w.view();
  ForwardOptions opts;
  opts.weights = &view;
  const auto mine = desc.forward(x, 9, opts);
  REQUIRE(mine.ok());
  CHECK(mine.plan.routing.ids == seeded.plan.routing.ids);  // weights do not route
  CHECK(mine.output.y != seeded.output.y);
  // The emulator run directly on the same plan and weights: bit for bit.
  emu::EmulatorOptions eo;
  eo.weights = &view;
  CHECK(mine.output.y == emu::emulate(mine.plan, x, eo).y);
  // And the dense fp64 reference on those weights, within the format's tolerance.
  const auto ref = emu::test::dense_reference(mine.plan.shape, mine.plan.seed, mine.plan.fused, x, &view);
  CHECK(rel_frobenius(mine.output.y, ref) < tolerance);
  CHECK(rel_frobenius(seeded.output.y, ref) > 10 * tolerance);  // other weights, other output
}

TEST_CASE("changing one expert's weights changes only the tokens routed to it", "[api]") {
  const TempDir dir("api-one-expert");
  MoeDescriptor desc(tiny(dir), TdmPolicy::load_balance);
  Bound b;
  desc.bind(b.stream);
  const auto x = emu::seeded_activations(12, 16, 64);
  const auto first = desc.forward(x, 16);
  REQUIRE(first.ok());
  const auto& shape = first.plan.shape;
  RandomWeights w = random_weights(shape, 4);
  const emu::ExpertWeights view = w.view();
  ForwardOptions opts;
  opts.weights = &view;
  const auto before = desc.forward(x, 16, opts);
  REQUIRE(before.ok());
  const std::uint32_t e = before.plan.routing.ids[0];  // token 0's first expert
  const std::size_t down = std::size_t{shape.hidden} * shape.inter;
  for (std::size_t i = 0; i < down; ++i) w.w2[e * down + i] *= 1.5f;
  const auto after = desc.forward(x, 16, opts);
  REQUIRE(after.ok());
  std::uint32_t changed = 0, routed = 0;
  for (std::uint32_t t = 0; t < 16; ++t) {
    const bool to_e = before.plan.routing.ids[t * 2] == e || before.plan.routing.ids[t * 2 + 1] == e;
    const auto row = [&](const ForwardResult& r) {
      return std::vector<float>(r.output.y.begin() + t * 64, r.output.y.begin() + (t + 1) * 64);
    };
    routed += to_e;
    changed += row(before) != row(after);
    CHECK((row(before) != row(after)) == to_e);
  }
  CHECK(routed >= 1);
  CHECK(changed == routed);
}

TEST_CASE("caller router weights route the given activations", "[api]") {
  const TempDir dir("api-router-weights");
  const auto scenario = tiny(dir);
  MoeDescriptor desc(scenario, TdmPolicy::load_balance);
  Bound b;
  desc.bind(b.stream);
  const auto x = emu::seeded_activations(13, 6, 64);
  // W = the identity on the first 8 columns: token t's logits are x[t][0..8).
  std::vector<float> w(8 * 64, 0.0f);
  for (std::uint32_t e = 0; e < 8; ++e) w[e * 64 + e] = 1.0f;
  const RouterWeights router{w, {}, {}};
  ForwardOptions opts;
  opts.router = &router;
  const auto r = desc.forward(x, 6, opts);
  REQUIRE(r.ok());
  for (std::uint32_t t = 0; t < 6; ++t) {
    std::vector<std::uint32_t> order(8);
    std::iota(order.begin(), order.end(), 0u);
    std::sort(order.begin(), order.end(), [&](auto a, auto c) { return x[t * 64 + a] > x[t * 64 + c]; });
    CHECK(r.plan.routing.ids[t * 2] == order[0]);
    CHECK(r.plan.routing.ids[t * 2 + 1] == order[1]);
  }
  // The seed's router weights passed in route exactly as the scenario's router.
  const auto seeded = desc.forward(x, 6);
  REQUIRE(seeded.ok());
  const ModelSpec& m = scenario.model.spec;
  std::vector<float> sw(std::size_t{m.experts} * m.hidden_size);
  const float scale = plan::router_weight_scale(m.hidden_size);
  for (std::uint32_t e = 0; e < m.experts; ++e) {
    for (std::uint32_t h = 0; h < m.hidden_size; ++h) {
      sw[e * m.hidden_size + h] = plan::router_weight_value(5, m.hidden_size, scale, e, h);
    }
  }
  const RouterWeights same{sw, {}, {}};
  opts.router = &same;
  const auto again = desc.forward(x, 6, opts);
  REQUIRE(again.ok());
  CHECK(again.plan.routing.ids == seeded.plan.routing.ids);
  CHECK(again.output.y == seeded.output.y);
  // A wrongly sized router is refused.
  const RouterWeights short_w{std::span<const float>(sw).first(10), {}, {}};
  opts.router = &short_w;
  CHECK(desc.forward(x, 6, opts).status == Status::invalid_argument);
}

TEST_CASE("device weights need the gpu backend", "[api]") {
  const TempDir dir("api-device-weights");
  MoeDescriptor desc(tiny(dir), TdmPolicy::load_balance);
  Bound b;
  desc.bind(b.stream);
  float fake = 0;
  ForwardOptions opts;
  opts.device.w13 = &fake;  // never dereferenced: no gpu backend here
  const auto r = desc.forward_seeded(2, opts);
  CHECK(r.status == Status::invalid_argument);
  CHECK_THAT(r.message, Catch::Contains("device weights need the gpu backend"));
  CHECK(b.stream->launches() == 0);
}

TEST_CASE("an unavailable backend's reason is reported", "[api]") {
  const TempDir dir("api-reason");
  MoeDescriptor desc(tiny(dir), TdmPolicy::load_balance);
  auto ctx = std::make_shared<Context>();
  ctx->set_unavailable_reason(Backend::gpu, "no GPU backend library: test");
  desc.bind(std::make_shared<Stream>(ctx, "s"));
  ForwardOptions opts;
  opts.backend = Backend::gpu;
  const auto fell = desc.forward_seeded(2, opts);
  REQUIRE(fell.ok());
  CHECK(fell.message == "backend gpu is not available (no GPU backend library: test); fell back to emulate");
  opts.allow_fallback = false;
  CHECK_THAT(desc.forward_seeded(2, opts).message, Catch::Contains("(no GPU backend library: test)"));
}

}  // namespace tdmsim::api
