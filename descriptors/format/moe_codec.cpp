// Encoding and decoding of the MoE descriptor's binary layout. Decoding checks
// the container first (length, magic, version, header size, CRC, section
// table), so the field readers that follow only run on bytes that are known to
// be there; every read still goes through the bounds-checked ByteReader.
#include <algorithm>
#include <string>

#include "descriptors/format/byte_cursor.h"
#include "descriptors/format/moe_descriptor.h"
#include "descriptors/format/format_detail.h"

namespace tdmsim::format {
namespace {

using Code = DescriptorErrorCode;
namespace H = moe_wire::hdr;
namespace L = moe_wire::layer;
namespace S = moe_wire::slot;
namespace Y = moe_wire::sync;

using detail::err;

constexpr char kMoeMagic[4] = {'T', 'D', 'M', 'M'};

// The offset tables in moe_descriptor.h and the sizes must agree.
static_assert(H::reserved + 4 == moe_wire::kHeaderSize);
static_assert(L::sorted_weights_base + 8 == moe_wire::kLayerSize);
static_assert(moe_wire::expert::down_scale + 8 == moe_wire::kExpertRecord);
static_assert(S::scale + 8 == moe_wire::kSlotRecord);
static_assert(Y::wait_ids == moe_wire::kSyncFixed);

struct Section {
  std::uint64_t begin, size, field;  // field: header offset naming the section
  const char* name;
};

// Sections must lie inside [header, total), start 8-aligned and be disjoint.
std::optional<DescriptorError> check_sections(std::vector<Section> secs, std::uint64_t total) {
  for (const Section& s : secs) {
    if (s.begin < moe_wire::kHeaderSize || s.begin > total || total - s.begin < s.size) {
      return err(Code::section_out_of_bounds, s.field,
                 std::string(s.name) + " section [" + std::to_string(s.begin) + ", +" +
                     std::to_string(s.size) + ") lies outside the descriptor's bytes [64, " +
                     std::to_string(total) + ")");
    }
    if (s.begin % 8 != 0) {
      return err(Code::section_misaligned, s.field,
                 std::string(s.name) + " section offset " + std::to_string(s.begin) +
                     " is not 8-byte aligned");
    }
  }
  std::sort(secs.begin(), secs.end(), [](const Section& a, const Section& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.field < b.field;  // deterministic report
  });
  for (std::size_t i = 1; i < secs.size(); ++i) {
    if (secs[i].begin < secs[i - 1].begin + secs[i - 1].size) {
      return err(
          Code::sections_overlap, secs[i].field,
          std::string(secs[i].name) + " section overlaps the " + secs[i - 1].name + " section");
    }
  }
  return std::nullopt;
}

void write_layer(ByteWriter& w, const MoeLayer& l) {
  w.u32(l.experts_per_token);
  w.u32(l.hidden);
  w.u32(l.inter);
  w.u32(l.tokens);
  w.u32(l.block_m);
  w.u32(l.token_blocks);
  w.u8(moe_wire::dtype_code(l.dtype));
  w.u8(moe_wire::quant_code(l.quant));
  w.u8(moe_wire::policy_code(l.policy));
  w.u8(l.stages);
  w.u32(l.custom_policy_id);
  for (std::uint64_t v : {l.gate_up_row_stride, l.down_row_stride, l.gate_up_scale_row_stride,
                          l.down_scale_row_stride, l.input_base, l.input_row_stride, l.output_base,
                          l.output_row_stride, l.inter_base, l.inter_row_stride, l.sorted_rows_base,
                          l.sorted_weights_base}) {
    w.u64(v);
  }
}

std::optional<DescriptorError> read_layer(ByteReader& r, std::uint64_t base, MoeLayer& l) {
  r.seek(base);
  l.experts_per_token = r.u32("layer.experts_per_token").value_or(0);
  l.hidden = r.u32("layer.hidden").value_or(0);
  l.inter = r.u32("layer.inter").value_or(0);
  l.tokens = r.u32("layer.tokens").value_or(0);
  l.block_m = r.u32("layer.block_m").value_or(0);
  l.token_blocks = r.u32("layer.token_blocks").value_or(0);
  const auto dt = r.u8("layer.dtype").value_or(0);
  const auto qt = r.u8("layer.quant").value_or(0);
  const auto po = r.u8("layer.policy").value_or(0);
  l.stages = r.u8("layer.stages").value_or(0);
  l.custom_policy_id = r.u32("layer.custom_policy_id").value_or(0);
  std::uint64_t* u64s[] = {
      &l.gate_up_row_stride,    &l.down_row_stride,   &l.gate_up_scale_row_stride,
      &l.down_scale_row_stride, &l.input_base,        &l.input_row_stride,
      &l.output_base,           &l.output_row_stride, &l.inter_base,
      &l.inter_row_stride,      &l.sorted_rows_base,  &l.sorted_weights_base};
  for (std::uint64_t* p : u64s) *p = r.u64("layer field").value_or(0);
  if (r.failed()) return r.error();
  const auto dtype = moe_wire::dtype_from_code(dt);
  if (!dtype)
    return err(Code::bad_enum, base + L::dtype, "unknown dtype code " + std::to_string(dt));
  const auto quant = moe_wire::quant_from_code(qt);
  if (!quant)
    return err(Code::bad_enum, base + L::quant, "unknown quantisation code " + std::to_string(qt));
  const auto policy = moe_wire::policy_from_code(po);
  if (!policy)
    return err(Code::bad_enum, base + L::policy,
               "unknown routing policy code " + std::to_string(po));
  l.dtype = *dtype;
  l.quant = *quant;
  l.policy = *policy;
  return std::nullopt;
}

std::optional<DescriptorError> read_slot(ByteReader& r, std::uint64_t rec, TimeSlot& s) {
  r.seek(rec);
  s.expert = r.u32("slot.expert").value_or(0);
  s.block = r.u32("slot.block").value_or(0);
  const auto stage = r.u8("slot.stage").value_or(0);
  const auto flags = r.u8("slot.flags").value_or(0);
  s.valid_rows = r.u16("slot.valid_rows").value_or(0);
  s.length = r.u32("slot.length").value_or(0);
  s.input = r.u64("slot.input").value_or(0);
  s.output = r.u64("slot.output").value_or(0);
  s.weight = r.u64("slot.weight").value_or(0);
  s.scale = r.u64("slot.scale").value_or(0);
  if (r.failed()) return r.error();
  if (stage > 2)
    return err(Code::bad_enum, rec + S::stage, "unknown slot stage code " + std::to_string(stage));
  s.stage = static_cast<SlotStage>(stage);
  if ((flags & ~(moe_wire::kSlotGather | moe_wire::kSlotScatter)) != 0) {
    return err(Code::reserved_nonzero, rec + S::flags, "reserved slot flag bits set");
  }
  s.gather_input = (flags & moe_wire::kSlotGather) != 0;
  s.scatter_output = (flags & moe_wire::kSlotScatter) != 0;
  return std::nullopt;
}

std::optional<DescriptorError> read_sync(ByteReader& r, std::uint64_t base, std::uint64_t size,
                                         SyncInfo& s) {
  r.seek(base);
  s.signal_id = r.u32("sync.signal_id").value_or(0);
  const auto mode = r.u8("sync.wait_mode").value_or(0);
  const auto res0 = r.u8("sync.reserved").value_or(0);
  const auto res1 = r.u16("sync.reserved").value_or(0);
  s.counter_target = r.u32("sync.counter_target").value_or(0);
  const auto count = r.u32("sync.wait_count").value_or(0);
  if (r.failed()) return r.error();
  if (mode > 2)
    return err(Code::bad_enum, base + Y::wait_mode, "unknown wait mode " + std::to_string(mode));
  s.wait_mode = static_cast<WaitMode>(mode);
  if (res0 != 0 || res1 != 0)
    return err(Code::reserved_nonzero, base + Y::reserved, "reserved sync bytes set");
  if (count > kMoeMaxWaits) {
    return err(Code::count_out_of_range, base + Y::wait_count,
               "wait list of " + std::to_string(count) + " ids exceeds 64");
  }
  const std::uint64_t need = (moe_wire::kSyncFixed + 4ULL * count + 7) / 8 * 8;
  if (size != need) {
    return err(Code::bad_record_size, H::sync_size,
               "sync section of " + std::to_string(size) + " bytes; " + std::to_string(count) +
                   " wait ids need " + std::to_string(need));
  }
  s.wait_ids.resize(count);
  for (auto& id : s.wait_ids) id = r.u32("sync.wait_ids").value_or(0);
  while (r.pos() < base + size) {
    const std::uint64_t at = r.pos();
    if (r.u8("sync padding").value_or(0) != 0)
      return err(Code::reserved_nonzero, at, "sync padding byte set");
  }
  if (r.failed()) return r.error();
  return std::nullopt;
}

}  // namespace

std::vector<std::byte> encode(const MoeDescriptor& d) {
  if (auto e = validate(d)) throw DescriptorException(*e);
  const MoeSections s = canonical_sections(d);
  ByteWriter w;
  for (char c : kMoeMagic) w.u8(static_cast<std::uint8_t>(c));
  w.u16(kMoeVersion);
  w.u16(static_cast<std::uint16_t>(moe_wire::kHeaderSize));
  w.u32(s.total);
  w.u32(0);  // CRC, patched below
  w.u32(d.slot_unit == SlotUnit::cycles ? moe_wire::kFlagSlotCycles : 0);
  w.u32(d.descriptor_id);
  w.u32(s.layer);
  w.u32(moe_wire::kLayerSize);
  w.u32(s.experts);
  w.u32(d.layer.experts);
  w.u16(static_cast<std::uint16_t>(moe_wire::kExpertRecord));
  w.u16(static_cast<std::uint16_t>(moe_wire::kSlotRecord));
  w.u32(s.slots);
  w.u32(static_cast<std::uint32_t>(d.slots.size()));
  w.u32(s.sync);
  w.u32(s.sync_size);
  w.u32(0);  // reserved
  write_layer(w, d.layer);
  for (const ExpertWeights& e : d.experts) {
    for (std::uint64_t v : {e.gate_up, e.down, e.gate_up_scale, e.down_scale}) w.u64(v);
  }
  for (const TimeSlot& t : d.slots) {
    w.u32(t.expert);
    w.u32(t.block);
    w.u8(static_cast<std::uint8_t>(t.stage));
    w.u8(static_cast<std::uint8_t>((t.gather_input ? moe_wire::kSlotGather : 0U) |
                                   (t.scatter_output ? moe_wire::kSlotScatter : 0U)));
    w.u16(t.valid_rows);
    w.u32(t.length);
    for (std::uint64_t v : {t.input, t.output, t.weight, t.scale}) w.u64(v);
  }
  w.u32(d.sync.signal_id);
  w.u8(static_cast<std::uint8_t>(d.sync.wait_mode));
  w.zeros(3);
  w.u32(d.sync.counter_target);
  w.u32(static_cast<std::uint32_t>(d.sync.wait_ids.size()));
  for (std::uint32_t id : d.sync.wait_ids) w.u32(id);
  w.zeros(s.total - w.size());
  std::vector<std::byte> out = w.take();
  stamp_crc32(out, H::crc);
  return out;
}

Decoded<MoeDescriptor> decode_moe(std::span<const std::byte> bytes) {
  ByteReader r(bytes);
  if (auto e = expect_header(r, kMoeMagic, kMoeVersion, "MoE descriptor")) return *e;
  const auto header_size = r.u16("header.header_size");
  if (!header_size) return r.error();
  if (*header_size != moe_wire::kHeaderSize) {
    return err(Code::bad_header_size, H::header_size,
               "header size " + std::to_string(*header_size) + "; version 1 headers are 64 bytes");
  }
  const auto total = r.u32("header.total_size");
  if (!total) return r.error();
  if (*total > bytes.size()) {
    return err(Code::truncated, bytes.size(),
               "header says " + std::to_string(*total) + " bytes, buffer holds " +
                   std::to_string(bytes.size()));
  }
  if (*total < bytes.size() || *total < moe_wire::kHeaderSize) {
    return err(Code::size_mismatch, H::total_size,
               "total_size " + std::to_string(*total) + " differs from the " +
                   std::to_string(bytes.size()) + "-byte buffer (or is shorter than the header)");
  }
  const auto stored_crc = r.u32("header.crc32");
  if (!stored_crc) return r.error();
  if (auto e = check_crc32(bytes, H::crc, *stored_crc)) return *e;
  MoeDescriptor d;
  const auto flags = r.u32("header.flags").value_or(0);
  d.descriptor_id = r.u32("header.descriptor_id").value_or(0);
  MoeSections s;
  s.layer = r.u32("header.layer_offset").value_or(0);
  const auto layer_size = r.u32("header.layer_size").value_or(0);
  s.experts = r.u32("header.experts_offset").value_or(0);
  const auto expert_count = r.u32("header.expert_count").value_or(0);
  const auto expert_record = r.u16("header.expert_record").value_or(0);
  const auto slot_record = r.u16("header.slot_record").value_or(0);
  s.slots = r.u32("header.slots_offset").value_or(0);
  const auto slot_count = r.u32("header.slot_count").value_or(0);
  s.sync = r.u32("header.sync_offset").value_or(0);
  s.sync_size = r.u32("header.sync_size").value_or(0);
  const auto reserved = r.u32("header.reserved").value_or(0);
  s.total = *total;
  if (r.failed()) return r.error();
  if ((flags & ~moe_wire::kFlagSlotCycles) != 0)
    return err(Code::reserved_nonzero, H::flags, "unknown header flag bits set");
  if (reserved != 0) return err(Code::reserved_nonzero, H::reserved, "reserved header word set");
  d.slot_unit = (flags & moe_wire::kFlagSlotCycles) != 0 ? SlotUnit::cycles : SlotUnit::ns;
  if (layer_size != moe_wire::kLayerSize) {
    return err(Code::bad_record_size, H::layer_size,
               "layer section of " + std::to_string(layer_size) + " bytes; version 1 uses 128");
  }
  if (expert_record != moe_wire::kExpertRecord) {
    return err(Code::bad_record_size, H::expert_record,
               "expert record of " + std::to_string(expert_record) + " bytes; version 1 uses 32");
  }
  if (slot_record != moe_wire::kSlotRecord) {
    return err(Code::bad_record_size, H::slot_record,
               "slot record of " + std::to_string(slot_record) + " bytes; version 1 uses 48");
  }
  // Counts are range-checked before they size anything, so a hostile count
  // can neither overflow the section arithmetic nor trigger a huge allocation.
  if (expert_count == 0 || expert_count > kMoeMaxExperts) {
    return err(Code::count_out_of_range, H::expert_count,
               "expert count " + std::to_string(expert_count) + " outside 1..65536");
  }
  if (slot_count == 0 || slot_count > kMoeMaxSlots) {
    return err(Code::count_out_of_range, H::slot_count,
               "slot count " + std::to_string(slot_count) + " outside 1..1048576");
  }
  if (auto e = check_sections(
          {{s.layer, layer_size, H::layer_offset, "layer"},
           {s.experts, std::uint64_t{expert_count} * expert_record, H::experts_offset,
            "expert table"},
           {s.slots, std::uint64_t{slot_count} * slot_record, H::slots_offset, "slot table"},
           {s.sync, s.sync_size, H::sync_offset, "sync"}},
          *total)) {
    return *e;
  }
  if (auto e = read_layer(r, s.layer, d.layer)) return *e;
  d.layer.experts = expert_count;
  d.experts.resize(expert_count);
  r.seek(s.experts);
  for (ExpertWeights& e : d.experts) {
    e.gate_up = r.u64("expert.gate_up").value_or(0);
    e.down = r.u64("expert.down").value_or(0);
    e.gate_up_scale = r.u64("expert.gate_up_scale").value_or(0);
    e.down_scale = r.u64("expert.down_scale").value_or(0);
  }
  if (r.failed()) return r.error();
  d.slots.resize(slot_count);
  for (std::uint32_t i = 0; i < slot_count; ++i) {
    if (auto e = read_slot(r, s.slots + std::uint64_t{i} * slot_record, d.slots[i])) return *e;
  }
  if (auto e = read_sync(r, s.sync, s.sync_size, d.sync)) return *e;
  if (auto e = validate(d, s)) return *e;
  return d;
}

}  // namespace tdmsim::format
