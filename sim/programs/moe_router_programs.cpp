// The router's kernels (software path) and the TDM unit's routing stage as
// the timing model sees them; docs/moe-timing.md "Routing".
#include "sim/programs/moe_router.h"

#include <algorithm>
#include <memory>

#include "sim/programs/microbench.h"

namespace tdmsim::sim::programs {

namespace {

bool grouped(const plan::LayerShape& s) { return s.n_group > 1 && s.topk_group < s.n_group; }

std::uint32_t ceil_div32(std::uint64_t a, std::uint64_t b) { return static_cast<std::uint32_t>((a + b - 1) / b); }

}  // namespace

std::uint32_t router_candidates(const plan::LayerShape& s) {
  if (!grouped(s)) return s.experts_total;
  return s.experts_total / s.n_group * s.topk_group;
}

// The top-k kernel's work, in vector element operations: scoring every
// expert (softmax or sigmoid, the correction bias), under grouped top-k each
// group's two best scores and topk_group argmax passes over the group scores,
// then top_k argmax passes over the candidates, and the picks' weights.
std::uint64_t router_topk_ops_per_token(const plan::LayerShape& s, const RouterCosts& c) {
  const std::uint64_t e = s.experts_total;
  std::uint64_t per_score = s.scoring == Scoring::sigmoid ? c.sigmoid_ops_per_score : c.softmax_ops_per_score;
  if (s.correction_bias) per_score += c.bias_ops_per_score;
  std::uint64_t ops = e * per_score;
  if (grouped(s)) ops += e * c.group_ops_per_score + std::uint64_t{s.topk_group} * s.n_group * c.group_pick_ops;
  ops += std::uint64_t{s.top_k} * router_candidates(s) * c.select_ops;
  ops += std::uint64_t{s.top_k} * c.weight_ops;
  return ops;
}

isa::KernelLaunch router_gemm(const plan::LayerShape& s, const RouterBuffers& b, const MachineSpec& m) {
  // bf16 operands and fp32 logits (the router's weights stay unquantised in
  // the fp8/fp4 checkpoints; the scores are taken in fp32).
  GemmShape g{s.routed_tokens(), s.experts_total, s.hidden, DType::bf16};
  isa::KernelLaunch k = gemm_at({b.hidden, b.gate_weight, b.logits}, g, m,
                                GemmEpilogue{4, s.router_bias ? 1u : 0u});
  k.name = "moe_router_gemm";
  return k;
}

isa::KernelLaunch router_topk(const plan::LayerShape& s, const RouterBuffers& b, const RouterCosts& c) {
  isa::KernelLaunch k;
  k.name = "moe_router_topk";
  const std::uint32_t tokens_per_wg = c.tokens_per_workgroup, threads = c.threads;
  k.workgroups = std::max(1u, ceil_div32(s.routed_tokens(), tokens_per_wg));
  const std::uint64_t per_token = router_topk_ops_per_token(s, c);
  const std::uint32_t e = s.experts_total, slots = s.slots(), top_k = s.top_k, tokens = s.routed_tokens();
  const bool bias = s.correction_bias;
  k.program = [=](std::uint32_t wg) {
    const std::uint32_t first = wg * tokens_per_wg;
    const std::uint32_t n = std::min(tokens_per_wg, tokens - std::min(tokens, first));
    isa::TileProgram p;
    p.threads = threads;
    p.vgprs_per_thread = 32;
    p.lds_bytes = 0;
    if (n > 0) {
      p.prologue_loads.push_back(isa::strided(b.logits + std::uint64_t{first} * e * 4, e * 4, n, std::uint64_t{e} * 4));
    }
    if (bias) p.prologue_loads.push_back(isa::strided(b.correction_bias, e * 4));
    // Warp reductions and argmax passes: latency-bound issue, as the sort's.
    p.epilogue_vector_ops = per_token * n;
    p.epilogue_issue_bound = true;
    if (n > 0) {
      p.stores.push_back(isa::strided(b.topk_ids + std::uint64_t{first} * slots * 4, top_k * 4, n, std::uint64_t{slots} * 4));
      p.stores.push_back(isa::strided(b.topk_weights + std::uint64_t{first} * slots * 4, top_k * 4, n, std::uint64_t{slots} * 4));
    }
    return p;
  };
  return k;
}

std::uint64_t unit_routing_items(const plan::LayerShape& s) {
  const std::uint64_t rows = std::uint64_t{s.tokens} * s.slots();
  if (!s.router_timed) return rows;
  std::uint64_t items = std::uint64_t{s.routed_tokens()} * s.experts_total;
  if (grouped(s)) items += std::uint64_t{s.routed_tokens()} * router_candidates(s);
  return items + rows;
}

isa::KernelLaunch unit_routing(const plan::LayerShape& s, const RouterBuffers& b, const RoutingTable& t) {
  auto r = std::make_shared<isa::HardwareRouting>();
  r->items = unit_routing_items(s);
  if (s.router_timed) {
    r->reads.push_back({b.logits, s.experts_total * 4, s.routed_tokens()});
    if (s.correction_bias) r->reads.push_back({b.correction_bias, s.experts_total * 4, 1});
  } else {
    r->reads.push_back({b.topk_ids, s.slots() * 4, s.tokens});
  }
  const std::uint32_t table = std::max(4u, t.padded_rows * 4);
  r->writes.push_back({t.sorted_ids, table, 1});
  r->writes.push_back({t.sorted_weights, table, 1});
  r->writes.push_back({t.block_experts, std::max(4u, t.blocks * 4), 1});
  isa::KernelLaunch k;
  k.name = "moe_routing";
  k.workgroups = 0;
  k.program = [](std::uint32_t) { return isa::TileProgram{}; };
  k.routing = std::move(r);
  return k;
}

}  // namespace tdmsim::sim::programs
