// Functional model of one Tensor Data Mover instruction: what
// tensor_load_to_lds / tensor_store_from_lds do to memory, bit-exactly, given
// a descriptor (tensor_descriptor.h). Timing is the simulator's business.
//
// Semantics (shared/hardware.md 1.4-1.6; docs/descriptor-format.md):
// - The tile origin is global_addr. Element (i0..i4) of the tile lies at
//   global_addr + element_bytes * (i0 + i1*stride[0] + i2*stride[1] +
//   i3*stride[2] + i4*stride[3]); in gather mode i1 is replaced by indices[i1].
// - Elements with a coordinate >= tensor_dim (including gathered row indices
//   >= tensor_dim1) are out of bounds: zero-filled in LDS on load, not written
//   on store.
// - The tile lands in LDS contiguously, dim 0 fastest, from lds_addr. With
//   padding, after every pad_interval dwords written, pad_amount dwords are
//   skipped (their contents are left unchanged).
// - Iterate mode repeats the transfer iterate_count times, adding the LDS and
//   global increments (bytes) each time.
// - pred = 0 makes the instruction a no-op. Multicast, atomic barrier and
//   early timeout do not change the bytes moved and are ignored here.
// Memory safety: an in-bounds element whose bytes lie outside the global view,
// or an LDS footprint beyond the LDS buffer, throws DescriptorException
// (global_out_of_bounds / lds_out_of_bounds) before any byte is written; on
// hardware that would be a memory fault.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "descriptors/format/tensor_descriptor.h"

namespace tdmsim::format {

struct TensorMoveResult {
  bool executed = false;           // false when pred == 0
  std::uint32_t iterations = 0;    // transfers performed (iterate_count, else 1)
  std::uint64_t elements = 0;      // tile elements handled, all iterations
  std::uint64_t oob_elements = 0;  // of those, out of bounds (zero-filled / skipped)
  std::uint64_t global_bytes = 0;  // bytes read from (load) or written to (store) global memory
  std::uint64_t lds_end = 0;       // one past the highest LDS byte the payload touched
};

// LDS offset, relative to lds_addr, of payload byte `p` after padding.
std::uint64_t padded_lds_offset(const TensorDescriptor& d, std::uint64_t p);
// LDS bytes one transfer spans from lds_addr (payload plus interior padding).
std::uint64_t lds_footprint(const TensorDescriptor& d);

// `global` holds the bytes at global addresses [global_base, global_base + size);
// `lds` is the workgroup's LDS from address 0. Throws DescriptorException for
// an invalid descriptor or a transfer outside either buffer.
TensorMoveResult tensor_mover_load(const TensorDescriptor& d, std::span<const std::byte> global,
                   std::uint64_t global_base, std::span<std::byte> lds);

// The reverse transfer (scatter in gather mode). Padding on a store is an
// unsupported_operation, as on the hardware (hardware.md 1.4).
TensorMoveResult tensor_mover_store(const TensorDescriptor& d, std::span<const std::byte> lds,
                    std::span<std::byte> global, std::uint64_t global_base);

}  // namespace tdmsim::format
