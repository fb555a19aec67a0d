#include "descriptors/format/tensor_mover.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include "descriptors/format/checked_math.h"

namespace tdmsim::format {
namespace {

using Code = DescriptorErrorCode;
constexpr std::uint64_t kNoAddress = std::numeric_limits<std::uint64_t>::max();

[[noreturn]] void fail(Code c, std::uint64_t offset, std::string msg) {
  throw DescriptorException(DescriptorError{c, offset, std::move(msg)});
}

void require_valid(const TensorDescriptor& d) {
  if (auto e = validate(d)) throw DescriptorException(*e);
}

// Calls f(payload_offset, global_row_address, in_bounds_elements) for every
// row (run of tile_dim0 elements along dim 0) of one transfer, in LDS order.
// global_row_address is kNoAddress when the row is out of bounds or its
// address computation overflows (the caller treats the latter as a fault).
template <class F>
void for_each_row(const TensorDescriptor& d, std::uint64_t global_addr, F&& f) {
  const std::uint64_t eb = d.element_bytes;
  const std::uint64_t t0 = d.tile_extent(0);
  const std::uint64_t row_bytes = t0 * eb;
  const std::uint64_t in_row = std::min<std::uint64_t>(t0, d.tensor_extent(0));
  std::uint64_t row = 0;
  for (std::uint64_t i4 = 0; i4 < d.tile_extent(4); ++i4) {
    for (std::uint64_t i3 = 0; i3 < d.tile_extent(3); ++i3) {
      for (std::uint64_t i2 = 0; i2 < d.tile_extent(2); ++i2) {
        for (std::uint64_t i1 = 0; i1 < d.tile_extent(1); ++i1, ++row) {
          const std::uint64_t r = d.gather ? d.indices[i1] : i1;
          const bool in = r < d.tensor_extent(1) && i2 < d.tensor_extent(2) &&
                          i3 < d.tensor_extent(3) && i4 < d.tensor_extent(4);
          std::uint64_t addr = kNoAddress;
          bool overflow = false;
          if (in) {
            std::optional<std::uint64_t> e = checked_mul(r, d.stride[0]);
            if (e) e = checked_mul_add(i2, d.stride[1], *e);
            if (e) e = checked_mul_add(i3, d.stride[2], *e);
            if (e) e = checked_mul_add(i4, d.stride[3], *e);
            if (e) e = checked_mul_add(*e, eb, global_addr);
            if (e)
              addr = *e;
            else
              overflow = true;
          }
          f(row * row_bytes, addr, in ? in_row : 0, overflow);
        }
      }
    }
  }
}

// Checks the whole transfer against both buffers before anything is written.
void check_bounds(const TensorDescriptor& d, std::uint64_t global_size, std::uint64_t global_base,
                  std::uint64_t lds_size) {
  const std::uint32_t iters = d.iterate ? d.iterate_count : 1;
  const std::uint64_t foot = lds_footprint(d);
  for (std::uint32_t k = 0; k < iters; ++k) {
    const auto lds_base = checked_mul_add(k, d.iterate_lds_increment, d.lds_addr);
    const auto lds_end = lds_base ? checked_add(*lds_base, foot) : std::nullopt;
    if (!lds_end || *lds_end > lds_size) {
      fail(Code::lds_out_of_bounds, tensor_field_offset(0, 1),
           "transfer " + std::to_string(k) + " spans LDS bytes [" +
               std::to_string(lds_base.value_or(0)) + ", +" + std::to_string(foot) +
               ") beyond the " + std::to_string(lds_size) + "-byte LDS");
    }
    const auto gaddr = checked_mul_add(k, d.iterate_global_increment, d.global_addr);
    if (!gaddr)
      fail(Code::global_out_of_bounds, tensor_field_offset(2, 2),
           "iterate global address overflows");
    for_each_row(d, *gaddr, [&](std::uint64_t, std::uint64_t addr, std::uint64_t n, bool overflow) {
      if (n == 0) return;
      const std::uint64_t bytes = n * d.element_bytes;
      if (overflow || addr < global_base || addr - global_base > global_size ||
          global_size - (addr - global_base) < bytes) {
        fail(Code::global_out_of_bounds, tensor_field_offset(0, 2),
             "in-tensor row at global address " +
                 (overflow ? std::string("(overflow)") : std::to_string(addr)) + " (" +
                 std::to_string(bytes) + " bytes) lies outside the global view [" +
                 std::to_string(global_base) + ", +" + std::to_string(global_size) + ")");
      }
    });
  }
}

// Splits n payload bytes starting at payload offset p into runs that are
// contiguous in padded LDS: f(lds_offset_from_lds_addr, offset_in_run_source, length).
template <class F>
void for_each_segment(const TensorDescriptor& d, std::uint64_t p, std::uint64_t n, F&& f) {
  const std::uint64_t interval =
      d.pad ? 4ULL * d.pad_interval : std::numeric_limits<std::uint64_t>::max();
  std::uint64_t done = 0;
  while (done < n) {
    const std::uint64_t m = std::min(n - done, interval - (p + done) % interval);
    f(padded_lds_offset(d, p + done), done, m);
    done += m;
  }
}

}  // namespace

std::uint64_t padded_lds_offset(const TensorDescriptor& d, std::uint64_t p) {
  if (!d.pad || d.pad_interval == 0) return p;  // interval 0 only on invalid descriptors
  return p + p / (4ULL * d.pad_interval) * (4ULL * d.pad_amount);
}

std::uint64_t lds_footprint(const TensorDescriptor& d) {
  const std::uint64_t bytes = d.tile_elements() * d.element_bytes;
  return bytes == 0 ? 0 : padded_lds_offset(d, bytes - 1) + 1;
}

namespace {

// Calls row(lds_base, p, addr, n) for every row of every iteration of `d`
// (lds_base: the iteration's LDS base; p, addr, n as for_each_row), and keeps
// the accounting a load and a store share.
template <class Row>
void for_each_tile_row(const TensorDescriptor& d, TensorMoveResult& res, Row row) {
  res.executed = true;
  res.iterations = d.iterate ? d.iterate_count : 1;
  const std::uint64_t eb = d.element_bytes;
  const std::uint64_t t0 = d.tile_extent(0);
  for (std::uint32_t k = 0; k < res.iterations; ++k) {
    const std::uint64_t lds_base = d.lds_addr + std::uint64_t{k} * d.iterate_lds_increment;
    const std::uint64_t gaddr = d.global_addr + std::uint64_t{k} * d.iterate_global_increment;
    for_each_row(d, gaddr, [&](std::uint64_t p, std::uint64_t addr, std::uint64_t n, bool) {
      row(lds_base, p, addr, n);
      res.global_bytes += n * eb;
      res.oob_elements += t0 - n;
    });
    res.elements += d.tile_elements();
    res.lds_end = std::max(res.lds_end, lds_base + lds_footprint(d));
  }
}

}  // namespace

TensorMoveResult tensor_mover_load(const TensorDescriptor& d, std::span<const std::byte> global,
                   std::uint64_t global_base, std::span<std::byte> lds) {
  require_valid(d);
  TensorMoveResult res;
  if (d.pred == 0) return res;
  check_bounds(d, global.size(), global_base, lds.size());
  const std::uint64_t eb = d.element_bytes;
  const std::uint64_t t0 = d.tile_extent(0);
  for_each_tile_row(d, res, [&](std::uint64_t lds_base, std::uint64_t p, std::uint64_t addr,
                                std::uint64_t n) {
    std::byte* base = lds.data() + lds_base;
    const std::byte* src = n > 0 ? global.data() + (addr - global_base) : nullptr;
    for_each_segment(d, p, n * eb, [&](std::uint64_t off, std::uint64_t i, std::uint64_t m) {
      std::memcpy(base + off, src + i, m);
    });
    for_each_segment(d, p + n * eb, (t0 - n) * eb,
                     [&](std::uint64_t off, std::uint64_t, std::uint64_t m) {
                       std::memset(base + off, 0, m);  // out of bounds: zero-filled
                     });
  });
  return res;
}

TensorMoveResult tensor_mover_store(const TensorDescriptor& d, std::span<const std::byte> lds,
                    std::span<std::byte> global, std::uint64_t global_base) {
  require_valid(d);
  TensorMoveResult res;
  if (d.pred == 0) return res;
  if (d.pad) {
    fail(Code::unsupported_operation, tensor_field_offset(1, 0),
         "tensor_store_from_lds does not support LDS padding");
  }
  check_bounds(d, global.size(), global_base, lds.size());
  const std::uint64_t eb = d.element_bytes;
  for_each_tile_row(d, res, [&](std::uint64_t lds_base, std::uint64_t p, std::uint64_t addr,
                                std::uint64_t n) {
    if (n == 0) return;
    std::byte* dst = global.data() + (addr - global_base);
    const std::byte* base = lds.data() + lds_base;
    for_each_segment(d, p, n * eb, [&](std::uint64_t off, std::uint64_t i, std::uint64_t m) {
      std::memcpy(dst + i, base + off, m);
    });
  });
  return res;
}

}  // namespace tdmsim::format
