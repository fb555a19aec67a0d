// Geometry of the MoE descriptor: section placement, wire codes of the enums,
// weight/scale sizes and the addresses each slot must carry. Shared by the
// encoder, the decoder, validation and the plan builder so they cannot drift.
#include "descriptors/format/moe_descriptor.h"

namespace tdmsim::format {

namespace moe_wire {
namespace {
// Wire codes are the position in these tables: append only, never reorder.
constexpr DType kDTypes[] = {DType::fp32,     DType::bf16, DType::fp16, DType::fp8_e4m3,
                             DType::fp8_e5m2, DType::int8, DType::mxfp4, DType::fp8_e4m3_fnuz,
                             DType::int4};
constexpr Quant kQuants[] = {Quant::none,      Quant::per_tensor, Quant::per_token,
                             Quant::block_128, Quant::per_1x32,   Quant::group_32,
                             Quant::group_128};
constexpr TdmPolicy kPolicies[] = {TdmPolicy::load_balance, TdmPolicy::capacity_first,
                                   TdmPolicy::low_latency, TdmPolicy::custom,
                                   TdmPolicy::dynamic};

template <class E, std::size_t N>
std::uint8_t code_of(const E (&table)[N], E v) {
  for (std::size_t i = 0; i < N; ++i) {
    if (table[i] == v) return static_cast<std::uint8_t>(i);
  }
  return 0xFF;
}
template <class E, std::size_t N>
std::optional<E> from_code(const E (&table)[N], std::uint8_t c) {
  if (c >= N) return std::nullopt;
  return table[c];
}
}  // namespace

std::uint8_t dtype_code(DType t) { return code_of(kDTypes, t); }
std::uint8_t quant_code(Quant q) { return code_of(kQuants, q); }
std::uint8_t policy_code(TdmPolicy p) { return code_of(kPolicies, p); }
std::optional<DType> dtype_from_code(std::uint8_t c) { return from_code(kDTypes, c); }
std::optional<Quant> quant_from_code(std::uint8_t c) { return from_code(kQuants, c); }
std::optional<TdmPolicy> policy_from_code(std::uint8_t c) { return from_code(kPolicies, c); }
}  // namespace moe_wire

bool has_scales(const MoeLayer& l) { return l.quant != Quant::none || l.dtype == DType::mxfp4; }

std::uint32_t min_activation_bits(const MoeLayer& l) {
  switch (l.dtype) {
    case DType::mxfp4: return 4;  // fp4 x fp4 (a16w4 and a8w4 rows are wider)
    case DType::int4: return 8;   // fp8 x int4 (bf16 x int4 rows are wider)
    default: return dtype_bits(l.dtype);
  }
}

std::uint64_t activation_row_bytes(const MoeLayer& l, std::uint32_t cols) {
  return (std::uint64_t{cols} * min_activation_bits(l) + 7) / 8;
}

std::uint64_t weight_row_bytes(const MoeLayer& l, std::uint32_t cols) {
  return (std::uint64_t{cols} * dtype_bits(l.dtype) + 7) / 8;
}

namespace {
// The scheme the weights' scales follow: mxfp4 layers written before
// per_1x32 existed say none and mean per_1x32.
Quant weight_quant(const MoeLayer& l) {
  return l.dtype == DType::mxfp4 && l.quant == Quant::none ? Quant::per_1x32 : l.quant;
}
}  // namespace

std::uint64_t scale_rows(const MoeLayer& l, std::uint32_t rows) {
  switch (weight_quant(l)) {
    case Quant::none:
      return 0;
    case Quant::per_tensor:
      return 1;
    case Quant::per_token:
    case Quant::per_1x32:
    case Quant::group_32:
    case Quant::group_128:
      return rows;
    case Quant::block_128:
      return (std::uint64_t{rows} + 127) / 128;
  }
  return 0;
}

std::uint64_t scale_row_bytes(const MoeLayer& l, std::uint32_t cols) {
  switch (weight_quant(l)) {
    case Quant::none:
      return 0;
    case Quant::per_tensor:
    case Quant::per_token:
      return 4;
    case Quant::block_128:
      return (std::uint64_t{cols} + 127) / 128 * 4;
    case Quant::per_1x32:
      return (std::uint64_t{cols} + 31) / 32;  // one E8M0 byte per 32 elements
    case Quant::group_32:
      return (std::uint64_t{cols} + 31) / 32 * 4;
    case Quant::group_128:
      return (std::uint64_t{cols} + 127) / 128 * 4;
  }
  return 0;
}

std::uint64_t padded_rows(const MoeLayer& l) { return std::uint64_t{l.token_blocks} * l.block_m; }

SlotAddresses slot_addresses(const MoeDescriptor& d, std::uint32_t expert, std::uint32_t block,
                             SlotStage stage) {
  const MoeLayer& l = d.layer;
  SlotAddresses a{};
  if (expert < d.experts.size()) {
    const ExpertWeights& w = d.experts[expert];
    a.weight = stage == SlotStage::down ? w.down : w.gate_up;
    a.scale = stage == SlotStage::down ? w.down_scale : w.gate_up_scale;
  }
  // Unsigned arithmetic wraps (defined); validation proves the region fits first.
  const std::uint64_t block_rows = std::uint64_t{block} * l.block_m * l.inter_row_stride;
  switch (stage) {
    case SlotStage::fused:
      a = {l.input_base, l.output_base, a.weight, a.scale, true, true};
      break;
    case SlotStage::gate_up:
      a = {l.input_base, l.inter_base + block_rows, a.weight, a.scale, true, false};
      break;
    case SlotStage::down:
      a = {l.inter_base + block_rows, l.output_base, a.weight, a.scale, false, true};
      break;
  }
  return a;
}

MoeSections canonical_sections(const MoeDescriptor& d) {
  using namespace moe_wire;
  MoeSections s;
  s.layer = kHeaderSize;
  s.experts = s.layer + kLayerSize;
  s.slots = s.experts + kExpertRecord * static_cast<std::uint32_t>(d.experts.size());
  s.sync = s.slots + kSlotRecord * static_cast<std::uint32_t>(d.slots.size());
  s.sync_size = (kSyncFixed + 4 * static_cast<std::uint32_t>(d.sync.wait_ids.size()) + 7) / 8 * 8;
  s.total = s.sync + s.sync_size;
  return s;
}

}  // namespace tdmsim::format
