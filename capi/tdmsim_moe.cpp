// The C API (include/tdmsim/tdmsim_moe.h) over the descriptor API
// (descriptors/api/moe_api.h), the scenario loader and the simulate backend.
// Every entry point catches everything: no C++ exception crosses into C.
#include "tdmsim/tdmsim_moe.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "capi/gpu_backend.h"
#include "capi/simulate_backend.h"
#include "descriptors/api/moe_api.h"
#include "descriptors/api/router.h"
#include "descriptors/emulator/synthetic.h"
#include "descriptors/format/moe_descriptor.h"
#include "descriptors/plan/moe_plan.h"
#include "workloads/config/loader.h"
#include "workloads/config/schema.h"

struct tdmsim_stream_s {
  std::shared_ptr<tdmsim::api::Stream> stream;
};

struct tdmsim_moe_s {
  std::unique_ptr<tdmsim::api::MoeDescriptor> desc;
  tdmsim_routing_fn routing = nullptr;
  void* user_data = nullptr;
  std::string timing_json = "[]";  // the last forward's simulated paths
  // A forward is running (its routing callback may call back in): the
  // callback it holds must not be replaced under it.
  bool forwarding = false;
};

// libsystemc.so references sc_main; the archive's stub (sim/core/sc_main_stub.cpp)
// provides it. Taking its address here makes every program that uses the C API
// pull the stub out of the archive (libsystemc.so comes later on the link line).
extern "C" int sc_main(int, char*[]);
extern "C" __attribute__((used)) int (*const tdmsim_keep_sc_main)(int, char*[]) = &sc_main;

