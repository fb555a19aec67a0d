// The MoE router as work for the timing model: the gate GEMM (tokens x
// hidden x experts), the scoring (softmax or sigmoid), the selection-only
// correction bias and grouped top-k the model's `gating:` declares. On the
// software path it is two kernels the host launches before the sort (the gate
// GEMM, on the GEMM tile program of microbench.h, and a top-k kernel); on the
// TDM path the unit dispatches the gate GEMM to the CUs itself and its
// routing stage (sim/platform/tdm_router.h) scores, ranks and sorts in
// hardware, so no software sort runs. docs/moe-timing.md "Routing".
#pragma once

#include <cstdint>

#include "descriptors/plan/moe_plan.h"
#include "isa/tile_program.h"
#include "workloads/specs/machine_spec.h"

namespace tdmsim::sim::programs {

// Where the router's tensors live in simulated device memory.
struct RouterBuffers {
  std::uint64_t hidden = 0;           // the layer input as the router reads it [tokens][H] (bf16)
  std::uint64_t gate_weight = 0;      // [experts_total][H] (bf16)
  std::uint64_t logits = 0;           // [tokens][experts_total] (fp32)
  std::uint64_t correction_bias = 0;  // [experts_total] (fp32), models with gating.correction_bias
  std::uint64_t topk_ids = 0;         // [tokens][slots] (int32): what the sort reads
  std::uint64_t topk_weights = 0;     // [tokens][slots] (fp32)
};

// Experts the final top-k ranks per token: all of them, or under grouped
// top-k (n_group > 1, topk_group < n_group) those of the kept groups.
std::uint32_t router_candidates(const plan::LayerShape& s);

// Vector element operations the software top-k kernel spends on one token:
// scoring every expert, the correction bias, the group scores and group pick,
// top_k argmax passes over the candidates, and the weights.
// Costs per construct: the machine's kernel profile (kernels.router).
std::uint64_t router_topk_ops_per_token(const plan::LayerShape& s, const RouterCosts& c);

// The software router's kernels, in launch order: "moe_router_gemm" (bf16
// operands, fp32 logits; the linear layer's bias added in its epilogue when
// gating.router_bias) and "moe_router_topk".
isa::KernelLaunch router_gemm(const plan::LayerShape& s, const RouterBuffers& b, const MachineSpec& m);
isa::KernelLaunch router_topk(const plan::LayerShape& s, const RouterBuffers& b, const RouterCosts& c);

// The task table the TDM unit's routing stage writes (what the sort writes on
// the software path).
struct RoutingTable {
  std::uint64_t sorted_ids = 0, sorted_weights = 0, block_experts = 0;
  std::uint32_t padded_rows = 0, blocks = 0;
};

// The items the unit's routing stage passes through its pipeline for the
// layer: with the router timed, every score (tokens x experts_total), under
// grouped top-k the kept groups' experts a second time, and each routed row
// it places in the table (tokens x slots); with the router's output given,
// the routed rows alone.
std::uint64_t unit_routing_items(const plan::LayerShape& s);

// The TDM path's routing stage ("moe_routing", no grid): reads the logits
// (router timed) or the top-k ids (given), writes the task table.
isa::KernelLaunch unit_routing(const plan::LayerShape& s, const RouterBuffers& b, const RoutingTable& t);

}  // namespace tdmsim::sim::programs
