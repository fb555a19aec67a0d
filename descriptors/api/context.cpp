// Context: the backends a process can run and what it reports about them.
#include <stdexcept>

#include "descriptors/api/moe_api.h"
#include "descriptors/format/moe_descriptor.h"

namespace tdmsim::api {
namespace {

BackendOutput run_emulator(const plan::MoePlan& plan, std::span<const float> x,
                           const ForwardOptions& options) {
  emu::EmulatorOptions eo;
  eo.keep_intermediates = options.keep_intermediates;
  eo.weights = options.weights;
  BackendOutput out;
  out.emulation = emu::emulate(plan, x, eo);
  out.y = out.emulation->y;
  return out;
}

}  // namespace

std::string_view backend_name(Backend b) {
  switch (b) {
    case Backend::emulate: return "emulate";
    case Backend::simulate: return "simulate";
    case Backend::gpu: return "gpu";
  }
  return "?";
}

std::string_view status_name(Status s) {
  switch (s) {
    case Status::ok: return "ok";
    case Status::invalid_argument: return "invalid_argument";
    case Status::not_bound: return "not_bound";
    case Status::routing_missing: return "routing_missing";
    case Status::backend_unavailable: return "backend_unavailable";
    case Status::descriptor_error: return "descriptor_error";
    case Status::backend_failed: return "backend_failed";
  }
  return "?";
}

Context::Context() { executors_[Backend::emulate] = run_emulator; }

void Context::install(Backend b, Executor e) {
  if (!e) throw std::invalid_argument("Context::install: empty executor");
  executors_[b] = std::move(e);
}

std::string Context::unavailable_reason(Backend b) const {
  const auto it = why_missing_.find(b);
  return it == why_missing_.end() ? std::string() : it->second;
}

const Executor* Context::executor(Backend b) const {
  const auto it = executors_.find(b);
  return it == executors_.end() ? nullptr : &it->second;
}

Capabilities Context::capabilities() const {
  Capabilities c;
  for (const auto& [b, e] : executors_) c.backends.push_back(b);
  c.dtypes = {DType::fp32, DType::bf16, DType::fp16, DType::fp8_e4m3, DType::fp8_e5m2,
              DType::int8, DType::mxfp4, DType::fp8_e4m3_fnuz, DType::int4};
  c.quant_schemes = {Quant::none,     Quant::per_tensor, Quant::per_token, Quant::block_128,
                     Quant::per_1x32, Quant::group_32,   Quant::group_128};
  c.activations = {Activation::silu, Activation::gelu, Activation::swiglu_oai};
  c.policies = {TdmPolicy::load_balance, TdmPolicy::capacity_first, TdmPolicy::low_latency,
                TdmPolicy::custom, TdmPolicy::dynamic};
  // The block sizes of the project's kernels (the gpu backend's own tiles go
  // to 128 rows: gpu::supported says which it runs). Layers of AITER's
  // kernels (kernel.source aiter) also take other multiples of 16 up to 256
  // in the emulator and the simulator (docs/moe-plan.md).
  c.block_sizes = {16, 32, 64, 128, 256};
  c.max_experts = format::kMoeMaxExperts;
  c.max_experts_per_token = format::kMoeMaxExpertsPerToken;
  c.max_tokens = format::kMoeMaxTokens;
  c.max_hidden = format::kMoeMaxDim;
  c.descriptor_version = format::kMoeVersion;
  return c;
}

}  // namespace tdmsim::api
