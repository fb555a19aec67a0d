// The MoE descriptor API: what a driver for the hardware TDM MoE unit would
// expose, over the three backends. A Context knows which backends this build
// can run (emulate always; simulate and gpu are installed by the layers above
// descriptors/ when they exist); a Stream orders launches; a MoeDescriptor is
// created from a model (within a scenario) and a policy, bound to a stream,
// optionally given a custom routing callback, and run with forward(x).
//
// Backend fallback (documented in docs/emulator.md, "Descriptor API"): if the
// requested backend is not available, forward() runs `emulate` instead when
// ForwardOptions::allow_fallback is set (the result says so: ran != requested,
// fell_back, and a message), else it returns Status::backend_unavailable and
// runs nothing. Errors are returned as a Status with a message, never thrown.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "descriptors/emulator/emulator.h"
#include "descriptors/plan/moe_plan.h"
#include "workloads/config/resolved.h"

namespace tdmsim::api {

enum class Backend : std::uint8_t { emulate, simulate, gpu };
std::string_view backend_name(Backend b);

enum class Status : std::uint8_t {
  ok,
  invalid_argument,     // wrong activation size, bad callback output, unsupported shape
  not_bound,            // forward() before bind()
  routing_missing,      // policy custom without a routing callback
  backend_unavailable,  // requested backend missing and fallback not allowed
  descriptor_error,     // the plan could not be written as a valid MoE descriptor
  backend_failed,       // the backend threw (message says why)
};
std::string_view status_name(Status s);

// The predicted time of one execution path of the layer (simulate backend).
struct PathTiming {
  std::string path;          // "software" or "tdm"
  double total_s = 0;        // first launch to last kernel's end
  double routing_s = 0;      // the routing stage (0 when routing is given)
  double sort_s = 0;         // the sort stage (software path only)
  std::string metrics_json;  // summary.json's paths[] entry of this run (docs/moe-timing.md)
};

// What a backend returns.
struct BackendOutput {
  std::vector<float> y;                          // [tokens][hidden]
  std::optional<emu::EmulatorResult> emulation;  // the emulator's tensors and timings
  std::vector<PathTiming> timing;                // simulate: each path the machine has
  double device_s = 0;  // gpu: the layer's kernels, as the device timed them
  std::string note;     // what the backend says of the run (gpu: device and time)
};

// A caller's router (gate) weights: W [experts][hidden], and the optional
// router bias and selection-only correction bias [experts] (empty: none).
struct RouterWeights {
  std::span<const float> w;
  std::span<const float> bias;
  std::span<const float> correction;
};

// Weights on the device for a GPU executor: fp32, in the layouts of
// emu::ExpertWeights and RouterWeights (null: not given). Other backends
// cannot read them.
struct DeviceWeights {
  const void* w13 = nullptr;
  const void* w2 = nullptr;
};

struct ForwardOptions {
  Backend backend = Backend::emulate;
  bool allow_fallback = true;       // run emulate when `backend` is unavailable
  bool keep_intermediates = false;  // emulate: also return gate/up and the intermediate
  // The caller's weights (null: from the seed, docs/emulator.md "Inputs");
  // they must outlive forward(). The router's apply unless routing is given
  // by a callback; they route on x whatever the scenario's routing source.
  const emu::ExpertWeights* weights = nullptr;
  const RouterWeights* router = nullptr;
  DeviceWeights device;  // gpu backend only
  // Filled in by MoeDescriptor::forward for the executor (what a caller sets
  // is replaced): the descriptor's scenario (its machine times the plan) and
  // TDM policy.
  const config::ResolvedScenario* scenario = nullptr;
  TdmPolicy policy = TdmPolicy::load_balance;
};

// Runs a plan on activations: the interface the simulate and gpu layers
// implement and install into a Context.
using Executor = std::function<BackendOutput(const plan::MoePlan& plan, std::span<const float> x,
                                             const ForwardOptions& options)>;

// What this build can do, as a driver's device query would report it.
struct Capabilities {
  std::vector<Backend> backends;  // available now
  std::vector<DType> dtypes;      // the emulator runs all of these
  std::vector<Quant> quant_schemes;
  std::vector<Activation> activations;
  std::vector<TdmPolicy> policies;
  std::vector<std::uint32_t> block_sizes;
  std::uint32_t max_experts = 0;        // fused experts per descriptor
  std::uint32_t max_experts_per_token = 0;
  std::uint32_t max_tokens = 0;
  std::uint32_t max_hidden = 0;
  std::uint16_t descriptor_version = 0;  // MoE descriptor format written
  bool custom_routing = true;            // set_routing() is honoured
  bool caller_activations = true;        // forward(x) takes any activations
};

// A device context: the backends this process can run. Not a global: each
// owner creates its own, and layers above descriptors/ install executors.
class Context {
 public:
  Context();  // emulate installed
  void install(Backend b, Executor e);
  bool available(Backend b) const { return executors_.count(b) != 0; }
  // Why a backend is missing, for the unavailable and fallback messages
  // (e.g. "no GPU backend library: ..."); empty when nobody said.
  void set_unavailable_reason(Backend b, std::string why) { why_missing_[b] = std::move(why); }
  std::string unavailable_reason(Backend b) const;
  const Executor* executor(Backend b) const;
  Capabilities capabilities() const;

