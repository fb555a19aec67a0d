// Routing sources: where each token's top-k expert ids and weights come from.
// All produce a plan::Routing over ALL routed experts (global ids); expert
// parallelism is applied later by fuse_routing. Every random value comes from
// tensor_rng.h, so a routing is bit-identical for a seed on any machine and at
// any thread count. See docs/moe-plan.md "Routing sources".
#pragma once

#include <cstdint>
#include <filesystem>
#include <istream>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "descriptors/plan/capacity.h"
#include "descriptors/plan/gating.h"
#include "descriptors/plan/moe_plan.h"
#include "descriptors/plan/synthetic_tensors.h"
#include "descriptors/plan/tensor_rng.h"

namespace tdmsim::plan {

// The `part` of TensorId::routing_draw each synthetic draw uses: distinct
// parts keep the streams independent of one another.
enum class DrawPart : std::uint64_t {
  permutation = 0,  // Zipf: expert -> popularity rank (index: expert)
  lognormal = 1,    // log-normal load: Box-Muller pair (index: 2e, 2e+1)
  pick = 2,         // expert draws (index: (t*top_k + j) * kPickStride + attempt)
  hot_coin = 3,     // hot source: hot set or the rest (index: t*top_k + j)
  logits = 4,       // logits of the chosen experts for their weights (index: t*top_k + j)
  // overflow: reroute (index: t*top_k + j of the overflowing pick)
  reroute_pick = 5,   // the next expert (index * kPickStride + attempt)
  reroute_coin = 6,   // hot source: hot set or the rest
  reroute_logit = 7,  // the new expert's logit, for its weight
};
// Draw attempts per pick before the exact (rejection-free) fallback, plus one
// index for the fallback itself.
inline constexpr std::uint64_t kPickAttempts = 16;
inline constexpr std::uint64_t kPickStride = kPickAttempts + 1;

// A double in [0, 1) with 53 random bits from the routing_draw stream.
inline double draw_unit(std::uint64_t seed, DrawPart part, std::uint64_t index) {
  return static_cast<double>(
             tensor_bits(seed, TensorId::routing_draw, static_cast<std::uint64_t>(part), index) >>
             11) *
         0x1.0p-53;
}

// ---- the sources ---------------------------------------------------------

// Router logits [tokens][experts]: x . W^T (+ router bias), accumulated in
// double in increasing h (then + bias), rounded once to float.
std::vector<float> router_logits(const ModelSpec& model, std::uint32_t tokens,
                                 std::uint64_t seed);

// source: router. Real router math on the synthetic activations and weights.
Routing route_router(const ModelSpec& model, std::uint32_t tokens, std::uint64_t seed);

// Unnormalised per-expert popularity of a synthetic source (uniform, zipf,
// lognormal); the hot source draws from two sets and has none.
std::vector<double> expert_popularity(const RoutingSpec& spec, std::uint32_t experts,
                                      std::uint64_t seed);

// source: uniform, zipf, lognormal, hot. top_k distinct experts per token.
Routing route_synthetic(const ModelSpec& model, const RoutingSpec& spec, std::uint32_t tokens,
                        std::uint64_t seed);

// The model's weight computation on seeded logits for already chosen experts
// (synthetic sources, and trace lines without weights).
void synthetic_weights(const Gate& gate, std::uint32_t experts, std::uint64_t seed,
                       std::uint32_t token, std::span<float> weights);

// source: trace. Parses a routing trace (format in docs/moe-plan.md); `name`
// is the file name reported in errors. Throws config::ConfigError naming the
// trace file and line.
Routing parse_trace(std::istream& in, const std::string& name, const ModelSpec& model,
                    std::uint32_t tokens, std::uint64_t seed);

// The trace file a scenario names, resolved relative to the file that set
// routing.trace (absolute paths stay as they are).
std::filesystem::path trace_path(const config::ResolvedScenario& scenario);

// Opens and parses the scenario's trace; a missing file is reported at the
// scenario's routing.trace key.
Routing load_trace(const config::ResolvedScenario& scenario);

// The ranking a synthetic source gives a token's overflowing pick under
// routing.overflow: reroute (capacity.h): its next draw from the source.
std::unique_ptr<RerouteRanking> synthetic_ranking(const ModelSpec& model, const RoutingSpec& spec,
                                                  std::uint64_t seed);

// The scenario's routing, whatever its source, after its expert capacity
// (routing.capacity_factor, capacity.h); what the capacity did goes to
// `report` when given.
Routing route(const config::ResolvedScenario& scenario, CapacityReport* report = nullptr);

}  // namespace tdmsim::plan
