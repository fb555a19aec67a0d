// Seeded generators of random *valid* descriptors for the property tests, and
// byte-patching helpers for crafting corrupt encodings.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <span>
#include <vector>

#include "descriptors/format/byte_cursor.h"
#include "descriptors/format/moe_descriptor.h"
#include "descriptors/format/tensor_descriptor.h"

namespace tdmsim::format::testing {

using Rng = std::mt19937_64;

inline std::uint64_t uniform(Rng& rng, std::uint64_t lo, std::uint64_t hi) {
  return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng);
}
template <class T>
T pick(Rng& rng, std::initializer_list<T> xs) {
  return *(xs.begin() + uniform(rng, 0, xs.size() - 1));
}

// A valid tensor descriptor of a random kind: 2-D, 3..5-D, iterate, gather i16/i32.
inline TensorDescriptor random_tensor_descriptor(Rng& rng) {
  TensorDescriptor d;
  const int kind = static_cast<int>(uniform(rng, 0, 4));
  d.pred = static_cast<std::uint8_t>(uniform(rng, 0, 3) == 0 ? 0 : 1);
  d.lds_addr = static_cast<std::uint32_t>(uniform(rng, 0, 0xFFFFFFFFULL));
  d.global_addr = uniform(rng, 0, kTensorGlobalAddressLimit - 1);
  d.workgroup_mask = static_cast<std::uint16_t>(uniform(rng, 0, 0xFFFF));
  d.element_bytes = pick<std::uint32_t>(rng, {1, 2, 4, 8});
  if (uniform(rng, 0, 1)) {
    d.atomic_barrier = true;
    d.barrier_addr =
        static_cast<std::uint32_t>(uniform(rng, 0, kTensorBarrierAddressLimit / 8 - 1) * 8);
  }
  d.early_timeout = uniform(rng, 0, 1) != 0;
  if (uniform(rng, 0, 1)) {
    d.pad = true;
    d.pad_interval = 1U << uniform(rng, 1, 8);
    d.pad_amount = static_cast<std::uint32_t>(uniform(rng, 1, 128));
  }
  for (unsigned i = 0; i < 2; ++i)
    d.tensor_dim[i] = static_cast<std::uint32_t>(uniform(rng, 1, 0xFFFFFFFFULL));
  d.tile_dim[0] = static_cast<std::uint16_t>(uniform(rng, 1, 256));
  d.stride[0] = uniform(rng, 0, kTensorStrideLimit - 1);
  d.stride[1] = uniform(rng, 0, kTensorStrideLimit - 1);
  switch (kind) {
    case 0:  // 2-D
      d.tile_dim[1] = static_cast<std::uint16_t>(uniform(rng, 1, 256));
      d.tile_dim[2] = static_cast<std::uint16_t>(uniform(rng, 0, 1));
      break;
    case 1:  // 3..5-D, d4 form
      d.tile_dim[1] = static_cast<std::uint16_t>(uniform(rng, 1, 16));
      for (unsigned i = 2; i < 5; ++i) {
        d.tensor_dim[i] = static_cast<std::uint32_t>(uniform(rng, 1, 0xFFFFFFFFULL));
        d.tile_dim[i] = static_cast<std::uint16_t>(uniform(rng, 1, 8));
      }
      d.stride[2] = uniform(rng, 0, kTensorStrideLimit - 1);
      d.stride[3] = uniform(rng, 0, kTensorStrideLimit - 1);
      break;
    case 2:  // iterate, 2-D or 3-D
      d.iterate = true;
      d.tile_dim[1] = static_cast<std::uint16_t>(uniform(rng, 1, 64));
      if (uniform(rng, 0, 1)) {
        d.tensor_dim[2] = static_cast<std::uint32_t>(uniform(rng, 1, 1000));
        d.tile_dim[2] = static_cast<std::uint16_t>(uniform(rng, 1, 4));
      }
      d.iterate_count = static_cast<std::uint32_t>(uniform(rng, 1, kTensorMaxIterations));
      d.iterate_lds_increment = static_cast<std::uint32_t>(uniform(rng, 0, 0xFFFFFFFFULL));
      d.iterate_global_increment = uniform(rng, 0, kTensorStrideLimit - 1);
      break;
    default: {  // gather
      d.gather = true;
      d.index_size = kind == 3 ? IndexSize::i16 : IndexSize::i32;
      const auto cap = gather_capacity(d.index_size);
      d.tile_dim[1] = static_cast<std::uint16_t>(uniform(rng, 1, cap));
      d.tile_dim[2] = static_cast<std::uint16_t>(uniform(rng, 0, 1));
      for (unsigned i = 0; i < d.tile_dim[1]; ++i) {
        d.indices[i] = static_cast<std::uint32_t>(
            uniform(rng, 0, d.index_size == IndexSize::i16 ? 0xFFFFULL : 0xFFFFFFFFULL));
      }
      break;
    }
  }
  return d;
}

