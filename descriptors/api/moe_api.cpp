// MoeDescriptor: from a scenario and a policy to a plan, its MoE descriptors
// and a backend run.
#include "descriptors/api/moe_api.h"

#include <exception>
#include <stdexcept>

#include <fmt/core.h>

#include "descriptors/api/router.h"
#include "descriptors/emulator/synthetic.h"
#include "descriptors/format/descriptor_error.h"
#include "descriptors/format/moe_builder.h"
#include "descriptors/plan/routing.h"

namespace tdmsim::api {
namespace {

// Where the descriptors place the layer's buffers: any 256-byte aligned base
// works, the emulator never dereferences these addresses.
constexpr std::uint64_t kDeviceBase = 0x100000000ull;

ForwardResult failure(ForwardResult r, Status s, std::string message) {
  r.status = s;
  r.message = std::move(message);
  return r;
}

// The plan build_plan would make for `tokens` tokens, with `routing`.
plan::MoePlan make_plan(const config::ResolvedScenario& scenario, plan::Routing routing) {
  plan::MoePlan p;
  p.shape = plan::layer_shape(scenario);
  p.seed = scenario.scenario.spec.seed;
  p.routing = std::move(routing);
  p.fused = plan::fuse_routing(p.shape, p.routing);
  p.kernel = plan::choose_kernel(p.shape, scenario.scenario.spec.kernel, scenario.machine.spec,
                                 p.fused);
  p.layout = plan::sort_into_blocks(p.shape, p.fused, p.kernel.block_m);
  if (p.kernel.stages == 1) {
    p.stage1 = plan::tile_jobs(p.shape, p.layout, p.kernel, plan::Stage::fused);
  } else {
    p.stage1 = plan::tile_jobs(p.shape, p.layout, p.kernel, plan::Stage::gate_up);
    p.stage2 = plan::tile_jobs(p.shape, p.layout, p.kernel, plan::Stage::down);
  }
  return p;
}

}  // namespace

MoeDescriptor::MoeDescriptor(config::ResolvedScenario scenario, TdmPolicy policy)
    : scenario_(std::move(scenario)), policy_(policy) {}

ForwardResult MoeDescriptor::forward_seeded(std::uint32_t tokens, const ForwardOptions& options) {
  const auto x = emu::seeded_activations(scenario_.scenario.spec.seed, tokens,
                                         scenario_.model.spec.hidden_size);
  return forward(x, tokens, options);
}

ForwardResult MoeDescriptor::forward(std::span<const float> x, std::uint32_t tokens,
                                     const ForwardOptions& options) {
  ForwardResult r;
  r.requested = options.backend;
  if (!stream_) return failure(std::move(r), Status::not_bound, "descriptor is not bound to a stream");
  const ModelSpec& model = scenario_.model.spec;
  if (tokens == 0 || x.size() != std::size_t{tokens} * model.hidden_size) {
    return failure(std::move(r), Status::invalid_argument,
                   fmt::format("x has {} values, expected tokens ({}) x hidden ({})", x.size(),
                               tokens, model.hidden_size));
  }
  if (policy_ == TdmPolicy::custom && !routing_) {
    return failure(std::move(r), Status::routing_missing,
                   "policy custom needs a routing callback (set_routing)");
  }

  // Backend selection and the documented fallback.
  const Context& ctx = stream_->context();
  r.ran = options.backend;
  if (!ctx.available(options.backend)) {
    if (!options.allow_fallback) {
      return failure(std::move(r), Status::backend_unavailable,
                     fmt::format("backend {} is not available in this build (available: "
                                 "emulate); allow fallback to run emulate instead",
                                 backend_name(options.backend)));
    }
    r.ran = Backend::emulate;
    r.fell_back = true;
    r.message = fmt::format("backend {} is not available; fell back to emulate",
                            backend_name(options.backend));
  }

  config::ResolvedScenario sc = scenario_;
  sc.scenario.spec.tokens = tokens;
  try {
    plan::Routing routing;
    if (routing_) routing = route_callback(routing_, model, x, tokens);
    else if (sc.scenario.spec.routing.source == RoutingSource::router)
      routing = route_activations(model, x, tokens, sc.scenario.spec.seed);
    else routing = plan::route(sc);  // synthetic sources and traces do not look at x
    r.plan = make_plan(sc, std::move(routing));
  } catch (const std::exception& e) {
    return failure(std::move(r), Status::invalid_argument, e.what());
  }

  // What the driver writes to memory for the hardware unit: the layer's MoE
  // descriptors, encoded, and read back as the unit would (decode validates).
  try {
    const auto map = format::packed_address_map(r.plan, kDeviceBase);
    const std::uint32_t custom_id = policy_ == TdmPolicy::custom ? 1 : 0;
    for (const auto& d : format::make_moe_descriptors(r.plan, policy_, map, {}, 1, custom_id)) {
      auto bytes = format::encode(d);
      (void)format::decode_moe(bytes).value();
      r.descriptors.push_back(std::move(bytes));
    }
  } catch (const std::exception& e) {
    return failure(std::move(r), Status::descriptor_error, e.what());
  }

  try {
    r.output = (*ctx.executor(r.ran))(r.plan, x, options);
  } catch (const std::exception& e) {
    return failure(std::move(r), Status::backend_failed,
                   fmt::format("{} failed: {}", backend_name(r.ran), e.what()));
  }
  stream_->record_launch();
  return r;
}

}  // namespace tdmsim::api
