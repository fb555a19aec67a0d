#include "descriptors/format/moe_stream_check.h"

#include <map>
#include <string>
#include <vector>

#include "descriptors/format/moe_builder.h"

namespace tdmsim::format {
namespace {

std::uint32_t u32_at(std::span<const std::byte> b, std::uint32_t at) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | std::to_integer<std::uint32_t>(b[at + i]);
  return v;
}

DescriptorError mismatch(std::uint64_t offset, std::string msg) {
  return DescriptorError{DescriptorErrorCode::scenario_mismatch, offset, std::move(msg)};
}

std::string slot_stage_text(SlotStage s) {
  return s == SlotStage::fused ? "fused" : s == SlotStage::gate_up ? "gate_up" : "down";
}

}  // namespace

std::optional<DescriptorError> check_stream(std::span<const StreamEntry> stream,
                                            const plan::MoePlan& plan) {
  // What the plan's own descriptors say (their addresses are not compared).
  const std::vector<MoeDescriptor> want =
      make_moe_descriptors(plan, TdmPolicy::load_balance, packed_address_map(plan, 0), {});
  if (stream.size() != want.size()) {
    const std::uint64_t at = stream.size() > want.size()
                                 ? stream[want.size()].offset
                                 : (stream.empty() ? 0 : stream.back().offset + stream.back().bytes.size());
    return mismatch(at, "the scenario's layer runs " + std::to_string(want.size()) +
                            (want.size() == 1 ? " descriptor (fused)" : " descriptors (gate_up, then down)") +
                            "; the stream has " + std::to_string(stream.size()));
  }
  std::map<std::uint32_t, std::uint32_t> signals;  // id -> signals by earlier descriptors
  for (std::size_t i = 0; i < stream.size(); ++i) {
    const StreamEntry& e = stream[i];
    const MoeDescriptor& d = e.descriptor;
    const MoeDescriptor& w = want[i];
    const std::string who = "descriptor " + std::to_string(i + 1) + " (id " + std::to_string(d.descriptor_id) + ")";
    namespace H = moe_wire::hdr;
    namespace L = moe_wire::layer;
    const std::uint64_t lo = e.offset + u32_at(e.bytes, H::layer_offset);
    const auto field = [&](const char* name, std::uint64_t got, std::uint64_t expect,
                           std::uint64_t at) -> std::optional<DescriptorError> {
      if (got == expect) return std::nullopt;
      return mismatch(at, who + ": layer " + name + " is " + std::to_string(got) + "; the scenario's is " +
                              std::to_string(expect));
    };
    const MoeLayer& l = d.layer;
    const MoeLayer& x = w.layer;
    for (auto r : {field("experts", l.experts, x.experts, e.offset + H::expert_count),
                   field("experts_per_token", l.experts_per_token, x.experts_per_token, lo + L::experts_per_token),
                   field("hidden", l.hidden, x.hidden, lo + L::hidden),
                   field("inter", l.inter, x.inter, lo + L::inter),
                   field("tokens", l.tokens, x.tokens, lo + L::tokens),
                   field("block_m", l.block_m, x.block_m, lo + L::block_m),
                   field("token_blocks", l.token_blocks, x.token_blocks, lo + L::token_blocks),
                   field("dtype code", moe_wire::dtype_code(l.dtype), moe_wire::dtype_code(x.dtype), lo + L::dtype),
                   field("quant code", moe_wire::quant_code(l.quant), moe_wire::quant_code(x.quant), lo + L::quant),
                   field("stages", l.stages, x.stages, lo + L::stages),
                   field("gate_up_row_stride", l.gate_up_row_stride, x.gate_up_row_stride, lo + L::gate_up_row_stride),
                   field("down_row_stride", l.down_row_stride, x.down_row_stride, lo + L::down_row_stride),
                   field("gate_up_scale_row_stride", l.gate_up_scale_row_stride, x.gate_up_scale_row_stride,
                         lo + L::gate_up_scale_row_stride),
                   field("down_scale_row_stride", l.down_scale_row_stride, x.down_scale_row_stride,
                         lo + L::down_scale_row_stride),
                   field("input_row_stride", l.input_row_stride, x.input_row_stride, lo + L::input_row_stride),
                   field("output_row_stride", l.output_row_stride, x.output_row_stride, lo + L::output_row_stride),
                   field("inter_row_stride", l.inter_row_stride, x.inter_row_stride, lo + L::inter_row_stride)}) {
      if (r) return r;
    }
    // Slots: the scenario's blocks of this stage, each exactly once, with
    // the layout's expert and real rows.
    const SlotStage stage = w.slots.front().stage;
    std::map<std::uint32_t, const TimeSlot*> blocks;
    for (const TimeSlot& s : w.slots) blocks[s.block] = &s;
    const std::uint64_t so = e.offset + u32_at(e.bytes, H::slots_offset);
    namespace S = moe_wire::slot;
    for (std::size_t k = 0; k < d.slots.size(); ++k) {
      const TimeSlot& s = d.slots[k];
      const std::uint64_t at = so + k * moe_wire::kSlotRecord;
      const std::string slot = who + ": slot " + std::to_string(k) + " (block " + std::to_string(s.block) + ")";
      if (s.stage != stage) {
        return mismatch(at + S::stage, slot + " is stage " + slot_stage_text(s.stage) + "; descriptor " +
                                           std::to_string(i + 1) + " of this layer runs " + slot_stage_text(stage));
      }
      const auto it = blocks.find(s.block);
      if (it == blocks.end()) {
        return mismatch(at + S::block, slot + ": the scenario's layout has no such block with work in this "
                                               "stage, or an earlier slot already names it");
      }
      if (s.expert != it->second->expert) {
        return mismatch(at + S::expert, slot + " names expert " + std::to_string(s.expert) +
                                            "; the scenario's routing puts block " + std::to_string(s.block) +
                                            " on expert " + std::to_string(it->second->expert));
      }
      if (s.valid_rows != it->second->valid_rows) {
        return mismatch(at + S::valid_rows, slot + " has " + std::to_string(s.valid_rows) +
                                                " real rows; the scenario's routing gives it " +
                                                std::to_string(it->second->valid_rows));
      }
      blocks.erase(it);
    }
    if (!blocks.empty()) {
      return mismatch(e.offset + H::slot_count,
                      who + ": no slot for block " + std::to_string(blocks.begin()->first) + " (expert " +
                          std::to_string(blocks.begin()->second->expert) + "), which the scenario's layer "
                          "needs; its slot table has " + std::to_string(d.slots.size()) + " of " +
                          std::to_string(w.slots.size()) + " blocks");
    }
    // Waits: met by earlier descriptors, or never.
    const std::uint64_t yo = e.offset + u32_at(e.bytes, H::sync_offset);
    namespace Y = moe_wire::sync;
    const SyncInfo& y = d.sync;
    const auto count = [&](std::uint32_t id) {
      const auto it = signals.find(id);
      return it == signals.end() ? 0u : it->second;
    };
    if (y.wait_mode == WaitMode::all_of) {
      for (std::size_t k = 0; k < y.wait_ids.size(); ++k) {
        if (count(y.wait_ids[k]) == 0) {
          return mismatch(yo + Y::wait_ids + 4 * k,
                          who + " waits for id " + std::to_string(y.wait_ids[k]) +
                              ", which no earlier descriptor of the stream signals; the unit runs "
                              "descriptors in stream order, so the wait would never end");
        }
      }
    } else if (y.wait_mode == WaitMode::counter && count(y.wait_ids.at(0)) < y.counter_target) {
      return mismatch(yo + Y::counter_target,
                      who + " waits for counter " + std::to_string(y.wait_ids[0]) + " to reach " +
                          std::to_string(y.counter_target) + "; earlier descriptors of the stream signal it " +
                          std::to_string(count(y.wait_ids[0])) + " times, so the wait would never end");
    }
    if (y.signal_id != 0) ++signals[y.signal_id];
  }
  return std::nullopt;
}

}  // namespace tdmsim::format
