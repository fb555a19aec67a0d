#include "descriptors/format/example_descriptors.h"

#include "descriptors/format/moe_builder.h"
#include "descriptors/format/token_gather.h"

namespace tdmsim::format {
namespace {
constexpr std::uint64_t kBase = std::uint64_t{1} << 32;
}

plan::MoePlan example_plan() {
  plan::MoePlan p;
  plan::LayerShape& s = p.shape;
  s.tokens = 16;
  s.hidden = 4096;
  s.inter = 14336;
  s.experts_total = 8;
  s.experts_local = 8;
  s.top_k = 2;
  s.dtype = DType::bf16;
  const std::uint32_t slots = s.slots();
  // Deterministic, uneven routing: expert 0 gets the most rows, one expert none.
  for (std::uint32_t t = 0; t < s.tokens; ++t) {
    const std::uint32_t a = t % 3 == 0 ? 0 : t % 7;
    std::uint32_t b = (t * 5 + 2) % 8;
    if (b == a) b = (b + 1) % 8;
    for (std::uint32_t e : {a, b}) {
      p.routing.ids.push_back(e);
      p.routing.weights.push_back(0.5F);
      p.fused.expert.push_back(e);
      p.fused.weight.push_back(0.5F);
    }
  }
  plan::BlockLayout& l = p.layout;
  l.block_m = 16;
  l.sentinel = s.tokens * slots;
  const std::uint32_t experts = s.experts_fused();
  l.expert_rows.assign(experts, 0);
  l.expert_first_block.assign(experts + 1, 0);
  for (std::uint32_t e = 0; e < experts; ++e) {
    const auto first = static_cast<std::uint32_t>(l.sorted_rows.size());
    for (std::uint32_t r = 0; r < s.tokens * slots; ++r) {
      if (p.fused.expert[r] != e) continue;
      l.sorted_rows.push_back(r);
      l.sorted_weights.push_back(p.fused.weight[r]);
      ++l.expert_rows[e];
    }
    while (l.sorted_rows.size() % l.block_m != 0) {
      l.sorted_rows.push_back(l.sentinel);
      l.sorted_weights.push_back(0.0F);
    }
    l.expert_first_block[e] = first / l.block_m;
    for (auto b = first / l.block_m; b < l.sorted_rows.size() / l.block_m; ++b)
      l.block_expert.push_back(e);
  }
  l.expert_first_block[experts] = static_cast<std::uint32_t>(l.sorted_rows.size() / l.block_m);
  l.padded_rows = static_cast<std::uint32_t>(l.sorted_rows.size());
  l.capacity = slots * s.tokens + experts * l.block_m - slots;
  l.sorted_rows.resize(l.capacity, l.sentinel);
  l.sorted_weights.resize(l.capacity, 0.0F);
  p.kernel.stages = 2;
  p.kernel.block_m = l.block_m;
  p.kernel.reason = "hand-made example plan";
  return p;
}

MoeDescriptor example_moe_descriptor() {
  const plan::MoePlan p = example_plan();
  return make_moe_descriptor(p, TdmPolicy::load_balance, packed_address_map(p, kBase),
                             SlotLength{2000, SlotUnit::ns});
}

TensorDescriptorFile example_tensor_file() {
  const plan::MoePlan p = example_plan();
  const MoeDescriptor d = example_moe_descriptor();
  const MoeLayer& l = d.layer;
  TensorDescriptorFile f;
  RowGatherSpec x;
  x.global_addr = l.input_base;
  x.tensor_cols = l.hidden;
  x.tile_cols = 128;
  x.row_stride = l.hidden;
  x.element_bytes = 2;
  x.lds_addr = 0;
  x.pad_interval = 64;  // one 128-element bf16 row is 64 dwords: pad each row
  x.pad_amount = 2;     // by 8 bytes to spread rows over LDS banks
  f.descriptors = make_token_gather(p.layout, 0, p.shape.slots(), l.tokens, x);
  // The gate_up weight tile [64 rows x 128 columns] of block 0's expert.
  TensorDescriptor w;
  w.global_addr = d.experts[d.slots[0].expert].gate_up;
  w.lds_addr = 16 * (256 + 8);
  w.element_bytes = 2;
  w.tensor_dim[0] = l.hidden;
  w.tensor_dim[1] = 2 * l.inter;
  w.tile_dim[0] = 128;
  w.tile_dim[1] = 64;
  w.stride[0] = l.gate_up_row_stride / 2;
  f.descriptors.push_back(w);
  return f;
}

}  // namespace tdmsim::format