namespace tdmsim::capi {
namespace {

thread_local std::string g_error;

tdmsim_status fail(tdmsim_status s, std::string message) {
  g_error = std::move(message);
  return s;
}

// Runs `f` (returning a tdmsim_status), turning every exception into a status
// and a message.
template <class F>
tdmsim_status guarded(F&& f) noexcept {
  try {
    g_error.clear();
    return f();
  } catch (const config::ConfigError& e) {
    return fail(TDMSIM_ERR_CONFIG, e.what());
  } catch (const std::bad_alloc&) {
    return fail(TDMSIM_ERR_INTERNAL, "out of memory");
  } catch (const std::exception& e) {
    return fail(TDMSIM_ERR_INTERNAL, e.what());
  } catch (...) {
    return fail(TDMSIM_ERR_INTERNAL, "unknown error");
  }
}

tdmsim_status check_size(std::uint32_t given, std::size_t expected, const char* what) {
  if (given == expected) return TDMSIM_OK;
  return fail(TDMSIM_ERR_VERSION,
              fmt::format("{}.struct_size is {}, this library's is {} (rebuild against its header)",
                          what, given, expected));
}

tdmsim_status from_status(api::Status s) {
  switch (s) {
    case api::Status::ok: return TDMSIM_OK;
    case api::Status::invalid_argument: return TDMSIM_ERR_INVALID_ARGUMENT;
    case api::Status::not_bound: return TDMSIM_ERR_NOT_BOUND;
    case api::Status::routing_missing: return TDMSIM_ERR_ROUTING_MISSING;
    case api::Status::backend_unavailable: return TDMSIM_ERR_BACKEND_UNAVAILABLE;
    case api::Status::descriptor_error: return TDMSIM_ERR_DESCRIPTOR;
    case api::Status::backend_failed: return TDMSIM_ERR_BACKEND_FAILED;
  }
  return TDMSIM_ERR_INTERNAL;
}

void copy_text(char* out, std::size_t n, std::string_view text) {
  const std::size_t k = std::min(n - 1, text.size());
  std::memcpy(out, text.data(), k);
  out[k] = '\0';
}

// The descriptor's shape fields applied to the scenario's model, as a sweep
// axis would apply them, then the model and the scenario checked again.
void apply_shape(const tdmsim_moe_descriptor& d, config::ResolvedScenario& sc) {
  const config::Location where{"tdmsim_moe_descriptor", 0, 0};
  config::Diagnostics diags;
  const auto set = [&](std::uint32_t value, const char* field, const char* key) {
    if (value != 0) {
      config::apply_override(sc.model.spec, key, std::to_string(value), where,
                             fmt::format("{} (model {})", field, key), diags);
    }
  };
  set(d.num_experts, "num_experts", "experts");
  set(d.experts_per_token, "experts_per_token", "top_k");
  set(d.hidden_size, "hidden_size", "hidden_size");
  set(d.intermediate_size, "intermediate_size", "intermediate_size");
  if (d.seed != 0) sc.scenario.spec.seed = d.seed;
  diags.throw_if_any();
  const config::SetMap none;
  config::Checker c(none, where, diags);
  check(sc.model.spec, c);
  check(sc.scenario.spec, sc.model.spec, sc.machine.spec, c);
  diags.throw_if_any();
}

std::shared_ptr<api::Context> make_context() {
  auto ctx = std::make_shared<api::Context>();
  ctx->install(api::Backend::simulate, simulate_layer);
  install_gpu_backend(*ctx);
  return ctx;
}

// The C callback as the descriptor API's routing callback.
api::RoutingCallback wrap(tdmsim_routing_fn fn, void* user_data, std::uint32_t top_k) {
  return [fn, user_data, top_k](std::uint32_t token, std::span<const float> x_row) {
    api::TokenRoute route;
    route.experts.assign(top_k, 0);
    route.weights.assign(top_k, 0.0f);
    const int rc = fn(token, x_row.data(), static_cast<std::uint32_t>(x_row.size()), top_k,
                      route.experts.data(), route.weights.data(), user_data);
    if (rc != 0) {
      throw std::invalid_argument(
          fmt::format("routing callback returned {} for token {}", rc, token));
    }
    return route;
  };
}

// Precomputed routing as a routing callback.
api::RoutingCallback precomputed(const std::uint32_t* ids, const float* weights,
                                 std::uint32_t top_k) {
  return [ids, weights, top_k](std::uint32_t token, std::span<const float>) {
    const std::size_t at = std::size_t{token} * top_k;
    return api::TokenRoute{{ids + at, ids + at + top_k}, {weights + at, weights + at + top_k}};
  };
}

void fill_path(tdmsim_path_time& out, const api::PathTiming& t) {
  out.simulated = 1;
  out.total_s = t.total_s;
  out.routing_s = t.routing_s;
  out.sort_s = t.sort_s;
  out.experts_s = t.total_s - t.routing_s - t.sort_s;
}

tdmsim_status forward(tdmsim_moe_s& h, const tdmsim_forward_args& a, float* y, std::size_t y_len,
                      tdmsim_forward_result& res) {
  const ModelSpec& model = h.desc->scenario().model.spec;
  if (a.tokens == 0) return fail(TDMSIM_ERR_INVALID_ARGUMENT, "args.tokens is 0");
  if (a.backend > TDMSIM_BACKEND_GPU) {
    return fail(TDMSIM_ERR_INVALID_ARGUMENT, fmt::format("args.backend {} is not a tdmsim_backend", a.backend));
  }
  if ((a.topk_ids == nullptr) != (a.topk_weights == nullptr)) {
    return fail(TDMSIM_ERR_INVALID_ARGUMENT, "args.topk_ids and args.topk_weights go together");
  }
  const std::size_t n = std::size_t{a.tokens} * model.hidden_size;
  if (y_len < n) {
    return fail(TDMSIM_ERR_INVALID_ARGUMENT,
                fmt::format("y holds {} floats, the output is tokens ({}) x hidden ({}) = {}", y_len,
                            a.tokens, model.hidden_size, n));
  }
  // Non-finite inputs are the caller's mistake, named here (the layer would
  // otherwise stop later at a non-finite routing weight).
  const auto finite = [](const float* v, std::size_t count, const char* name,
                         std::size_t row) -> std::optional<std::string> {
    if (v == nullptr) return std::nullopt;
    for (std::size_t i = 0; i < count; ++i) {
      if (!std::isfinite(v[i])) {
        return row > 1 ? fmt::format("args.{}[{}, {}] is {} (every value must be finite)", name, i / row, i % row, v[i])
                       : fmt::format("args.{}[{}] is {} (every value must be finite)", name, i, v[i]);
      }
    }
    return std::nullopt;
  };
  const std::size_t experts_n = model.experts, hidden = model.hidden_size;
  for (const auto& why : {finite(a.x, n, "x", hidden), finite(a.router_weights, experts_n * hidden, "router_weights", hidden),
                          finite(a.router_bias, experts_n, "router_bias", 1),
                          finite(a.router_correction_bias, experts_n, "router_correction_bias", 1)}) {
    if (why) return fail(TDMSIM_ERR_INVALID_ARGUMENT, *why);
  }
  // Precomputed routing, checked as the arguments they are (the descriptor API
  // would report them as a routing callback's answers).
  if (a.topk_ids != nullptr) {
    const std::uint32_t k = model.top_k;
    for (std::size_t t = 0; t < a.tokens; ++t) {
      const std::span<const std::uint32_t> ids(a.topk_ids + t * k, k);
      const std::span<const float> weights(a.topk_weights + t * k, k);
      const auto p = api::route_problem(ids, weights, model.experts);
      if (!p) continue;
      const std::uint32_t j = p->at, e = ids[j];
      switch (p->kind) {
        case api::RouteProblem::Kind::missing_expert:
          return fail(TDMSIM_ERR_INVALID_ARGUMENT,
                      fmt::format("args.topk_ids[{}, {}] is {}: model {} has experts 0..{}", t, j, e, model.name,
                                  model.experts - 1));
        case api::RouteProblem::Kind::repeated_expert:
          return fail(TDMSIM_ERR_INVALID_ARGUMENT,
                      fmt::format("args.topk_ids: token {} picks expert {} twice (at {} and {})", t, e, p->first, j));
        case api::RouteProblem::Kind::non_finite_weight:
          return fail(TDMSIM_ERR_INVALID_ARGUMENT,
                      fmt::format("args.topk_weights[{}, {}] is {} (every value must be finite)", t, j, weights[j]));
      }
    }
  }
  api::ForwardOptions o;
  o.backend = static_cast<api::Backend>(a.backend);
  o.allow_fallback = a.allow_fallback != 0;

  // The caller's weights, checked against the layer before anything runs.
  emu::ExpertWeights experts{a.expert_w13, a.expert_w2};
  const bool any_expert = a.expert_w13 || a.expert_w2 || a.d_expert_w13 || a.d_expert_w2;
  if (any_expert) {
    config::ResolvedScenario sc = h.desc->scenario();
    sc.scenario.spec.tokens = a.tokens;
    const plan::LayerShape shape = plan::layer_shape(sc);
    if (shape.experts_local != model.experts || shape.inter != model.intermediate_size) {
      return fail(TDMSIM_ERR_INVALID_ARGUMENT,
                  fmt::format("expert weights need an unsharded layer: this scenario's GPU holds "
                              "{} of {} experts and {} of {} intermediate columns",
                              shape.experts_local, model.experts, shape.inter,
                              model.intermediate_size));
    }
    o.weights = &experts;
    o.device = {a.d_expert_w13, a.d_expert_w2};
  }
  if ((a.router_bias || a.router_correction_bias) && a.router_weights == nullptr) {
    return fail(TDMSIM_ERR_INVALID_ARGUMENT, "args.router_bias and router_correction_bias need args.router_weights");
  }
  api::RouterWeights router{
      {a.router_weights, a.router_weights ? experts_n * model.hidden_size : 0},
      {a.router_bias, a.router_bias ? experts_n : 0},
      {a.router_correction_bias, a.router_correction_bias ? experts_n : 0}};
  if (a.router_weights != nullptr) o.router = &router;

  // Precomputed routing stands in for the callback for this call only.
  if (a.topk_ids != nullptr) h.desc->set_routing(precomputed(a.topk_ids, a.topk_weights, model.top_k));
  api::ForwardResult r;
  h.forwarding = true;
  try {
    r = a.x == nullptr ? h.desc->forward_seeded(a.tokens, o)
                       : h.desc->forward(std::span<const float>(a.x, n), a.tokens, o);
  } catch (...) {
    h.forwarding = false;
    h.desc->set_routing(h.routing ? wrap(h.routing, h.user_data, model.top_k) : nullptr);
    throw;
  }
  h.forwarding = false;
  h.desc->set_routing(h.routing ? wrap(h.routing, h.user_data, model.top_k) : nullptr);

  res.requested = a.backend;
  res.ran = static_cast<std::uint32_t>(r.ran);
  res.fell_back = r.fell_back ? 1 : 0;
  res.tokens = a.tokens;
  res.hidden = model.hidden_size;
  if (!r.ok()) return fail(from_status(r.status), r.message);
  copy_text(res.message, sizeof res.message, r.message);
  res.kernel_stages = r.plan.kernel.stages;
  res.block_m = r.plan.kernel.block_m;
  res.descriptors = static_cast<std::uint32_t>(r.descriptors.size());
  for (const auto& d : r.descriptors) res.descriptor_bytes += static_cast<std::uint32_t>(d.size());
  if (r.output.emulation) res.emulate_wall_s = r.output.emulation->timings.total_s;
  std::string json = "[";
  for (const api::PathTiming& t : r.output.timing) {
    res.has_timing = 1;
    fill_path(t.path == "tdm" ? res.tdm : res.software, t);
    json += (json.size() > 1 ? "," : "") + t.metrics_json;
  }
  h.timing_json = json + "]";
  std::copy(r.output.y.begin(), r.output.y.end(), y);
  return TDMSIM_OK;
}

}  // namespace
}  // namespace tdmsim::capi

