// Human-readable text and JSON of decoded descriptors (`tdmsim describe`).
// Field names match docs/descriptor-format.md so a reader can go from the dump
// to the layout tables.
#include <fmt/core.h>

#include "descriptors/format/byte_cursor.h"
#include "descriptors/format/descriptor_file.h"
#include "workloads/config/schema.h"
#include "descriptors/format/format_detail.h"

namespace tdmsim::format {
namespace {

using Json = nlohmann::ordered_json;

using detail::hex;

std::string_view stage_name(SlotStage s) {
  switch (s) {
    case SlotStage::fused:
      return "fused";
    case SlotStage::gate_up:
      return "gate_up";
    case SlotStage::down:
      return "down";
  }
  return "?";
}

std::string_view wait_name(WaitMode m) {
  switch (m) {
    case WaitMode::none:
      return "none";
    case WaitMode::all_of:
      return "all_of";
    case WaitMode::counter:
      return "counter";
  }
  return "?";
}

std::string_view unit_name(SlotUnit u) { return u == SlotUnit::cycles ? "cycles" : "ns"; }

std::string layout_text(GatherBitLayout l) {
  const GatherBits b = gather_bits(l);
  return fmt::format("{} (dword0 bit {} = gather, bit {} = 32-bit indices)", config::enum_name(l),
                     b.gather, b.index32);
}

std::string ids_text(const std::vector<std::uint32_t>& ids) {
  std::string s;
  for (std::size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
  return s;
}

}  // namespace

std::string to_text(const MoeDescriptor& d) {
  const std::vector<std::byte> bytes = encode(d);
  const MoeLayer& l = d.layer;
  std::string o;
  auto line = [&o](const std::string& s) { o += s + "\n"; };
  line(fmt::format("MoE descriptor (TDMM) version {}: {} bytes, CRC-32 0x{:08x}", kMoeVersion,
                   bytes.size(), crc32(bytes, moe_wire::hdr::crc)));
  line(fmt::format("  descriptor id {}, slot lengths in {}", d.descriptor_id,
                   unit_name(d.slot_unit)));
  line("layer");
  line(fmt::format("  experts {}, experts per token {}, hidden {}, inter {}, tokens {}", l.experts,
                   l.experts_per_token, l.hidden, l.inter, l.tokens));
  line(fmt::format("  dtype {}, quant {}, stages {}, block_m {}, token blocks {} ({} padded rows)",
                   config::enum_name(l.dtype), config::enum_name(l.quant), l.stages, l.block_m,
                   l.token_blocks, padded_rows(l)));
  line(fmt::format(
      "  routing policy {}{}", config::enum_name(l.policy),
      l.policy == TdmPolicy::custom ? fmt::format(" (callback id {})", l.custom_policy_id) : ""));
  line(fmt::format("  weight row strides: gate_up {} B, down {} B", l.gate_up_row_stride,
                   l.down_row_stride));
  if (has_scales(l)) {
    line(fmt::format("  scale row strides:  gate_up {} B, down {} B", l.gate_up_scale_row_stride,
                     l.down_scale_row_stride));
  }
  line(fmt::format("  x  {:>18}  row stride {} B", hex(l.input_base), l.input_row_stride));
  line(fmt::format("  y  {:>18}  row stride {} B", hex(l.output_base), l.output_row_stride));
  if (l.stages == 2)
    line(fmt::format("  h  {:>18}  row stride {} B", hex(l.inter_base), l.inter_row_stride));
  line(fmt::format("  sorted rows {}, sorted weights {}", hex(l.sorted_rows_base),
                   hex(l.sorted_weights_base)));
  line(fmt::format("experts ({})", d.experts.size()));
  line(fmt::format(
      "  {:>5}  {:>18}  {:>18}{}", "#", "gate_up", "down",
      has_scales(l) ? fmt::format("  {:>18}  {:>18}", "gate_up_scale", "down_scale") : ""));
  for (std::size_t e = 0; e < d.experts.size(); ++e) {
    const ExpertWeights& w = d.experts[e];
    line(fmt::format("  {:>5}  {:>18}  {:>18}{}", e, hex(w.gate_up), hex(w.down),
                     has_scales(l)
                         ? fmt::format("  {:>18}  {:>18}", hex(w.gate_up_scale), hex(w.down_scale))
                         : ""));
  }
  line(fmt::format("time slots ({})", d.slots.size()));
  line(fmt::format("  {:>5}  {:<7}  {:>6}  {:>6}  {:>5}  {:>8}  {:>14}  {:>14}  {:>14}  {}", "#",
                   "stage", "expert", "block", "rows", "length", "input", "output", "weight",
                   "flags"));
  for (std::size_t i = 0; i < d.slots.size(); ++i) {
    const TimeSlot& s = d.slots[i];
    std::string flags = s.gather_input ? "gather" : "";
    if (s.scatter_output) flags += flags.empty() ? "scatter" : ",scatter";
    line(fmt::format("  {:>5}  {:<7}  {:>6}  {:>6}  {:>5}  {:>8}  {:>14}  {:>14}  {:>14}  {}", i,
                     stage_name(s.stage), s.expert, s.block, s.valid_rows, s.length, hex(s.input),
                     hex(s.output), hex(s.weight), flags));
  }
  line("sync");
  line(fmt::format(
      "  signal {}, wait {}{}{}",
      d.sync.signal_id == 0 ? std::string("none") : std::to_string(d.sync.signal_id),
      wait_name(d.sync.wait_mode),
      d.sync.wait_ids.empty() ? "" : " [" + ids_text(d.sync.wait_ids) + "]",
      d.sync.wait_mode == WaitMode::counter ? fmt::format(" >= {}", d.sync.counter_target) : ""));
  return o;
}

Json to_json(const MoeDescriptor& d) {
  const MoeLayer& l = d.layer;
  Json j;
  j["kind"] = "moe";
  j["version"] = kMoeVersion;
  j["descriptor_id"] = d.descriptor_id;
  j["slot_unit"] = unit_name(d.slot_unit);
  Json& L = j["layer"];
  L["experts"] = l.experts;
  L["experts_per_token"] = l.experts_per_token;
  L["hidden"] = l.hidden;
  L["inter"] = l.inter;
  L["tokens"] = l.tokens;
  L["block_m"] = l.block_m;
  L["token_blocks"] = l.token_blocks;
  L["dtype"] = config::enum_name(l.dtype);
  L["quant"] = config::enum_name(l.quant);
  L["policy"] = config::enum_name(l.policy);
  L["stages"] = l.stages;
  L["custom_policy_id"] = l.custom_policy_id;
  L["gate_up_row_stride"] = l.gate_up_row_stride;
  L["down_row_stride"] = l.down_row_stride;
  L["gate_up_scale_row_stride"] = l.gate_up_scale_row_stride;
  L["down_scale_row_stride"] = l.down_scale_row_stride;
  L["input_base"] = hex(l.input_base);
  L["input_row_stride"] = l.input_row_stride;
  L["output_base"] = hex(l.output_base);
  L["output_row_stride"] = l.output_row_stride;
  L["inter_base"] = hex(l.inter_base);
  L["inter_row_stride"] = l.inter_row_stride;
  L["sorted_rows_base"] = hex(l.sorted_rows_base);
  L["sorted_weights_base"] = hex(l.sorted_weights_base);
  Json& E = j["experts"] = Json::array();
  for (const ExpertWeights& w : d.experts) {
    E.push_back({{"gate_up", hex(w.gate_up)},
                 {"down", hex(w.down)},
                 {"gate_up_scale", hex(w.gate_up_scale)},
                 {"down_scale", hex(w.down_scale)}});
  }
  Json& S = j["slots"] = Json::array();
  for (const TimeSlot& s : d.slots) {
    S.push_back({{"expert", s.expert},
                 {"block", s.block},
                 {"stage", stage_name(s.stage)},
                 {"gather_input", s.gather_input},
                 {"scatter_output", s.scatter_output},
                 {"valid_rows", s.valid_rows},
                 {"length", s.length},
                 {"input", hex(s.input)},
                 {"output", hex(s.output)},
                 {"weight", hex(s.weight)},
                 {"scale", hex(s.scale)}});
  }
  j["sync"] = {{"signal_id", d.sync.signal_id},
               {"wait_mode", wait_name(d.sync.wait_mode)},
               {"counter_target", d.sync.counter_target},
               {"wait_ids", d.sync.wait_ids}};
  return j;
}

std::string to_text(const TensorDescriptor& d, GatherBitLayout layout) {
  const TensorDwords w = pack(d, layout);
  std::string o;
  auto line = [&o](const std::string& s) { o += "  " + s + "\n"; };
  const unsigned rank = d.gather ? 2 : (d.tensor_dim[2] == 0 ? 2 : (d.iterate ? 3 : 5));
  std::string dims, tiles, strides;
  for (unsigned i = 0; i < rank; ++i) {
    // (fmt rather than `const char* + std::string`, which GCC 12 warns of
    // falsely under -Wstringop-overflow.)
    const char* sep = i ? ", " : "";
    dims += fmt::format("{}{}", sep, d.tensor_extent(i));
    tiles += fmt::format("{}{}", sep, i == 1 && d.gather ? d.tile_dim[1] : d.tile_extent(i));
    if (i + 1 < rank) strides += fmt::format("{}{}", sep, d.stride[i]);
  }
  if (d.gather) {
    line(fmt::format("{} of {} rows by {} indices, {}-group form",
                     d.pred ? "gather/scatter" : "no-op (pred 0) gather", d.tile_dim[1],
                     d.index_size == IndexSize::i32 ? "32-bit" : "16-bit",
                     d.uses_four_groups() ? 4 : 2));
  } else {
    line(fmt::format("{}{}-D tile, {}-group form", d.pred ? "" : "no-op (pred 0) ", rank,
                     d.uses_four_groups() ? 4 : 2));
  }
  line(fmt::format("global {}, LDS {}, element {} B, workgroup mask 0x{:04x}", hex(d.global_addr),
                   hex(d.lds_addr), d.element_bytes, d.workgroup_mask));
  line(fmt::format("tensor dims [{}], tile [{}], strides [{}] elements (dim 0 innermost)", dims,
                   d.gather ? fmt::format("{}, {} rows", d.tile_dim[0], d.tile_dim[1]) : tiles,
                   strides));
  line(d.pad ? fmt::format("padding: skip {} dwords after every {} dwords", d.pad_amount,
                           d.pad_interval)
             : std::string("padding: off"));
  line(fmt::format("atomic barrier: {}; iterate: {}; early timeout: {}",
                   d.atomic_barrier ? "LDS " + hex(d.barrier_addr) : std::string("off"),
                   d.iterate ? fmt::format("{} times, LDS +{} B, global +{} B", d.iterate_count,
                                           d.iterate_lds_increment, d.iterate_global_increment)
                             : std::string("off"),
                   d.early_timeout ? "on" : "off"));
  if (d.gather) {
    std::vector<std::uint32_t> ids(d.indices.begin(), d.indices.begin() + d.tile_dim[1]);
    line("row indices: " + ids_text(ids));
  }
  static constexpr const char* kGroup[] = {"group0", "group1", "group2", "group3"};
  for (unsigned g = 0; g < 4; ++g) {
    std::string s = fmt::format("{}:", kGroup[g]);
    const unsigned end = g == 3 ? kTensorDwords : kTensorGroupDword[g + 1];
    for (unsigned k = kTensorGroupDword[g]; k < end; ++k) s += fmt::format(" {:08x}", w[k]);
    line(s);
  }
  return o;
}

std::string to_text(const TensorDescriptorFile& f) {
  std::string o =
      fmt::format("Tensor descriptor file (TDMT) version {}: {} descriptor(s), gather bits {}\n",
                  kTensorFileVersion, f.descriptors.size(), layout_text(f.layout));
  for (std::size_t i = 0; i < f.descriptors.size(); ++i) {
    o += fmt::format("descriptor {}\n", i) + to_text(f.descriptors[i], f.layout);
  }
  return o;
}

Json to_json(const TensorDescriptor& d, GatherBitLayout layout) {
  const TensorDwords w = pack(d, layout);
  Json j;
  j["pred"] = d.pred;
  j["gather"] = d.gather;
  j["index_size"] = d.index_size == IndexSize::i32 ? "i32" : "i16";
  j["lds_addr"] = hex(d.lds_addr);
  j["global_addr"] = hex(d.global_addr);
  j["workgroup_mask"] = d.workgroup_mask;
  j["element_bytes"] = d.element_bytes;
  j["atomic_barrier"] = d.atomic_barrier;
  j["barrier_addr"] = hex(d.barrier_addr);
  j["iterate"] = d.iterate;
  j["pad"] = d.pad;
  j["early_timeout"] = d.early_timeout;
  j["pad_interval"] = d.pad_interval;
  j["pad_amount"] = d.pad_amount;
  j["tensor_dim"] = d.tensor_dim;
  j["tile_dim"] = d.tile_dim;
  j["stride"] = d.stride;
  j["iterate_lds_increment"] = d.iterate_lds_increment;
  j["iterate_global_increment"] = d.iterate_global_increment;
  j["iterate_count"] = d.iterate_count;
  j["indices"] = std::vector<std::uint32_t>(d.indices.begin(), d.indices.begin() + d.index_count());
  Json dw = Json::array();
  for (std::uint32_t v : w) dw.push_back(fmt::format("0x{:08x}", v));
  j["dwords"] = std::move(dw);
  return j;
}

Json to_json(const TensorDescriptorFile& f) {
  Json j;
  j["kind"] = "tensor";
  j["version"] = kTensorFileVersion;
  j["gather_bit_layout"] = config::enum_name(f.layout);
  Json& a = j["descriptors"] = Json::array();
  for (const TensorDescriptor& d : f.descriptors) a.push_back(to_json(d, f.layout));
  return j;
}

}  // namespace tdmsim::format
