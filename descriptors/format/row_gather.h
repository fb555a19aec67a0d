// Builds the tensor-mover gather descriptors that bring a list of rows of a 2-D tensor
// into LDS (the MoE token-row gather): one instruction per chunk of 16 rows
// (16-bit indices) or 8 rows (32-bit indices), as Triton and the MLIR
// lowering split them (shared/hardware.md 1.6). Rows land contiguously in LDS
// in list order; indices >= tensor_rows read as zero rows, so padding rows of
// a block can be passed as any index past the end (e.g. the plan's sentinel).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "descriptors/format/tensor_descriptor.h"

namespace tdmsim::format {

struct RowGatherSpec {
  std::uint64_t global_addr = 0;  // byte address of row 0's first copied element
  std::uint32_t tensor_rows = 0;  // rows that exist (tensor_dim1)
  std::uint32_t tensor_cols =
      0;  // elements that exist in a row from the first copied one (tensor_dim0)
  std::uint16_t tile_cols = 0;   // elements copied per row (tile_dim0)
  std::uint64_t row_stride = 0;  // elements between consecutive rows
  std::uint32_t element_bytes = 2;
  std::uint32_t lds_addr = 0;           // LDS byte address of the first row
  std::optional<IndexSize> index_size;  // unset: i16 when every index fits, else i32
  std::uint32_t pad_interval = 0;       // dwords; 0 = no padding
  std::uint32_t pad_amount = 0;         // dwords
  std::uint16_t workgroup_mask = 0;
};

// Index width the spec asks for, or the narrowest that holds every row index.
IndexSize gather_index_size(const RowGatherSpec& spec, std::span<const std::uint32_t> rows);

// One descriptor per chunk, in order; chunk c starts at LDS byte
// lds_addr + padded offset of c * capacity * row bytes (padding restarts with
// each instruction, so the combined layout equals one padded stream when a
// chunk's bytes are a multiple of the pad interval). Throws
// DescriptorException if a descriptor would be invalid (e.g. element size 3,
// a 16-bit index that does not fit); an empty row list gives no descriptors.
std::vector<TensorDescriptor> make_row_gather(const RowGatherSpec& spec,
                                              std::span<const std::uint32_t> rows);

}  // namespace tdmsim::format