using namespace tdmsim;
using capi::fail;
using capi::guarded;

extern "C" {

const char* tdmsim_last_error(void) { return capi::g_error.c_str(); }

const char* tdmsim_status_name(tdmsim_status status) {
  switch (status) {
    case TDMSIM_OK: return "TDMSIM_OK";
    case TDMSIM_ERR_INVALID_ARGUMENT: return "TDMSIM_ERR_INVALID_ARGUMENT";
    case TDMSIM_ERR_VERSION: return "TDMSIM_ERR_VERSION";
    case TDMSIM_ERR_CONFIG: return "TDMSIM_ERR_CONFIG";
    case TDMSIM_ERR_NOT_BOUND: return "TDMSIM_ERR_NOT_BOUND";
    case TDMSIM_ERR_ROUTING_MISSING: return "TDMSIM_ERR_ROUTING_MISSING";
    case TDMSIM_ERR_BACKEND_UNAVAILABLE: return "TDMSIM_ERR_BACKEND_UNAVAILABLE";
    case TDMSIM_ERR_DESCRIPTOR: return "TDMSIM_ERR_DESCRIPTOR";
    case TDMSIM_ERR_BACKEND_FAILED: return "TDMSIM_ERR_BACKEND_FAILED";
    case TDMSIM_ERR_INTERNAL: return "TDMSIM_ERR_INTERNAL";
  }
  return "TDMSIM_ERR_UNKNOWN";
}

const char* tdmsim_backend_name(tdmsim_backend backend) {
  switch (backend) {
    case TDMSIM_BACKEND_EMULATE: return "emulate";
    case TDMSIM_BACKEND_SIMULATE: return "simulate";
    case TDMSIM_BACKEND_GPU: return "gpu";
  }
  return "?";
}

tdmsim_status tdmsim_get_capabilities(tdmsim_capabilities* caps) {
  return guarded([&] {
    if (caps == nullptr) return fail(TDMSIM_ERR_INVALID_ARGUMENT, "caps is NULL");
    if (auto s = capi::check_size(caps->struct_size, sizeof *caps, "tdmsim_capabilities")) return s;
    const api::Capabilities c = capi::make_context()->capabilities();
    *caps = tdmsim_capabilities{};
    caps->struct_size = sizeof *caps;
    caps->api_version = TDMSIM_MOE_DESCRIPTOR_VERSION;
    for (const api::Backend b : c.backends) caps->backends |= 1u << static_cast<unsigned>(b);
    for (const TdmPolicy p : c.policies) caps->policies |= 1u << static_cast<unsigned>(p);
    caps->descriptor_format_version = c.descriptor_version;
    caps->max_experts = c.max_experts;
    caps->max_experts_per_token = c.max_experts_per_token;
    caps->max_tokens = c.max_tokens;
    caps->max_hidden = c.max_hidden;
    caps->custom_routing = c.custom_routing ? 1 : 0;
    caps->precomputed_routing = 1;
    return TDMSIM_OK;
  });
}

tdmsim_status tdmsim_stream_create(tdmsim_stream_t* stream) {
  return guarded([&] {
    if (stream == nullptr) return fail(TDMSIM_ERR_INVALID_ARGUMENT, "stream is NULL");
    *stream = nullptr;
    auto s = std::make_unique<tdmsim_stream_s>();
    s->stream = std::make_shared<api::Stream>(capi::make_context(), "stream");
    *stream = s.release();
    return TDMSIM_OK;
  });
}

tdmsim_status tdmsim_stream_destroy(tdmsim_stream_t stream) {
  delete stream;  // a bound descriptor keeps its own reference to the stream
  capi::g_error.clear();
  return TDMSIM_OK;
}

tdmsim_status tdmsim_stream_launches(tdmsim_stream_t stream, uint64_t* launches) {
  if (stream == nullptr || launches == nullptr) {
    return fail(TDMSIM_ERR_INVALID_ARGUMENT, "stream and launches must not be NULL");
  }
  capi::g_error.clear();
  *launches = stream->stream->launches();
  return TDMSIM_OK;
}

tdmsim_status tdmsim_moe_descriptor_create(const tdmsim_moe_descriptor* desc, tdmsim_moe_t* handle) {
  return guarded([&] {
    if (handle == nullptr) return fail(TDMSIM_ERR_INVALID_ARGUMENT, "handle is NULL");
    *handle = nullptr;
    if (desc == nullptr) return fail(TDMSIM_ERR_INVALID_ARGUMENT, "desc is NULL");
    if (auto s = capi::check_size(desc->struct_size, sizeof *desc, "tdmsim_moe_descriptor")) return s;
    if (desc->version != TDMSIM_MOE_DESCRIPTOR_VERSION) {
      return fail(TDMSIM_ERR_VERSION,
                  fmt::format("tdmsim_moe_descriptor.version is {}, this library reads version {}",
                              desc->version, TDMSIM_MOE_DESCRIPTOR_VERSION));
    }
    for (const std::uint32_t r : desc->reserved) {
      if (r != 0) return fail(TDMSIM_ERR_INVALID_ARGUMENT, "tdmsim_moe_descriptor.reserved must be zero");
    }
    if (desc->routing_policy > TDMSIM_ROUTE_DYNAMIC) {
      return fail(TDMSIM_ERR_INVALID_ARGUMENT,
                  fmt::format("routing_policy {} is not a tdmsim_routing_policy (0..4)", desc->routing_policy));
    }
    if (desc->expert_stride != 0) {
      return fail(TDMSIM_ERR_INVALID_ARGUMENT,
                  fmt::format("expert_stride {}: must be 0 (tdmsim packs each expert's weights and "
                              "writes that stride into the descriptors)", desc->expert_stride));
    }
    if (desc->scenario == nullptr || desc->scenario[0] == '\0') {
      return fail(TDMSIM_ERR_INVALID_ARGUMENT,
                  "tdmsim_moe_descriptor.scenario is required (a scenario YAML path)");
    }
    if (desc->machine != nullptr && desc->machine[0] == '\0') {
      return fail(TDMSIM_ERR_INVALID_ARGUMENT,
                  "tdmsim_moe_descriptor.machine is empty: NULL keeps the scenario's machine, else a machine "
                  "name or YAML path");
    }
    const config::Loader loader(config::default_roots());
    config::ResolvedScenario sc = desc->machine != nullptr
                                      ? loader.resolve_scenario(desc->scenario, desc->machine)
                                      : loader.resolve_scenario(desc->scenario);
    if (sc.scenario.spec.serving) {
      return fail(TDMSIM_ERR_INVALID_ARGUMENT,
                  fmt::format("scenario {} has a serving: section (a request stream, run by tdmsim run only); "
                              "the C API takes one layer (docs/serving.md)", desc->scenario));
    }
    capi::apply_shape(*desc, sc);
    auto h = std::make_unique<tdmsim_moe_s>();
    h->desc = std::make_unique<api::MoeDescriptor>(std::move(sc),
                                                   static_cast<TdmPolicy>(desc->routing_policy));
    if (desc->expert_base_addr != 0) {
      try {
        h->desc->set_device_base(desc->expert_base_addr);
      } catch (const std::invalid_argument& e) {
        return fail(TDMSIM_ERR_INVALID_ARGUMENT, std::string("expert_base_addr: ") + e.what());
      }
    }
    *handle = h.release();
    return TDMSIM_OK;
  });
}

tdmsim_status tdmsim_moe_descriptor_destroy(tdmsim_moe_t handle) {
  if (handle != nullptr && handle->forwarding) {
    return fail(TDMSIM_ERR_INVALID_ARGUMENT,
                "the descriptor cannot be destroyed while tdmsim_moe_forward runs on it (from inside its "
                "routing callback)");
  }
  delete handle;
  capi::g_error.clear();
  return TDMSIM_OK;
}

tdmsim_status tdmsim_moe_get_info(tdmsim_moe_t handle, tdmsim_moe_info* info) {
  return guarded([&] {
    if (handle == nullptr || info == nullptr) return fail(TDMSIM_ERR_INVALID_ARGUMENT, "handle and info must not be NULL");
    if (auto s = capi::check_size(info->struct_size, sizeof *info, "tdmsim_moe_info")) return s;
    const config::ResolvedScenario& sc = handle->desc->scenario();
    const ModelSpec& m = sc.model.spec;
    *info = tdmsim_moe_info{};
    info->struct_size = sizeof *info;
    info->num_experts = m.experts;
    info->experts_per_token = m.top_k;
    info->hidden_size = m.hidden_size;
    info->intermediate_size = m.intermediate_size;
    info->shared_experts = m.shared_experts;
    info->routing_policy = static_cast<std::uint32_t>(handle->desc->policy());
    info->machine_has_tdm = sc.machine.spec.tdm ? 1 : 0;
    info->seed = sc.scenario.spec.seed;
    capi::copy_text(info->model, sizeof info->model, m.name);
    capi::copy_text(info->machine, sizeof info->machine, sc.machine.spec.name);
    capi::copy_text(info->dtype, sizeof info->dtype, config::enum_name(sc.scenario.spec.dtype));
    capi::copy_text(info->activation, sizeof info->activation, config::enum_name(m.activation));
    return TDMSIM_OK;
  });
}

tdmsim_status tdmsim_stream_bind_moe_descriptor(tdmsim_stream_t stream, tdmsim_moe_t handle) {
  return guarded([&] {
    if (stream == nullptr || handle == nullptr) return fail(TDMSIM_ERR_INVALID_ARGUMENT, "stream and handle must not be NULL");
    handle->desc->bind(stream->stream);
    return TDMSIM_OK;
  });
}

tdmsim_status tdmsim_moe_set_custom_routing(tdmsim_moe_t handle, tdmsim_routing_fn fn, void* user_data) {
  return guarded([&] {
    if (handle == nullptr) return fail(TDMSIM_ERR_INVALID_ARGUMENT, "handle is NULL");
    if (handle->forwarding) {
      return fail(TDMSIM_ERR_INVALID_ARGUMENT,
                  "the routing callback cannot change while tdmsim_moe_forward runs (called from inside "
                  "the callback); set it before or after the call");
    }
    handle->routing = fn;
    handle->user_data = user_data;
    const std::uint32_t top_k = handle->desc->scenario().model.spec.top_k;
    handle->desc->set_routing(fn != nullptr ? capi::wrap(fn, user_data, top_k) : nullptr);
    return TDMSIM_OK;
  });
}

tdmsim_status tdmsim_moe_forward(tdmsim_moe_t handle, const tdmsim_forward_args* args, float* y,
                                 size_t y_len, tdmsim_forward_result* result) {
  return guarded([&] {
    if (handle == nullptr || args == nullptr || y == nullptr || result == nullptr) {
      return fail(TDMSIM_ERR_INVALID_ARGUMENT, "handle, args, y and result must not be NULL");
    }
    if (handle->forwarding) {
      return fail(TDMSIM_ERR_INVALID_ARGUMENT,
                  "tdmsim_moe_forward already runs on this descriptor (called from inside its routing callback)");
    }
    // A caller built against API 1.0 passes the shorter struct: its weight
    // fields read as NULL.
    tdmsim_forward_args a{};
    if (args->struct_size == TDMSIM_FORWARD_ARGS_SIZE_V1) {
      std::memcpy(&a, args, TDMSIM_FORWARD_ARGS_SIZE_V1);
    } else if (auto s = capi::check_size(args->struct_size, sizeof *args, "tdmsim_forward_args")) {
      return s;
    } else {
      a = *args;
    }
    if (auto s = capi::check_size(result->struct_size, sizeof *result, "tdmsim_forward_result")) return s;
    *result = tdmsim_forward_result{};
    result->struct_size = sizeof *result;
    return capi::forward(*handle, a, y, y_len, *result);
  });
}

tdmsim_status tdmsim_moe_last_timing_json(tdmsim_moe_t handle, const char** json) {
  if (handle == nullptr || json == nullptr) return fail(TDMSIM_ERR_INVALID_ARGUMENT, "handle and json must not be NULL");
  capi::g_error.clear();
  *json = handle->timing_json.c_str();
  return TDMSIM_OK;
}

tdmsim_status tdmsim_moe_expert_weights(tdmsim_moe_t handle, uint32_t expert, float* gate_up, float* down) {
  return guarded([&] {
    if (handle == nullptr) return fail(TDMSIM_ERR_INVALID_ARGUMENT, "handle is NULL");
    config::ResolvedScenario sc = handle->desc->scenario();
    sc.scenario.spec.tokens = 1;
    const plan::LayerShape shape = plan::layer_shape(sc);
    if (expert >= shape.experts_local) {
      return fail(TDMSIM_ERR_INVALID_ARGUMENT,
                  fmt::format("expert {}: this layer has routed experts 0..{} on this GPU", expert,
                              shape.experts_local - 1));
    }
    const std::uint64_t seed = sc.scenario.spec.seed;
    if (gate_up != nullptr) emu::expert_gate_up_rows(shape, seed, expert, 0, shape.inter, gate_up);
    if (down != nullptr) emu::expert_down_rows(shape, seed, expert, 0, shape.hidden, down);
    return TDMSIM_OK;
  });
}

}  // extern "C"