 private:
  std::map<Backend, Executor> executors_;
  std::map<Backend, std::string> why_missing_;
};

// An ordered queue of launches on one context (synchronous in this build:
// forward() returns when the layer is done). Counts what ran on it.
class Stream {
 public:
  Stream(std::shared_ptr<const Context> context, std::string name)
      : context_(std::move(context)), name_(std::move(name)) {}
  const Context& context() const { return *context_; }
  const std::string& name() const { return name_; }
  std::uint64_t launches() const { return launches_; }
  void record_launch() { ++launches_; }

 private:
  std::shared_ptr<const Context> context_;
  std::string name_;
  std::uint64_t launches_ = 0;
};

// The routing of one token from a custom callback: top_k distinct routed
// expert ids (global, < model experts) and their weights.
struct TokenRoute {
  std::vector<std::uint32_t> experts;
  std::vector<float> weights;
};
using RoutingCallback =
    std::function<TokenRoute(std::uint32_t token, std::span<const float> x_row)>;

// One slot record of a descriptor as the driver would write it (block order),
// shown to a slot-order callback.
struct SlotView {
  std::uint32_t expert = 0;      // global expert id
  std::uint32_t block = 0;       // token block of the sorted layout
  std::uint32_t valid_rows = 0;  // real rows in the block (0: an empty slot)
  std::uint8_t stage = 0;        // 1 gate_up (or the 1-stage kernel), 2 down
};
// A routing callback that orders the slot table of a `custom` descriptor: it
// returns the records' indices in the order the unit is to run them (a
// permutation of 0..slots-1). Called once per descriptor of each forward().
using SlotOrderCallback = std::function<std::vector<std::uint32_t>(std::span<const SlotView> slots)>;

struct ForwardResult {
  Status status = Status::ok;
  std::string message;  // the error, or the fallback note
  Backend requested = Backend::emulate;
  Backend ran = Backend::emulate;  // meaningful when ok()
  bool fell_back = false;
  plan::MoePlan plan;                       // routing, layout and kernel that ran
  std::vector<std::vector<std::byte>> descriptors;  // encoded MoE descriptors (gate_up, down)
  BackendOutput output;
  bool ok() const { return status == Status::ok; }
};

class MoeDescriptor {
 public:
  // From a scenario: its model, machine, dtype, scales, seed, routing source,
  // kernel configuration and sharding (its token count is ignored: forward()
  // takes it from x) and a TDM routing/scheduling policy.
  MoeDescriptor(config::ResolvedScenario scenario, TdmPolicy policy);

  void bind(std::shared_ptr<Stream> stream) { stream_ = std::move(stream); }
  bool bound() const { return stream_ != nullptr; }
  // Replaces the scenario's routing for every forward (any policy); required
  // for TdmPolicy::custom. An empty callback clears it.
  void set_routing(RoutingCallback callback) { routing_ = std::move(callback); }
  // Registers the callback that orders the slot table under `id` (nonzero:
  // the descriptors carry it as custom_policy_id). Policy custom only: with
  // it, set_routing is not required (the scenario's routing is used). An
  // empty callback clears it.
  void set_slot_order(std::uint32_t id, SlotOrderCallback callback) {
    slot_order_id_ = callback ? id : 0;
    slot_order_ = std::move(callback);
  }
  TdmPolicy policy() const { return policy_; }
  const config::ResolvedScenario& scenario() const { return scenario_; }
  // Where the descriptors place the layer's buffers (expert weights first);
  // 256-byte aligned, else std::invalid_argument. The emulator never
  // dereferences these addresses.
  void set_device_base(std::uint64_t base);
  std::uint64_t device_base() const { return device_base_; }

  // Runs the layer on x ([tokens][hidden], caller-provided).
  ForwardResult forward(std::span<const float> x, std::uint32_t tokens,
                        const ForwardOptions& options = {});
  // Runs the layer on the scenario's seeded activations.
  ForwardResult forward_seeded(std::uint32_t tokens, const ForwardOptions& options = {});

 private:
  config::ResolvedScenario scenario_;
  TdmPolicy policy_;
  std::uint64_t device_base_ = 0x100000000ull;
  std::shared_ptr<Stream> stream_;
  RoutingCallback routing_;
  std::uint32_t slot_order_id_ = 0;
  SlotOrderCallback slot_order_;
};

}  // namespace tdmsim::api
