// From routing to what the fused kernels index: fuse_routing (shared experts
// as always-selected extra experts, expert parallelism) and sort_into_blocks
// (the padded block layout of moe_align_block_size).
#include <algorithm>
#include <cassert>

#include "descriptors/plan/moe_plan.h"

namespace tdmsim::plan {

SharedSlot shared_slot(const LayerShape& shape, std::uint32_t s) {
  assert(s < shape.shared && shape.shared_chunks > 0);
  SharedSlot slot;
  slot.expert = s / shape.shared_chunks;
  slot.column = (s % shape.shared_chunks) * shape.inter;
  slot.columns = std::min(shape.inter, shape.shared_inter - slot.column);
  return slot;
}

FusedRouting fuse_routing(const LayerShape& shape, const Routing& routing) {
  const std::uint32_t tokens = shape.tokens;
  const std::uint32_t k = shape.top_k;
  const std::uint32_t slots = shape.slots();
  assert(routing.ids.size() == std::size_t(tokens) * k);
  assert(routing.weights.size() == routing.ids.size());
  FusedRouting f;
  f.expert.resize(std::size_t(tokens) * slots);
  f.weight.resize(std::size_t(tokens) * slots);
  for (std::uint32_t t = 0; t < tokens; ++t) {
    const std::size_t in = std::size_t(t) * k;
    const std::size_t out = std::size_t(t) * slots;
    for (std::uint32_t j = 0; j < k; ++j) {
      // This GPU is expert-parallel rank 0: it holds global experts
      // [0, experts_local), which keep their ids; the rest run elsewhere.
      const std::uint32_t g = routing.ids[in + j];
      f.expert[out + j] = g < shape.experts_local ? g : kRemoteExpert;
      f.weight[out + j] = routing.weights[in + j];
    }
    for (std::uint32_t s = 0; s < shape.shared; ++s) {
      // Shared experts are not routed: weight 1, never routed_scaling.
      f.expert[out + k + s] = shape.experts_local + s;
      f.weight[out + k + s] = 1.0f;
    }
  }
  return f;
}

BlockLayout sort_into_blocks(const LayerShape& shape, const FusedRouting& fused,
                             std::uint32_t block_m) {
  assert(block_m > 0);
  const std::uint32_t slots = shape.slots();
  const std::uint32_t experts = shape.experts_fused();
  const std::uint32_t rows = shape.tokens * slots;
  assert(fused.expert.size() == rows && fused.weight.size() == rows);

  BlockLayout L;
  L.block_m = block_m;
  L.sentinel = rows;
  L.capacity = rows + experts * block_m - slots;
  L.expert_rows.assign(experts, 0);
  for (const std::uint32_t e : fused.expert) {
    if (e == kRemoteExpert) continue;
    assert(e < experts);
    ++L.expert_rows[e];
  }
  // Each expert's rows start on a block boundary; an expert with no rows
  // gets no block (production kernels launch nothing for it).
  L.expert_first_block.assign(experts + 1, 0);
  for (std::uint32_t e = 0; e < experts; ++e) {
    const std::uint32_t blocks = (L.expert_rows[e] + block_m - 1) / block_m;
    L.expert_first_block[e + 1] = L.expert_first_block[e] + blocks;
  }
  const std::uint32_t blocks = L.expert_first_block[experts];
  L.padded_rows = blocks * block_m;
  assert(L.padded_rows <= L.capacity);

  L.sorted_rows.assign(L.capacity, L.sentinel);
  L.sorted_weights.assign(L.capacity, 0.0f);
  L.block_expert.resize(blocks);
  for (std::uint32_t e = 0; e < experts; ++e) {
    std::fill(L.block_expert.begin() + L.expert_first_block[e],
              L.block_expert.begin() + L.expert_first_block[e + 1], e);
  }
  // A counting sort in increasing row id keeps each expert's rows in
  // (token, slot) order: stable, so the layout is a pure function of routing.
  std::vector<std::uint32_t> next(experts);
  for (std::uint32_t e = 0; e < experts; ++e) next[e] = L.expert_first_block[e] * block_m;
  for (std::uint32_t row = 0; row < rows; ++row) {
    const std::uint32_t e = fused.expert[row];
    if (e == kRemoteExpert) continue;
    L.sorted_rows[next[e]] = row;
    L.sorted_weights[next[e]] = fused.weight[row];
    ++next[e];
  }
  return L;
}

}  // namespace tdmsim::plan
