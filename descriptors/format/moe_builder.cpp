#include "descriptors/format/moe_builder.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace tdmsim::format {
namespace {

std::uint64_t align256(std::uint64_t v) { return (v + 255) / 256 * 256; }

// The layer part that depends only on the plan (no addresses).
MoeLayer layer_of(const plan::MoePlan& p, TdmPolicy policy, std::uint32_t custom_id) {
  const plan::LayerShape& s = p.shape;
  // Shared experts arrive as the plan's fused chunks of the routed size
  // (docs/moe-plan.md, "Shared experts"), so one intermediate size covers
  // every fused expert.
  if (p.layout.block_m == 0 || p.layout.padded_rows % p.layout.block_m != 0) {
    throw std::invalid_argument("plan block layout: padded rows are not whole blocks");
  }
  MoeLayer l;
  l.experts = s.experts_fused();
  l.experts_per_token = s.slots();
  l.hidden = s.hidden;
  l.inter = s.inter;
  l.tokens = s.tokens;
  l.block_m = p.layout.block_m;
  l.token_blocks = p.layout.padded_rows / p.layout.block_m;
  l.dtype = s.weight_dtype;  // the descriptor's dtype sizes weights and scales
  l.quant = s.quant;
  l.policy = policy;
  l.stages = static_cast<std::uint8_t>(p.kernel.stages);
  l.custom_policy_id = custom_id;
  l.gate_up_row_stride = weight_row_bytes(l, l.hidden);
  l.down_row_stride = weight_row_bytes(l, l.inter);
  if (has_scales(l)) {
    l.gate_up_scale_row_stride = scale_row_bytes(l, l.hidden);
    l.down_scale_row_stride = scale_row_bytes(l, l.inter);
  }
  // Activation rows in the activation dtype (whole bytes per row).
  const auto act_row = [&](std::uint32_t cols) {
    return (std::uint64_t{cols} * dtype_bits(s.dtype) + 7) / 8;
  };
  l.input_row_stride = act_row(l.hidden);
  l.output_row_stride = act_row(l.hidden);
  if (l.stages == 2) l.inter_row_stride = act_row(l.inter);
  return l;
}

struct ExpertBytes {
  std::uint64_t gate_up, down, gate_up_scale, down_scale;
};
ExpertBytes expert_bytes(const MoeLayer& l) {
  return {align256(2ULL * l.inter * l.gate_up_row_stride),
          align256(std::uint64_t{l.hidden} * l.down_row_stride),
          align256(scale_rows(l, 2 * l.inter) * l.gate_up_scale_row_stride),
          align256(scale_rows(l, l.hidden) * l.down_scale_row_stride)};
}

}  // namespace

MoeAddressMap packed_address_map(const plan::MoePlan& plan, std::uint64_t base) {
  const MoeLayer l = layer_of(plan, TdmPolicy::load_balance, 0);
  const ExpertBytes eb = expert_bytes(l);
  const std::uint64_t rows = padded_rows(l);
  MoeAddressMap m;
  std::uint64_t at = align256(base);
  auto take = [&at](std::uint64_t bytes) {
    const std::uint64_t here = at;
    at = align256(at + bytes);
    return here;
  };
  m.weights_base = take(l.experts * (eb.gate_up + eb.down));
  m.scales_base = take(l.experts * (eb.gate_up_scale + eb.down_scale));
  m.input_base = take(l.tokens * l.input_row_stride);
  m.output_base = take(l.tokens * l.output_row_stride);
  m.inter_base = l.stages == 2 ? take(rows * l.inter_row_stride) : 0;
  m.sorted_rows_base = take(rows * 4);
  m.sorted_weights_base = take(rows * 4);
  return m;
}

