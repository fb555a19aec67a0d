#include "descriptors/format/tensor_descriptor.h"

#include <bit>
#include <string>

#include "descriptors/format/checked_math.h"
#include "descriptors/format/format_detail.h"

namespace tdmsim::format {
namespace {

using Code = DescriptorErrorCode;

using detail::err;

std::uint32_t lo32(std::uint64_t v) { return static_cast<std::uint32_t>(v & 0xFFFFFFFFU); }
std::uint32_t lo16(std::uint64_t v) { return static_cast<std::uint32_t>(v & 0xFFFFU); }

// Groups 2 and 3 (dwords 12..19); independent of the gather-bit layout.
std::array<std::uint32_t, 8> pack_groups23(const TensorDescriptor& d) {
  std::array<std::uint32_t, 8> g{};
  if (d.gather) {
    if (d.index_size == IndexSize::i16) {
      for (unsigned k = 0; k < 8; ++k)
        g[k] = lo16(d.indices[2 * k]) | lo16(d.indices[2 * k + 1]) << 16;
    } else {
      for (unsigned k = 0; k < 8; ++k) g[k] = d.indices[k];
    }
    return g;
  }
  g[0] = d.tensor_dim[2];
  if (d.iterate) {
    g[1] = d.iterate_lds_increment;
    g[2] = lo32(d.iterate_global_increment);
    g[3] = lo16(d.iterate_global_increment >> 32) |
           (d.iterate_count == 0 ? 0U : lo16(d.iterate_count - 1) << 16);
    return g;  // group3 stays zero: rank <= 3 in iterate mode
  }
  g[1] = d.tensor_dim[3];
  g[2] = lo32(d.stride[2]);
  g[3] = lo16(d.stride[2] >> 32) | std::uint32_t{d.tile_dim[3]} << 16;
  g[4] = lo32(d.stride[3]);
  g[5] = lo16(d.stride[3] >> 32) | lo16(d.tensor_dim[4]) << 16;
  g[6] = (d.tensor_dim[4] >> 16) | std::uint32_t{d.tile_dim[4]} << 16;
  g[7] = 0;  // reserved
  return g;
}

std::optional<DescriptorError> check_gather(const TensorDescriptor& d) {
  const auto cnt_off = tensor_field_offset(1, 4);
  if (d.iterate)
    return err(Code::bad_iterate, 0,
               "iterate mode cannot be combined with gather (group2 holds indices)");
  for (unsigned i = 2; i < kTensorMaxDims; ++i) {
    if (d.tensor_dim[i] != 0) {
      return err(Code::gather_rank, tensor_field_offset(2, 0),
                 "gather mode is 2-D only, but tensor_dim" + std::to_string(i) + " is set");
    }
  }
  if (d.tile_dim[2] > 1 || d.tile_dim[3] != 0 || d.tile_dim[4] != 0 || d.stride[2] != 0 ||
      d.stride[3] != 0) {
    return err(Code::gather_rank, cnt_off,
               "gather mode is 2-D only, but a tile dim or stride above dim 1 is set");
  }
  const std::uint32_t cap = gather_capacity(d.index_size);
  if (d.tile_dim[1] == 0 || d.tile_dim[1] > cap) {
    return err(Code::index_count, cnt_off,
               "gather index count " + std::to_string(d.tile_dim[1]) + " outside 1.." +
                   std::to_string(cap) + " for " + (d.index_size == IndexSize::i32 ? "32" : "16") +
                   "-bit indices");
  }
  for (unsigned i = 0; i < d.indices.size(); ++i) {
    const auto off = tensor_field_offset(2, 0) + i * (d.index_size == IndexSize::i32 ? 4U : 2U);
    if (i >= d.tile_dim[1] && d.indices[i] != 0) {
      return err(Code::reserved_nonzero, off,
                 "row index slot " + std::to_string(i) + " beyond the index count must be 0");
    }
    if (d.index_size == IndexSize::i16 && d.indices[i] > 0xFFFFU) {
      return err(Code::bad_dimension, off,
                 "row index " + std::to_string(d.indices[i]) + " does not fit 16 bits");
    }
  }
  return std::nullopt;
}

std::optional<DescriptorError> check_iterate(const TensorDescriptor& d) {
  const auto g2 = tensor_field_offset(2, 0);
  if (!d.iterate) {
    if (d.iterate_count != 0 || d.iterate_lds_increment != 0 || d.iterate_global_increment != 0) {
      return err(Code::bad_iterate, g2, "iterate fields set while iterate mode is off");
    }
    return std::nullopt;
  }
  if (d.iterate_count == 0 || d.iterate_count > kTensorMaxIterations) {
    return err(Code::bad_iterate, tensor_field_offset(2, 3),
               "iterate count " + std::to_string(d.iterate_count) + " outside 1..256");
  }
  if (d.iterate_global_increment >= kTensorStrideLimit) {
    return err(Code::bad_iterate, tensor_field_offset(2, 2),
               "iterate global increment exceeds 48 bits");
  }
  if (d.tensor_dim[3] != 0 || d.tensor_dim[4] != 0 || d.tile_dim[3] != 0 || d.tile_dim[4] != 0 ||
      d.stride[2] != 0 || d.stride[3] != 0) {
    return err(Code::bad_iterate, tensor_field_offset(2, 1),
               "iterate mode reuses group2: tensor rank must be at most 3 (dims 3 and 4 unset)");
  }
  return std::nullopt;
}

// Non-gather dims 2..4: all absent (2-D, d2 form) or all present (d4 form).
std::optional<DescriptorError> check_rank(const TensorDescriptor& d) {
  const auto g2 = tensor_field_offset(2, 0);
  if (d.iterate) {
    if (d.tensor_dim[2] == 0 && d.tile_dim[2] > 1) {
      return err(Code::bad_dimension, tensor_field_offset(1, 4),
                 "tile_dim2 > 1 on a tensor without dim 2");
    }
    if (d.tensor_dim[2] != 0 && d.tile_dim[2] == 0) {
      return err(Code::bad_dimension, tensor_field_offset(1, 4), "tile_dim2 is 0 on a 3-D tensor");
    }
    return std::nullopt;
  }
  const unsigned present = (d.tensor_dim[2] != 0) + (d.tensor_dim[3] != 0) + (d.tensor_dim[4] != 0);
  if (present == 0) {
    if (d.tile_dim[2] > 1 || d.tile_dim[3] != 0 || d.tile_dim[4] != 0 || d.stride[2] != 0 ||
        d.stride[3] != 0) {
      return err(Code::bad_dimension, g2,
                 "2-D descriptor (tensor dims 2..4 absent) with a tile dim or stride above dim 1");
    }
    return std::nullopt;
  }
  if (present != 3) {
    return err(Code::bad_dimension, g2,
               "tensor dims 2..4 must be all absent (2-D) or all at least 1 (3-D..5-D)");
  }
  for (unsigned i = 2; i < kTensorMaxDims; ++i) {
    if (d.tile_dim[i] == 0) {
      return err(Code::bad_dimension, i == 2 ? tensor_field_offset(1, 4) : g2,
                 "tile_dim" + std::to_string(i) + " is 0 on a tensor of rank > 2");
    }
  }
  return std::nullopt;
}

}  // namespace

bool TensorDescriptor::uses_four_groups() const {
  for (auto w : pack_groups23(*this)) {
    if (w != 0) return true;
  }
  return false;
}

std::uint64_t TensorDescriptor::tile_elements() const {
  std::uint64_t n = 1;
  for (unsigned i = 0; i < kTensorMaxDims; ++i)
    n *= tile_extent(i);  // <= 65535^5 < 2^80: see validate
  return n;
}

std::optional<DescriptorError> validate(const TensorDescriptor& d) {
  if (d.pred > 1)
    return err(Code::bad_predicate, 0, "pred field is " + std::to_string(d.pred) + " (0 or 1)");
  if (d.global_addr >= kTensorGlobalAddressLimit) {
    return err(Code::address_out_of_range, tensor_field_offset(0, 2),
               "global address exceeds 57 bits");
  }
  if (!d.gather && d.index_size != IndexSize::i16) {
    return err(Code::reserved_nonzero, 0, "index size set without gather mode");
  }
  const auto g1 = tensor_field_offset(1, 0);
  if (d.element_bytes != 1 && d.element_bytes != 2 && d.element_bytes != 4 &&
      d.element_bytes != 8) {
    return err(Code::bad_element_size, g1,
               "element size " + std::to_string(d.element_bytes) + " bytes (1, 2, 4 or 8)");
  }
  if (d.atomic_barrier) {
    if (d.barrier_addr % 8 != 0 || d.barrier_addr >= kTensorBarrierAddressLimit) {
      return err(Code::bad_barrier, tensor_field_offset(1, 1),
                 "atomic barrier LDS address " + std::to_string(d.barrier_addr) +
                     " must be 8-byte aligned and below 512 KiB");
    }
  } else if (d.barrier_addr != 0) {
    return err(Code::bad_barrier, tensor_field_offset(1, 1),
               "barrier address set while the atomic barrier is off");
  }
  if (d.pad) {
    if (!is_pow2(d.pad_interval) || d.pad_interval < 2 || d.pad_interval > 256) {
      return err(
          Code::bad_padding, g1,
          "pad interval " + std::to_string(d.pad_interval) + " dwords: power of two in [2, 256]");
    }
    if (d.pad_amount < 1 || d.pad_amount > 128) {
      return err(Code::bad_padding, g1,
                 "pad amount " + std::to_string(d.pad_amount) + " dwords: [1, 128]");
    }
  } else if (d.pad_interval != 0 || d.pad_amount != 0) {
    return err(Code::bad_padding, g1, "pad interval/amount set while padding is off");
  }
  if (d.tensor_dim[0] == 0)
    return err(Code::bad_dimension, tensor_field_offset(1, 1), "tensor_dim0 is 0");
  if (d.tensor_dim[1] == 0)
    return err(Code::bad_dimension, tensor_field_offset(1, 2), "tensor_dim1 is 0");
  if (d.tile_dim[0] == 0)
    return err(Code::bad_dimension, tensor_field_offset(1, 3), "tile_dim0 is 0");
  if (!d.gather && d.tile_dim[1] == 0)
    return err(Code::bad_dimension, tensor_field_offset(1, 4), "tile_dim1 is 0");
  static constexpr std::uint64_t kStrideOffset[4] = {4 * 9, 4 * 10 + 2, 4 * 14, 4 * 16};
  for (unsigned i = 0; i < d.stride.size(); ++i) {
    if (d.stride[i] >= kTensorStrideLimit) {
      return err(Code::bad_stride, kStrideOffset[i],
                 "tensor_dim" + std::to_string(i) + "_stride exceeds 48 bits");
    }
  }
  if (d.gather) {
    if (auto e = check_gather(d)) return e;
    if (d.iterate_count != 0 || d.iterate_lds_increment != 0 || d.iterate_global_increment != 0) {
      return err(Code::bad_iterate, tensor_field_offset(2, 0), "iterate fields set in gather mode");
    }
  } else {
    for (auto ix : d.indices) {
      if (ix != 0)
        return err(Code::reserved_nonzero, tensor_field_offset(2, 0),
                   "row indices set without gather mode");
    }
    if (auto e = check_iterate(d)) return e;
    if (auto e = check_rank(d)) return e;
  }
  // The tile (with padding) must fit the 32-bit LDS address space. 65535^5
  // elements would overflow 64 bits, hence the checked product.
  std::optional<std::uint64_t> bytes = d.element_bytes;
  for (unsigned i = 0; i < kTensorMaxDims && bytes; ++i)
    bytes = checked_mul(*bytes, d.tile_extent(i));
  if (bytes && d.pad) {
    const std::uint64_t pads = (*bytes - 1) / (4ULL * d.pad_interval);
    bytes = checked_mul_add(pads, 4ULL * d.pad_amount, *bytes);
  }
  if (!bytes || *bytes > (std::uint64_t{1} << 32)) {
    return err(Code::bad_dimension, tensor_field_offset(1, 3),
               "tile does not fit the 32-bit LDS address space");
  }
  return std::nullopt;
}

TensorDwords pack(const TensorDescriptor& d, GatherBitLayout layout) {
  if (auto e = validate(d)) throw DescriptorException(*e);
  const GatherBits gb = gather_bits(layout);
  TensorDwords w{};
  // group0
  w[0] = d.pred | (d.gather ? 1U << gb.gather : 0U) |
         (d.gather && d.index_size == IndexSize::i32 ? 1U << gb.index32 : 0U);
  w[1] = d.lds_addr;
  w[2] = lo32(d.global_addr);
  w[3] = static_cast<std::uint32_t>((d.global_addr >> 32) & 0x1FFFFFFU) | 2U << 30;
  // group1
  const auto size_log2 = static_cast<std::uint32_t>(std::countr_zero(d.element_bytes));
  const std::uint32_t interval_enc =
      d.pad ? static_cast<std::uint32_t>(std::countr_zero(d.pad_interval)) - 1 : 0;
  const std::uint32_t amount_enc = d.pad ? d.pad_amount - 1 : 0;
  w[4] = std::uint32_t{d.workgroup_mask} | size_log2 << 16 | std::uint32_t{d.atomic_barrier} << 18 |
         std::uint32_t{d.iterate} << 19 | std::uint32_t{d.pad} << 20 |
         std::uint32_t{d.early_timeout} << 21 | interval_enc << 22 | amount_enc << 25;
  w[5] = (d.barrier_addr >> 3) | lo16(d.tensor_dim[0]) << 16;
  w[6] = (d.tensor_dim[0] >> 16) | lo16(d.tensor_dim[1]) << 16;
  w[7] = (d.tensor_dim[1] >> 16) | std::uint32_t{d.tile_dim[0]} << 16;
  w[8] = std::uint32_t{d.tile_dim[1]} | std::uint32_t{d.tile_dim[2]} << 16;
  w[9] = lo32(d.stride[0]);
  w[10] = lo16(d.stride[0] >> 32) | lo16(d.stride[1]) << 16;
  w[11] = static_cast<std::uint32_t>(d.stride[1] >> 16);
  const auto g23 = pack_groups23(d);
  for (unsigned k = 0; k < 8; ++k) w[12 + k] = g23[k];
  return w;
}

Decoded<TensorDescriptor> unpack(std::span<const std::uint32_t, kTensorDwords> w,
                                 GatherBitLayout layout) {
  const GatherBits gb = gather_bits(layout);
  TensorDescriptor d;
  // group0
  const std::uint32_t known0 = 3U | 1U << gb.gather | 1U << gb.index32;
  if ((w[0] & ~known0) != 0)
    return err(Code::reserved_nonzero, 0, "group0 dword0 reserved bits [29:2] set");
  d.pred = static_cast<std::uint8_t>(w[0] & 3U);
  d.gather = (w[0] >> gb.gather & 1U) != 0;
  const bool index32 = (w[0] >> gb.index32 & 1U) != 0;
  if (index32 && !d.gather)
    return err(Code::reserved_nonzero, 0, "32-bit index flag set without gather mode");
  d.index_size = index32 ? IndexSize::i32 : IndexSize::i16;
  d.lds_addr = w[1];
  if ((w[3] >> 30) != 2U) {
    return err(Code::bad_type_field, 12,
               "group0 type field [127:126] is " + std::to_string(w[3] >> 30) + ", expected 2");
  }
  if ((w[3] & 0x3E000000U) != 0)
    return err(Code::reserved_nonzero, 12, "group0 bits [125:121] set");
  d.global_addr = w[2] | std::uint64_t{w[3] & 0x1FFFFFFU} << 32;
  // group1
  d.workgroup_mask = static_cast<std::uint16_t>(w[4] & 0xFFFFU);
  d.element_bytes = 1U << (w[4] >> 16 & 3U);
  d.atomic_barrier = (w[4] >> 18 & 1U) != 0;
  d.iterate = (w[4] >> 19 & 1U) != 0;
  d.pad = (w[4] >> 20 & 1U) != 0;
  d.early_timeout = (w[4] >> 21 & 1U) != 0;
  const std::uint32_t interval_enc = w[4] >> 22 & 7U;
  const std::uint32_t amount_enc = w[4] >> 25 & 0x7FU;
  if (d.pad) {
    d.pad_interval = 1U << (interval_enc + 1);
    d.pad_amount = amount_enc + 1;
  } else if (interval_enc != 0 || amount_enc != 0) {
    return err(Code::reserved_nonzero, 16, "pad interval/amount bits set while padding is off");
  }
  d.barrier_addr = (w[5] & 0xFFFFU) << 3;
  d.tensor_dim[0] = w[5] >> 16 | (w[6] & 0xFFFFU) << 16;
  d.tensor_dim[1] = w[6] >> 16 | (w[7] & 0xFFFFU) << 16;
  d.tile_dim[0] = static_cast<std::uint16_t>(w[7] >> 16);
  d.tile_dim[1] = static_cast<std::uint16_t>(w[8] & 0xFFFFU);
  d.tile_dim[2] = static_cast<std::uint16_t>(w[8] >> 16);
  d.stride[0] = w[9] | std::uint64_t{w[10] & 0xFFFFU} << 32;
  d.stride[1] = (w[10] >> 16) | std::uint64_t{w[11]} << 16;
  // groups 2/3
  const auto g = w.subspan<12, 8>();
  if (d.gather) {
    if (d.index_size == IndexSize::i16) {
      for (unsigned k = 0; k < 8; ++k) {
        d.indices[2 * k] = g[k] & 0xFFFFU;
        d.indices[2 * k + 1] = g[k] >> 16;
      }
    } else {
      for (unsigned k = 0; k < 8; ++k) d.indices[k] = g[k];
    }
  } else if (d.iterate) {
    d.tensor_dim[2] = g[0];
    d.iterate_lds_increment = g[1];
    d.iterate_global_increment = g[2] | std::uint64_t{g[3] & 0xFFFFU} << 32;
    d.iterate_count = (g[3] >> 16) + 1;
    for (unsigned k = 4; k < 8; ++k) {
      if (g[k] != 0)
        return err(Code::reserved_nonzero, tensor_field_offset(3, k - 4),
                   "group3 must be 0 in iterate mode");
    }
  } else {
    d.tensor_dim[2] = g[0];
    d.tensor_dim[3] = g[1];
    d.stride[2] = g[2] | std::uint64_t{g[3] & 0xFFFFU} << 32;
    d.tile_dim[3] = static_cast<std::uint16_t>(g[3] >> 16);
    d.stride[3] = g[4] | std::uint64_t{g[5] & 0xFFFFU} << 32;
    d.tensor_dim[4] = g[5] >> 16 | (g[6] & 0xFFFFU) << 16;
    d.tile_dim[4] = static_cast<std::uint16_t>(g[6] >> 16);
    if (g[7] != 0)
      return err(Code::reserved_nonzero, tensor_field_offset(3, 3), "group3 dword3 is reserved");
  }
  if (auto e = validate(d)) return *e;
  return d;
}

}  // namespace tdmsim::format