// A valid MoE descriptor with random shape, placement, slots and sync.
inline MoeDescriptor random_moe_descriptor(Rng& rng) {
  MoeDescriptor d;
  MoeLayer& l = d.layer;
  l.experts = static_cast<std::uint32_t>(uniform(rng, 0, 9) == 0 ? uniform(rng, 1, 600)
                                                                 : uniform(rng, 1, 40));
  l.experts_per_token = static_cast<std::uint32_t>(uniform(rng, 1, 9));
  l.hidden = static_cast<std::uint32_t>(uniform(rng, 1, 8192));
  l.inter = static_cast<std::uint32_t>(uniform(rng, 1, 8192));
  l.tokens = static_cast<std::uint32_t>(uniform(rng, 1, 4096));
  // Powers of two to 256, and a quarter of the time a multiple of 16 to 1024
  // (AITER's blocks of 48, 80, ...).
  l.block_m = uniform(rng, 0, 3) == 0 ? 16U * static_cast<std::uint32_t>(uniform(rng, 1, 64))
                                      : 1U << uniform(rng, 0, 8);
  const std::uint64_t bound =
      (std::uint64_t{l.tokens} * l.experts_per_token + std::uint64_t{l.experts} * l.block_m) /
      l.block_m;
  l.token_blocks =
      static_cast<std::uint32_t>(uniform(rng, 1, std::min<std::uint64_t>(bound, 3000)));
  l.dtype = pick(rng, {DType::fp32, DType::bf16, DType::fp16, DType::fp8_e4m3, DType::fp8_e5m2,
                       DType::int8, DType::mxfp4, DType::fp8_e4m3_fnuz, DType::int4});
  l.quant = pick(rng, {Quant::none, Quant::per_tensor, Quant::per_token, Quant::block_128,
                       Quant::per_1x32, Quant::group_32, Quant::group_128});
  l.policy = pick(rng, {TdmPolicy::load_balance, TdmPolicy::capacity_first, TdmPolicy::low_latency,
                        TdmPolicy::custom});
  l.custom_policy_id =
      l.policy == TdmPolicy::custom ? static_cast<std::uint32_t>(uniform(rng, 1, 1000)) : 0;
  l.stages = static_cast<std::uint8_t>(uniform(rng, 1, 2));
  auto extra = [&] { return uniform(rng, 0, 3) == 0 ? uniform(rng, 1, 512) : 0; };
  l.gate_up_row_stride = weight_row_bytes(l, l.hidden) + extra();
  l.down_row_stride = weight_row_bytes(l, l.inter) + extra();
  if (has_scales(l)) {
    l.gate_up_scale_row_stride = scale_row_bytes(l, l.hidden) + extra();
    l.down_scale_row_stride = scale_row_bytes(l, l.inter) + extra();
  }
  l.input_row_stride = activation_row_bytes(l, l.hidden) + extra();
  l.output_row_stride = activation_row_bytes(l, l.hidden) + extra();
  if (l.stages == 2) l.inter_row_stride = activation_row_bytes(l, l.inter) + extra();

  // Place every region at increasing 256-aligned addresses with random gaps,
  // experts in a random order.
  std::uint64_t at = uniform(rng, 0, std::uint64_t{1} << 40) / 256 * 256;
  auto take = [&](std::uint64_t bytes) {
    at += uniform(rng, 0, 4) * 256;
    const std::uint64_t here = at;
    at = (at + bytes + 255) / 256 * 256;
    return here;
  };
  const bool scales = has_scales(l);
  std::vector<std::uint32_t> order(l.experts);
  std::iota(order.begin(), order.end(), 0U);
  std::shuffle(order.begin(), order.end(), rng);
  d.experts.resize(l.experts);
  for (std::uint32_t e : order) {
    ExpertWeights& w = d.experts[e];
    w.gate_up = take(2ULL * l.inter * l.gate_up_row_stride);
    w.down = take(std::uint64_t{l.hidden} * l.down_row_stride);
    if (scales) {
      w.gate_up_scale = take(scale_rows(l, 2 * l.inter) * l.gate_up_scale_row_stride);
      w.down_scale = take(scale_rows(l, l.hidden) * l.down_scale_row_stride);
    }
  }
  const std::uint64_t rows = padded_rows(l);
  l.input_base = take(l.tokens * l.input_row_stride);
  l.output_base = take(l.tokens * l.output_row_stride);
  if (l.stages == 2) l.inter_base = take(rows * l.inter_row_stride);
  l.sorted_rows_base = take(rows * 4);
  l.sorted_weights_base = take(rows * 4);

  d.descriptor_id = static_cast<std::uint32_t>(uniform(rng, 1, 100));
  d.slot_unit = uniform(rng, 0, 1) ? SlotUnit::cycles : SlotUnit::ns;
  const auto n_slots = uniform(rng, 1, 60);
  for (std::uint64_t i = 0; i < n_slots; ++i) {
    TimeSlot s;
    s.expert = static_cast<std::uint32_t>(uniform(rng, 0, l.experts - 1));
    s.block = static_cast<std::uint32_t>(uniform(rng, 0, l.token_blocks - 1));
    s.stage = l.stages == 1 ? SlotStage::fused : pick(rng, {SlotStage::gate_up, SlotStage::down});
    s.valid_rows = static_cast<std::uint16_t>(uniform(rng, 0, l.block_m));
    s.length = static_cast<std::uint32_t>(uniform(rng, 1, 100000));
    const SlotAddresses a = slot_addresses(d, s.expert, s.block, s.stage);
    s.input = a.input;
    s.output = a.output;
    s.weight = a.weight;
    s.scale = a.scale;
    s.gather_input = a.gather_input;
    s.scatter_output = a.scatter_output;
    d.slots.push_back(s);
  }
  d.sync.signal_id = static_cast<std::uint32_t>(uniform(rng, 0, 200));
  switch (uniform(rng, 0, 2)) {
    case 0:
      break;
    case 1: {
      d.sync.wait_mode = WaitMode::all_of;
      const auto n = uniform(rng, 1, kMoeMaxWaits);
      for (std::uint32_t id = 1; d.sync.wait_ids.size() < n; ++id) {
        if (id != d.descriptor_id && uniform(rng, 0, 2) == 0) d.sync.wait_ids.push_back(id);
      }
      break;
    }
    default:
      d.sync.wait_mode = WaitMode::counter;
      d.sync.wait_ids = {static_cast<std::uint32_t>(uniform(rng, 1, 50))};
      d.sync.counter_target = static_cast<std::uint32_t>(uniform(rng, 1, 1000));
  }
  return d;
}

// Little-endian patch of `n` bytes at `offset`.
inline void patch(std::vector<std::byte>& b, std::size_t offset, std::uint64_t v, unsigned n) {
  for (unsigned i = 0; i < n; ++i) b.at(offset + i) = static_cast<std::byte>((v >> (8 * i)) & 0xFF);
}
inline std::uint64_t peek(const std::vector<std::byte>& b, std::size_t offset, unsigned n) {
  std::uint64_t v = 0;
  for (unsigned i = 0; i < n; ++i) v |= static_cast<std::uint64_t>(b.at(offset + i)) << (8 * i);
  return v;
}
// Recomputes the CRC-32 at byte 12 (both formats keep it there).
inline void refresh_crc(std::vector<std::byte>& b) { patch(b, 12, crc32(b, 12), 4); }

}  // namespace tdmsim::format::testing
