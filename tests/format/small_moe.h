// A small hand-laid-out MoE descriptor whose field offsets the error tests
// patch directly: 4 experts, 2 stages, bf16, 3 slots, waits for {3, 4}.
// Canonical layout: header 0, layer 64, experts 192, slots 320, sync 464
// (24 bytes), total 488.
#pragma once

#include <tuple>

#include "descriptors/format/moe_descriptor.h"

namespace tdmsim::format::testing {

inline constexpr std::uint32_t kSmallLayer = 64, kSmallExperts = 192, kSmallSlots = 320,
                               kSmallSync = 464, kSmallTotal = 488;

inline MoeDescriptor small_moe() {
  MoeDescriptor d;
  d.descriptor_id = 5;
  MoeLayer& l = d.layer;
  l.experts = 4;
  l.experts_per_token = 2;
  l.hidden = 64;
  l.inter = 32;
  l.tokens = 8;
  l.block_m = 4;
  l.token_blocks = 6;
  l.dtype = DType::bf16;
  l.stages = 2;
  l.gate_up_row_stride = 128;  // 64 bf16
  l.down_row_stride = 64;      // 32 bf16
  l.input_base = 0x100000;
  l.input_row_stride = 128;
  l.output_base = 0x101000;
  l.output_row_stride = 128;
  l.inter_base = 0x102000;
  l.inter_row_stride = 64;
  l.sorted_rows_base = 0x103000;
  l.sorted_weights_base = 0x103100;
  for (std::uint64_t e = 0; e < 4; ++e) {
    ExpertWeights w;
    w.gate_up = 0x10000 + e * 0x4000;  // 64 rows x 128 B = 0x2000
    w.down = w.gate_up + 0x2000;       // 64 rows x 64 B = 0x1000
    d.experts.push_back(w);
  }
  const std::tuple<std::uint32_t, std::uint32_t, SlotStage> slots[] = {
      {0, 0, SlotStage::gate_up}, {1, 1, SlotStage::gate_up}, {2, 2, SlotStage::down}};
  for (auto [e, b, st] : slots) {
    TimeSlot s;
    s.expert = e;
    s.block = b;
    s.stage = st;
    s.valid_rows = 3;
    s.length = 500;
    const SlotAddresses a = slot_addresses(d, e, b, st);
    s.input = a.input;
    s.output = a.output;
    s.weight = a.weight;
    s.scale = a.scale;
    s.gather_input = a.gather_input;
    s.scatter_output = a.scatter_output;
    d.slots.push_back(s);
  }
  d.sync.signal_id = 5;
  d.sync.wait_mode = WaitMode::all_of;
  d.sync.wait_ids = {3, 4};
  return d;
}

}  // namespace tdmsim::format::testing
