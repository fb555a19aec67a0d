// Expert parallelism over N GPUs (docs/expert-parallel.md): which GPU holds
// which expert (the placement policies), each GPU's share of one routing draw
// as a plan of its own, and the tokens the dispatch and combine all-to-alls
// carry between GPUs. Pure functions of the routing: every rank's plan comes
// from the same draw, so the ranks' shares partition its picks exactly.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "descriptors/plan/moe_plan.h"

namespace tdmsim::plan {

// Experts on `ranks` GPUs of `slots` expert slots each; a slot holds one copy
// of a global expert. Slot ids are global: rank * slots + local slot.
struct ExpertMap {
  std::uint32_t ranks = 1;
  std::uint32_t slots = 0;
  std::vector<std::uint32_t> slot_expert;          // [ranks * slots]: the global expert in each slot
  std::vector<std::vector<std::uint32_t>> copies;  // [experts]: the slots holding it, ascending

  std::uint32_t rank_of_slot(std::uint32_t slot) const { return slot / slots; }
  // The slot that runs token `token`'s pick of expert `expert`: its copies
  // take the expert's tokens in turn (copy token mod copies), so a replicated
  // expert's picks split evenly over its copies.
  std::uint32_t slot_of(std::uint32_t expert, std::uint32_t token) const {
    const auto& c = copies[expert];
    return c[token % c.size()];
  }
};

// Routed picks per global expert (dropped picks count nowhere).
std::vector<std::uint64_t> expert_load(const Routing& routing, std::uint32_t experts);

// Places `experts` (+ `redundant` copies, load_aware only) on `ranks` GPUs:
//   contiguous:  expert e on rank e / (experts / ranks), in order;
//   round_robin: expert e on rank e mod ranks;
//   load_aware:  the `redundant` copies go one at a time to the expert with
//                the most picks per copy (`load`), then every copy (its
//                expert's picks / copies) goes, heaviest first, to the rank
//                with the least load so far that has a free slot and no copy
//                of that expert yet (EPLB's replicate-then-pack).
// Within a rank, slots are in increasing global expert id. `experts` and
// `redundant` split evenly over `ranks` (the scenario checks refuse others).
ExpertMap place_experts(ExpertPlacement policy, std::uint32_t experts, std::uint32_t ranks,
                        std::uint32_t redundant, std::span<const std::uint64_t> load);

// The tokens GPU `rank` owns (attention is data parallel: each GPU routes its
// own contiguous share of the batch and receives the combined output of it):
// [begin, end), sizes differing by at most one.
Range own_tokens(std::uint32_t tokens, std::uint32_t ranks, std::uint32_t rank);

// The rank each token's pick j runs on: picks[t * top_k + j], or ranks for a
// dropped pick.
std::vector<std::uint32_t> pick_ranks(const Routing& routing, const ExpertMap& map, std::uint32_t tokens,
                                      std::uint32_t top_k);

// Tokens GPU src sends GPU dst in the dispatch: tokens[src * ranks + dst] =
// tokens src owns with at least one pick on dst, each sent once whatever its
// number of picks there (DeepEP's dispatch); the diagonal is the tokens that
// stay. The combine returns the same tokens (each reduced over dst's experts)
// the other way.
// With `batch` ([tokens], 1 = in), only the tokens of that micro-batch count.
std::vector<std::uint64_t> dispatch_tokens(const std::vector<std::uint32_t>& pick_rank, std::uint32_t tokens,
                                           std::uint32_t top_k, std::uint32_t ranks,
                                           const std::vector<std::uint8_t>* batch = nullptr);

// Micro-batch `chunk` of `chunks` (overlap chunked): each rank's own tokens
// split into `chunks` contiguous parts (own_tokens' rule), part `chunk` of
// every rank: [tokens], 1 = in the micro-batch. The micro-batches partition
// the batch.
std::vector<std::uint8_t> chunk_tokens(std::uint32_t tokens, std::uint32_t ranks, std::uint32_t chunks,
                                       std::uint32_t chunk);

// GPU `rank`'s layer: the tokens it owns (it routes them: shape.router_tokens,
// and runs the shared experts on them) and those it receives (a pick on one of
// its slots), in increasing global token id (`tokens_out`), with its slots as
// the local experts, from the one routing draw `routing` (after the expert
// capacity `capacity`). The kernel is chosen for this rank's layer as
// build_plan chooses one. With one rank it is build_plan's plan. With `batch`
// (chunk_tokens), the rank's layer of that micro-batch only: the tokens of
// the micro-batch it owns or has a pick of.
MoePlan rank_plan(const config::ResolvedScenario& scenario, const Routing& routing, const CapacityReport& capacity,
                  const ExpertMap& map, std::uint32_t rank, std::vector<std::uint32_t>* tokens_out = nullptr,
                  const std::vector<std::uint8_t>* batch = nullptr);

// build_plan's last steps on a plan whose shape, seed, routing and fused
// routing are set: the kernel choice, the block layout and the tile jobs.
void finish_plan(const config::ResolvedScenario& scenario, MoePlan& plan);

}  // namespace tdmsim::plan
