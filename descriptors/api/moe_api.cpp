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
#include "descriptors/plan/expert_parallel.h"
#include "descriptors/plan/routing.h"
#include "workloads/config/schema.h"

namespace tdmsim::api {
namespace {

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
  // The kernel as build_plan chooses it (a kernel.config row or AITER's rule
  // first), the layout and the jobs.
  plan::finish_plan(scenario, p);
  return p;
}

// The slot table in the order a slot-order callback gives. Throws
// std::invalid_argument unless it returns a permutation of the records.
std::vector<format::TimeSlot> ordered_slots(const SlotOrderCallback& order,
                                            const std::vector<format::TimeSlot>& slots) {
  std::vector<SlotView> view;
  view.reserve(slots.size());
  for (const auto& s : slots) {
    view.push_back({s.expert, s.block, s.valid_rows, static_cast<std::uint8_t>(s.stage)});
  }
  const std::vector<std::uint32_t> perm = order(view);
  if (perm.size() != slots.size()) {
    throw std::invalid_argument(fmt::format("slot-order callback returned {} indices for {} slots",
                                            perm.size(), slots.size()));
  }
  std::vector<bool> seen(slots.size(), false);
  std::vector<format::TimeSlot> out;
  out.reserve(slots.size());
  for (const std::uint32_t i : perm) {
    if (i >= slots.size() || seen[i]) {
      throw std::invalid_argument(fmt::format(
          "slot-order callback: index {} is {} (each of 0..{} exactly once)", i,
          i >= slots.size() ? "out of range" : "repeated", slots.size() - 1));
    }
    seen[i] = true;
    out.push_back(slots[i]);
  }
  return out;
}

}  // namespace

MoeDescriptor::MoeDescriptor(config::ResolvedScenario scenario, TdmPolicy policy)
    : scenario_(std::move(scenario)), policy_(policy) {}

void MoeDescriptor::set_device_base(std::uint64_t base) {
  if (base == 0 || base % 256 != 0) {
    throw std::invalid_argument(
        fmt::format("device base address {:#x} is not a nonzero multiple of 256", base));
  }
  device_base_ = base;
}

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
  if (policy_ == TdmPolicy::custom && !routing_ && !slot_order_) {
    return failure(std::move(r), Status::routing_missing,
                   "policy custom needs a routing callback (Python set_routing, C tdmsim_moe_set_custom_routing, C++ "
                   "set_routing or set_slot_order)");
  }
  if (slot_order_ && policy_ != TdmPolicy::custom) {
    return failure(std::move(r), Status::invalid_argument,
                   fmt::format("set_slot_order needs policy custom; this descriptor's is {}",
                               config::enum_name(policy_)));
  }
  if (slot_order_ && slot_order_id_ == 0) {
    return failure(std::move(r), Status::invalid_argument,
                   "set_slot_order needs a nonzero callback id (0 means the table's own order)");
  }

  // Backend selection and the documented fallback.
  const Context& ctx = stream_->context();
  r.ran = options.backend;
  if (!ctx.available(options.backend)) {
    const std::string reason = ctx.unavailable_reason(options.backend);
    const std::string why = reason.empty() ? "" : " (" + reason + ")";
    if (!options.allow_fallback) {
      std::string available;
      for (const Backend b : ctx.capabilities().backends) {
        available += (available.empty() ? "" : ", ") + std::string(backend_name(b));
      }
      return failure(std::move(r), Status::backend_unavailable,
                     fmt::format("backend {} is not available in this build{} (available: "
                                 "{}); allow fallback to run emulate instead",
                                 backend_name(options.backend), why, available));
    }
    r.ran = Backend::emulate;
    r.fell_back = true;
    r.message = fmt::format("backend {} is not available{}; fell back to emulate",
                            backend_name(options.backend), why);
  }
  // Device weights are read by the gpu backend alone: another backend needs
  // the host copy of each projection given on the device.
  const bool host_w13 = options.weights != nullptr && options.weights->w13 != nullptr;
  const bool host_w2 = options.weights != nullptr && options.weights->w2 != nullptr;
  if (r.ran != Backend::gpu &&
      ((options.device.w13 != nullptr && !host_w13) || (options.device.w2 != nullptr && !host_w2))) {
    return failure(std::move(r), Status::invalid_argument,
                   fmt::format("device weights need the gpu backend, and {} runs; give the host "
                               "weights too so that another backend can run",
                               backend_name(r.ran)));
  }

  config::ResolvedScenario sc = scenario_;
  sc.scenario.spec.tokens = tokens;
  try {
    plan::Routing routing;
    if (routing_) routing = route_callback(routing_, model, x, tokens);
    else if (options.router != nullptr) routing = route_activations(model, x, tokens, *options.router);
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
    const auto map = format::packed_address_map(r.plan, device_base_);
    const std::uint32_t custom_id =
        policy_ != TdmPolicy::custom ? 0 : (slot_order_ ? slot_order_id_ : 1);
    for (auto& d : format::make_moe_descriptors(r.plan, policy_, map, {}, 1, custom_id)) {
      if (slot_order_) {
        try {
          d.slots = ordered_slots(slot_order_, d.slots);
        } catch (const std::invalid_argument& e) {
          return failure(std::move(r), Status::invalid_argument, e.what());
        }
      }
      auto bytes = format::encode(d);
      (void)format::decode_moe(bytes).value();
      r.descriptors.push_back(std::move(bytes));
    }
  } catch (const std::exception& e) {
    return failure(std::move(r), Status::descriptor_error, e.what());
  }

  try {
    ForwardOptions run = options;
    run.scenario = &sc;
    run.policy = policy_;
    r.output = (*ctx.executor(r.ran))(r.plan, x, run);
    if (!r.fell_back && !r.output.note.empty()) r.message = r.output.note;
  } catch (const std::exception& e) {
    return failure(std::move(r), Status::backend_failed,
                   fmt::format("{} failed: {}", backend_name(r.ran), e.what()));
  }
  stream_->record_launch();
  return r;
}

}  // namespace tdmsim::api
