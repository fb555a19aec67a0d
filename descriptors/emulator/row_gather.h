// The token-row gather of a fused-MoE tile job: the rows of one sorted block
// are copied from the activation tensor into the workgroup's A tile (LDS on
// the GPU), padding rows zero-filled. It runs through the tensor mover model
// (gfx1250 Tensor Data Mover): the row list becomes tensor-mover gather
// descriptors (format::make_row_gather, 16 rows per instruction with 16-bit
// indices, 8 with 32-bit) executed by format::tensor_mover_load into an
// emulated LDS, so the emulator exercises the same descriptors the TDM path
// of the simulator and the GPU kernels use (docs/emulator.md, "Gather").
#pragma once

#include <cstdint>
#include <span>

namespace tdmsim::emu {

// A row-major fp32 tensor [rows][cols] that tiles are gathered from.
struct RowSource {
  const float* data = nullptr;
  std::uint32_t rows = 0;
  std::uint32_t cols = 0;
};

// What one gather did, for statistics and tests.
struct GatherStats {
  std::uint32_t instructions = 0;  // tensor-mover gather instructions issued
  std::uint32_t rows_loaded = 0;   // rows read from the source
};

// dst [tile_rows][src.cols] (row-major): dst[i] = src row index[i] for
// i < index.size(), zero for the remaining rows. An index >= src.rows reads as
// zeros (the Tensor Data Mover's out-of-bounds rule: pass src.rows for a
// padding row). index.size() <= tile_rows. Throws std::invalid_argument for
// too many indices, format::DescriptorException if a descriptor is invalid.
GatherStats gather_rows(const RowSource& src, std::span<const std::uint32_t> index,
                        std::uint32_t tile_rows, float* dst);

}  // namespace tdmsim::emu
