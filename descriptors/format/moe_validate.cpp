// Semantic validation of a MoE descriptor (docs/descriptor-format.md,
// "Validation rules"). Runs on decoded input and before every encode, so the
// same rules hold for files and for descriptors built in memory. All size and
// address arithmetic is overflow-checked.
#include <algorithm>
#include <string>
#include <unordered_set>

#include "descriptors/format/checked_math.h"
#include "descriptors/format/moe_descriptor.h"
#include "descriptors/format/format_detail.h"

namespace tdmsim::format {
namespace {

using Code = DescriptorErrorCode;
namespace L = moe_wire::layer;

using Result = std::optional<DescriptorError>;

using detail::err;

using detail::hex;

// A byte range of global memory and the descriptor field that defines it.
struct Region {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  std::uint64_t offset = 0;  // field offset in the encoding
  std::string name;
  bool io = false;  // activation/index buffer (vs expert weights)
};

// [base, base + rows*stride): overflow and the 57-bit limit are errors.
Result make_region(std::uint64_t base, std::uint64_t rows, std::uint64_t stride,
                   std::uint64_t offset, std::string name, std::vector<Region>& out,
                   bool io = false) {
  const auto size = checked_mul(rows, stride);
  const auto end = size ? checked_add(base, *size) : std::nullopt;
  if (!end) {
    return err(Code::arithmetic_overflow, offset,
               name + ": base " + hex(base) + " + " + std::to_string(rows) + " rows x " +
                   std::to_string(stride) + " bytes overflows 64 bits");
  }
  if (*end > kMoeAddressLimit) {
    return err(
        Code::address_out_of_range, offset,
        name + " [" + hex(base) + ", " + hex(*end) + ") exceeds the 57-bit global address space");
  }
  out.push_back(Region{base, *end, offset, std::move(name), io});
  return std::nullopt;
}

// The first pair of overlapping regions, reported at the field of the
// activation buffer when one of the two is one (that is the address to fix
// when x lands on weights), else at the later field.
Result find_overlap(std::vector<Region> regions, Code code) {
  std::sort(regions.begin(), regions.end(), [](const Region& a, const Region& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.offset < b.offset;
  });
  std::size_t widest = 0;  // region reaching furthest so far
  for (std::size_t i = 1; i < regions.size(); ++i) {
    if (regions[i].begin < regions[widest].end) {
      const Region& a = regions[widest];
      const Region& b = regions[i];
      const Region& later = a.io != b.io ? (a.io ? a : b) : (a.offset > b.offset ? a : b);
      return err(code, later.offset,
                 a.name + " [" + hex(a.begin) + ", " + hex(a.end) + ") overlaps " + b.name + " [" +
                     hex(b.begin) + ", " + hex(b.end) + ")");
    }
    if (regions[i].end > regions[widest].end) widest = i;
  }
  return std::nullopt;
}

Result check_layer(const MoeDescriptor& d, std::uint64_t lo, std::uint64_t hdr_experts) {
  const MoeLayer& l = d.layer;
  if (l.experts == 0 || l.experts > kMoeMaxExperts) {
    return err(Code::count_out_of_range, hdr_experts,
               "expert count " + std::to_string(l.experts) + " outside 1..65536");
  }
  if (d.experts.size() != l.experts) {
    return err(Code::count_out_of_range, hdr_experts,
               "expert table has " + std::to_string(d.experts.size()) + " entries for " +
                   std::to_string(l.experts) + " experts");
  }
  if (l.experts_per_token == 0 || l.experts_per_token > kMoeMaxExpertsPerToken) {
    return err(Code::count_out_of_range, lo + L::experts_per_token,
               "experts per token " + std::to_string(l.experts_per_token) + " outside 1..1024");
  }
  const std::pair<std::uint32_t, std::uint32_t> dims[] = {{l.hidden, L::hidden},
                                                          {l.inter, L::inter}};
  for (auto [v, off] : dims) {
    if (v == 0 || v > kMoeMaxDim) {
      return err(
          Code::dimension_out_of_range, lo + off,
          (off == L::hidden ? "hidden " : "inter ") + std::to_string(v) + " outside 1..1048576");
    }
  }
  if (l.tokens == 0 || l.tokens > kMoeMaxTokens) {
    return err(Code::dimension_out_of_range, lo + L::tokens,
               "tokens " + std::to_string(l.tokens) + " outside 1..16777216");
  }
  // Powers of two, and multiples of 16 (AITER's kernels take blocks of 48,
  // 80, 96, ...): whole 16-row MFMA/MMA tiles.
  if (l.block_m == 0 || !(is_pow2(l.block_m) || l.block_m % 16 == 0) || l.block_m > kMoeMaxBlockM) {
    return err(Code::dimension_out_of_range, lo + L::block_m,
               "block_m " + std::to_string(l.block_m) +
                   " is not a power of two or a multiple of 16 in 1..1024");
  }
  // The padded layout never exceeds tokens*experts_per_token + experts*block_m rows.
  const std::uint64_t bound =
      std::uint64_t{l.tokens} * l.experts_per_token + std::uint64_t{l.experts} * l.block_m;
  if (l.token_blocks == 0 || padded_rows(l) > bound) {
    return err(Code::count_out_of_range, lo + L::token_blocks,
               "token blocks " + std::to_string(l.token_blocks) + " outside 1.." +
                   std::to_string(bound / l.block_m) + " for this layer");
  }
  // Enum values can only be wrong in a struct built by a cast; decode rejects bad codes.
  if (moe_wire::dtype_code(l.dtype) == 0xFF)
    return err(Code::bad_enum, lo + L::dtype, "unknown dtype");
  if (moe_wire::quant_code(l.quant) == 0xFF)
    return err(Code::bad_enum, lo + L::quant, "unknown quantisation");
  if (moe_wire::policy_code(l.policy) == 0xFF)
    return err(Code::bad_enum, lo + L::policy, "unknown policy");
  if (l.stages != 1 && l.stages != 2) {
    return err(Code::bad_stage, lo + L::stages, "stages " + std::to_string(l.stages) + " (1 or 2)");
  }
  // custom with callback id 0 runs the slot table in the order software wrote
  // it; a nonzero id names the routing callback that produced that table. Any
  // other policy orders the table itself, so a callback id there is an error.
  if (l.policy != TdmPolicy::custom && l.custom_policy_id != 0) {
    return err(Code::bad_policy, lo + L::custom_policy_id,
               "callback id set but the policy is not custom");
  }
  return std::nullopt;
}

Result check_strides(const MoeLayer& l, std::uint64_t lo) {
  const bool scales = has_scales(l);
  const std::uint64_t act_h = activation_row_bytes(l, l.hidden);
  const std::uint64_t act_i = activation_row_bytes(l, l.inter);
  struct S {
    std::uint64_t stride, need, offset;
    const char* name;
  };
  const S rules[] = {
      {l.gate_up_row_stride, weight_row_bytes(l, l.hidden), L::gate_up_row_stride,
       "gate_up_row_stride"},
      {l.down_row_stride, weight_row_bytes(l, l.inter), L::down_row_stride, "down_row_stride"},
      {l.input_row_stride, act_h, L::input_row_stride, "input_row_stride"},
      {l.output_row_stride, act_h, L::output_row_stride, "output_row_stride"},
  };
  for (const S& r : rules) {
    if (r.stride < r.need) {
      return err(Code::stride_too_small, lo + r.offset,
                 std::string(r.name) + " " + std::to_string(r.stride) + " < row of " +
                     std::to_string(r.need) + " bytes");
    }
  }
  const S scale_rules[] = {
      {l.gate_up_scale_row_stride, scale_row_bytes(l, l.hidden), L::gate_up_scale_row_stride,
       "gate_up_scale_row_stride"},
      {l.down_scale_row_stride, scale_row_bytes(l, l.inter), L::down_scale_row_stride,
       "down_scale_row_stride"},
  };
  for (const S& r : scale_rules) {
    if (!scales && r.stride != 0) {
      return err(Code::reserved_nonzero, lo + r.offset,
                 std::string(r.name) + " set on a layer without scales");
    }
    if (scales && r.stride < r.need) {
      return err(Code::stride_too_small, lo + r.offset,
                 std::string(r.name) + " " + std::to_string(r.stride) + " < row of " +
                     std::to_string(r.need) + " bytes");
    }
  }
  if (l.stages == 1 && (l.inter_base != 0 || l.inter_row_stride != 0)) {
    return err(Code::reserved_nonzero, lo + L::inter_base,
               "intermediate buffer set on a 1-stage layer");
  }
  if (l.stages == 2 && l.inter_row_stride < act_i) {
    return err(Code::stride_too_small, lo + L::inter_row_stride,
               "inter_row_stride " + std::to_string(l.inter_row_stride) + " < row of " +
                   std::to_string(act_i) + " bytes");
  }
  return std::nullopt;
}

Result check_alignment(const MoeDescriptor& d, std::uint64_t lo, std::uint64_t eo) {
  const MoeLayer& l = d.layer;
  const std::pair<std::uint64_t, std::uint32_t> act[] = {
      {l.input_base, L::input_base},
      {l.output_base, L::output_base},
      {l.inter_base, L::inter_base},
      {l.sorted_rows_base, L::sorted_rows_base},
      {l.sorted_weights_base, L::sorted_weights_base}};
  for (auto [a, off] : act) {
    if (a % kMoeActivationAlign != 0) {
      return err(Code::misaligned_address, lo + off,
                 "address " + hex(a) + " is not 16-byte aligned");
    }
  }
  const bool scales = has_scales(l);
  for (std::size_t e = 0; e < d.experts.size(); ++e) {
    const ExpertWeights& w = d.experts[e];
    const std::uint64_t rec = eo + e * moe_wire::kExpertRecord;
    const std::pair<std::uint64_t, std::uint32_t> bases[] = {
        {w.gate_up, moe_wire::expert::gate_up},
        {w.down, moe_wire::expert::down},
        {w.gate_up_scale, moe_wire::expert::gate_up_scale},
        {w.down_scale, moe_wire::expert::down_scale}};
    for (auto [a, off] : bases) {
      const bool is_scale = off >= moe_wire::expert::gate_up_scale;
      if (is_scale && !scales && a != 0) {
        return err(Code::reserved_nonzero, rec + off,
                   "expert " + std::to_string(e) + " has a scale base on a layer without scales");
      }
      if (a % kMoeWeightAlign != 0) {
        return err(
            Code::misaligned_address, rec + off,
            "expert " + std::to_string(e) + " weight base " + hex(a) + " is not 256-byte aligned");
      }
    }
  }
  return std::nullopt;
}

Result check_regions(const MoeDescriptor& d, std::uint64_t lo, std::uint64_t eo) {
  const MoeLayer& l = d.layer;
  const bool scales = has_scales(l);
  std::vector<Region> weights;
  weights.reserve(d.experts.size() * (scales ? 4 : 2));
  for (std::size_t e = 0; e < d.experts.size(); ++e) {
    const ExpertWeights& w = d.experts[e];
    const std::uint64_t rec = eo + e * moe_wire::kExpertRecord;
    const std::string n = "expert " + std::to_string(e);
    namespace X = moe_wire::expert;
    if (auto r = make_region(w.gate_up, 2ULL * l.inter, l.gate_up_row_stride, rec + X::gate_up,
                             n + " gate_up", weights))
      return r;
    if (auto r =
            make_region(w.down, l.hidden, l.down_row_stride, rec + X::down, n + " down", weights))
      return r;
    if (scales) {
      if (auto r =
              make_region(w.gate_up_scale, scale_rows(l, 2 * l.inter), l.gate_up_scale_row_stride,
                          rec + X::gate_up_scale, n + " gate_up scales", weights))
        return r;
      if (auto r = make_region(w.down_scale, scale_rows(l, l.hidden), l.down_scale_row_stride,
                               rec + X::down_scale, n + " down scales", weights))
        return r;
    }
  }
  if (auto r = find_overlap(weights, Code::weight_regions_overlap)) return r;

  std::vector<Region> io;
  const std::uint64_t rows = padded_rows(l);
  if (auto r = make_region(l.input_base, l.tokens, l.input_row_stride, lo + L::input_base,
                           "input x", io, true))
    return r;
  if (auto r = make_region(l.output_base, l.tokens, l.output_row_stride, lo + L::output_base,
                           "output y", io, true))
    return r;
  if (l.stages == 2) {
    if (auto r = make_region(l.inter_base, rows, l.inter_row_stride, lo + L::inter_base,
                             "intermediate h", io, true))
      return r;
  }
  if (auto r = make_region(l.sorted_rows_base, rows, 4, lo + L::sorted_rows_base, "sorted rows", io,
                           true))
    return r;
  if (auto r = make_region(l.sorted_weights_base, rows, 4, lo + L::sorted_weights_base,
                           "sorted weights", io, true))
    return r;
  if (auto r = find_overlap(io, Code::io_regions_overlap)) return r;
  // Activations against weights: a merged sweep; any overlap now involves an io region.
  std::vector<Region> all = std::move(weights);
  all.insert(all.end(), io.begin(), io.end());
  return find_overlap(std::move(all), Code::io_regions_overlap);
}

Result check_slots(const MoeDescriptor& d, std::uint64_t so) {
  const MoeLayer& l = d.layer;
  if (d.slots.empty() || d.slots.size() > kMoeMaxSlots) {
    return err(Code::count_out_of_range, moe_wire::hdr::slot_count,
               "slot count " + std::to_string(d.slots.size()) + " outside 1..1048576");
  }
  namespace S = moe_wire::slot;
  for (std::size_t i = 0; i < d.slots.size(); ++i) {
    const TimeSlot& s = d.slots[i];
    const std::uint64_t rec = so + i * moe_wire::kSlotRecord;
    const std::string n = "slot " + std::to_string(i);
    if (s.expert >= l.experts) {
      return err(
          Code::expert_out_of_range, rec + S::expert,
          n + " names expert " + std::to_string(s.expert) + " of " + std::to_string(l.experts));
    }
    if (s.block >= l.token_blocks) {
      return err(Code::block_out_of_range, rec + S::block,
                 n + " names token block " + std::to_string(s.block) + " of " +
                     std::to_string(l.token_blocks));
    }
    if (s.stage != SlotStage::fused && s.stage != SlotStage::gate_up &&
        s.stage != SlotStage::down) {
      return err(Code::bad_enum, rec + S::stage, n + " has an unknown stage");
    }
    const bool stage_ok = l.stages == 1 ? s.stage == SlotStage::fused : s.stage != SlotStage::fused;
    if (!stage_ok) {
      return err(Code::bad_stage, rec + S::stage,
                 n + ": stage does not belong to a " + std::to_string(l.stages) + "-stage layer");
    }
    if (s.valid_rows > l.block_m) {
      return err(Code::count_out_of_range, rec + S::valid_rows,
                 n + " has " + std::to_string(s.valid_rows) + " valid rows in a block of " +
                     std::to_string(l.block_m));
    }
    if (s.length == 0) return err(Code::zero_slot_length, rec + S::length, n + " has length 0");
    const SlotAddresses a = slot_addresses(d, s.expert, s.block, s.stage);
    const std::pair<std::uint64_t, std::uint64_t> addr[] = {
        {s.input, a.input}, {s.output, a.output}, {s.weight, a.weight}, {s.scale, a.scale}};
    const std::uint32_t field[] = {S::input, S::output, S::weight, S::scale};
    for (unsigned k = 0; k < 4; ++k) {
      if (addr[k].first != addr[k].second) {
        return err(Code::slot_address_mismatch, rec + field[k],
                   n + " address " + hex(addr[k].first) + " differs from " + hex(addr[k].second) +
                       " derived from its expert, block and stage");
      }
    }
    if (s.gather_input != a.gather_input || s.scatter_output != a.scatter_output) {
      return err(Code::slot_address_mismatch, rec + S::flags,
                 n + " gather/scatter flags do not match its stage");
    }
  }
  return std::nullopt;
}

Result check_sync(const MoeDescriptor& d, std::uint64_t yo) {
  const SyncInfo& s = d.sync;
  namespace Y = moe_wire::sync;
  if (d.descriptor_id == 0)
    return err(Code::bad_sync, moe_wire::hdr::descriptor_id, "descriptor id 0 is reserved");
  if (s.wait_ids.size() > kMoeMaxWaits) {
    return err(Code::count_out_of_range, yo + Y::wait_count,
               "wait list of " + std::to_string(s.wait_ids.size()) + " ids exceeds 64");
  }
  switch (s.wait_mode) {
    case WaitMode::none:
      if (!s.wait_ids.empty() || s.counter_target != 0) {
        return err(Code::bad_sync, yo + Y::wait_count,
                   "wait ids or counter target without a wait mode");
      }
      break;
    case WaitMode::all_of: {
      if (s.wait_ids.empty())
        return err(Code::bad_sync, yo + Y::wait_count, "all_of wait with no ids");
      if (s.counter_target != 0)
        return err(Code::bad_sync, yo + Y::counter_target, "counter target in all_of mode");
      std::unordered_set<std::uint32_t> seen;
      for (std::size_t i = 0; i < s.wait_ids.size(); ++i) {
        const std::uint32_t id = s.wait_ids[i];
        const std::uint64_t off = yo + Y::wait_ids + 4 * i;
        if (id == 0) return err(Code::bad_sync, off, "wait id 0 is reserved");
        if (id == d.descriptor_id)
          return err(Code::bad_sync, off, "descriptor waits for itself (deadlock)");
        if (!seen.insert(id).second)
          return err(Code::bad_sync, off, "wait id " + std::to_string(id) + " listed twice");
      }
      break;
    }
    case WaitMode::counter:
      if (s.wait_ids.size() != 1 || s.wait_ids[0] == 0) {
        return err(Code::bad_sync, yo + Y::wait_count,
                   "counter wait needs exactly one nonzero counter id");
      }
      if (s.counter_target == 0)
        return err(Code::bad_sync, yo + Y::counter_target, "counter target 0 never blocks");
      break;
    default:
      return err(Code::bad_enum, yo + Y::wait_mode, "unknown wait mode");
  }
  return std::nullopt;
}

}  // namespace

std::optional<DescriptorError> validate(const MoeDescriptor& d,
                                        std::optional<MoeSections> sections) {
  const MoeSections s = sections ? *sections : canonical_sections(d);
  if (auto r = check_layer(d, s.layer, moe_wire::hdr::expert_count)) return r;
  if (auto r = check_strides(d.layer, s.layer)) return r;
  if (auto r = check_alignment(d, s.layer, s.experts)) return r;
  if (auto r = check_regions(d, s.layer, s.experts)) return r;
  if (auto r = check_slots(d, s.slots)) return r;
  return check_sync(d, s.sync);
}

}  // namespace tdmsim::format