MoeDescriptor make_moe_descriptor(const plan::MoePlan& plan, TdmPolicy policy,
                                  const MoeAddressMap& a, SlotLength slot_length,
                                  const MoeBuildOptions& opt) {
  MoeDescriptor d;
  d.descriptor_id = opt.descriptor_id;
  d.slot_unit = slot_length.unit;
  d.sync.signal_id = opt.descriptor_id;
  MoeLayer& l = d.layer;
  l = layer_of(plan, policy, opt.custom_policy_id);
  l.input_base = a.input_base;
  l.output_base = a.output_base;
  l.inter_base = l.stages == 2 ? a.inter_base : 0;
  l.sorted_rows_base = a.sorted_rows_base;
  l.sorted_weights_base = a.sorted_weights_base;

  const ExpertBytes eb = expert_bytes(l);
  const bool scales = has_scales(l);
  d.experts.resize(l.experts);
  for (std::uint32_t e = 0; e < l.experts; ++e) {
    ExpertWeights& w = d.experts[e];
    w.gate_up = a.weights_base + e * (eb.gate_up + eb.down);
    w.down = w.gate_up + eb.gate_up;
    if (scales) {
      w.gate_up_scale = a.scales_base + e * (eb.gate_up_scale + eb.down_scale);
      w.down_scale = w.gate_up_scale + eb.gate_up_scale;
    }
  }

  const SlotStage stage = opt.stage.value_or(l.stages == 1 ? SlotStage::fused : SlotStage::gate_up);
  // Blocks that stage 1 works on, in block order. A plan without tile jobs
  // (built by hand) works on every block.
  std::vector<bool> used(l.token_blocks, plan.stage1.empty());
  for (const plan::TileJob& j : plan.stage1) {
    if (j.block >= l.token_blocks) {
      throw std::invalid_argument("plan stage-1 job names block " + std::to_string(j.block) +
                                  " of " + std::to_string(l.token_blocks));
    }
    used[j.block] = true;
  }
  const plan::BlockLayout& lay = plan.layout;
  if (lay.block_expert.size() < l.token_blocks || lay.sorted_rows.size() < padded_rows(l)) {
    throw std::invalid_argument("plan block layout is shorter than its padded rows");
  }
  for (std::uint32_t b = 0; b < l.token_blocks; ++b) {
    if (!used[b]) continue;
    TimeSlot s;
    s.expert = lay.block_expert[b];
    s.block = b;
    s.stage = stage;
    const auto first = lay.sorted_rows.begin() + std::ptrdiff_t{b} * l.block_m;
    s.valid_rows = static_cast<std::uint16_t>(std::count_if(
        first, first + l.block_m, [&](std::uint32_t r) { return r != lay.sentinel; }));
    s.length = slot_length.value;
    const SlotAddresses sa = slot_addresses(d, s.expert, s.block, s.stage);
    s.input = sa.input;
    s.output = sa.output;
    s.weight = sa.weight;
    s.scale = sa.scale;
    s.gather_input = sa.gather_input;
    s.scatter_output = sa.scatter_output;
    d.slots.push_back(s);
  }
  if (auto e = validate(d)) throw DescriptorException(*e);
  return d;
}

std::vector<MoeDescriptor> make_moe_descriptors(const plan::MoePlan& plan, TdmPolicy policy,
                                                const MoeAddressMap& addresses,
                                                SlotLength slot_length, std::uint32_t first_id,
                                                std::uint32_t custom_policy_id) {
  MoeBuildOptions o;
  o.descriptor_id = first_id;
  o.custom_policy_id = custom_policy_id;
  std::vector<MoeDescriptor> out;
  // No token block (an expert-parallel GPU whose experts got no pick): no
  // expert stage to describe; a descriptor holds 1 block or more.
  if (plan.layout.block_expert.empty()) return out;
  out.push_back(make_moe_descriptor(plan, policy, addresses, slot_length, o));
  if (plan.kernel.stages == 2) {
    o.stage = SlotStage::down;
    o.descriptor_id = first_id + 1;
    MoeDescriptor down = make_moe_descriptor(plan, policy, addresses, slot_length, o);
    down.sync.wait_mode = WaitMode::all_of;
    down.sync.wait_ids = {first_id};
    if (auto e = validate(down)) throw DescriptorException(*e);
    out.push_back(std::move(down));
  }
  return out;
}

}  // namespace tdmsim::format
