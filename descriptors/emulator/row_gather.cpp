#include "descriptors/emulator/row_gather.h"

#include <algorithm>
#include <cstddef>
#include <stdexcept>

#include "descriptors/format/row_gather.h"
#include "descriptors/format/tensor_mover.h"

namespace tdmsim::emu {
namespace {

// Where the emulated global memory view of the source starts: any 256-byte
// aligned address inside the tensor mover's 57-bit space would do.
constexpr std::uint64_t kGlobalBase = 0x10000000ull;
// tile_dim0 is a 16-bit field: rows wider than this are gathered in column
// slices of this many elements (a power of two keeps slices 4-byte aligned).
constexpr std::uint32_t kMaxTileCols = 32768;

}  // namespace

GatherStats gather_rows(const RowSource& src, std::span<const std::uint32_t> index,
                        std::uint32_t tile_rows, float* dst) {
  if (index.size() > tile_rows) throw std::invalid_argument("gather_rows: more indices than rows");
  const std::size_t cols = src.cols;
  std::fill(dst + index.size() * cols, dst + std::size_t{tile_rows} * cols, 0.0f);
  GatherStats stats;
  if (index.empty() || cols == 0) return stats;
  const std::span<const std::byte> global(reinterpret_cast<const std::byte*>(src.data),
                                          std::size_t{src.rows} * cols * sizeof(float));
  for (std::uint32_t c0 = 0; c0 < cols; c0 += kMaxTileCols) {
    const std::uint32_t width = std::min<std::uint32_t>(kMaxTileCols, src.cols - c0);
    format::RowGatherSpec spec;
    spec.global_addr = kGlobalBase + std::uint64_t{c0} * sizeof(float);
    spec.tensor_rows = src.rows;
    spec.tensor_cols = width;
    spec.tile_cols = static_cast<std::uint16_t>(width);
    spec.row_stride = cols;
    spec.element_bytes = sizeof(float);
    // The emulated LDS holds this slice's tile [index.size()][width]: the
    // destination itself when a row fits one slice, else a staging buffer.
    // (A kernel gathers K-tile by K-tile into a small LDS; the values are the same.)
    std::vector<float> staging;
    float* lds_tile = dst;
    if (width != cols) {
      staging.resize(index.size() * width);
      lds_tile = staging.data();
    }
    const std::span<std::byte> lds(reinterpret_cast<std::byte*>(lds_tile),
                                   index.size() * width * sizeof(float));
    for (const format::TensorDescriptor& d : format::make_row_gather(spec, index)) {
      (void)format::tensor_mover_load(d, global, kGlobalBase, lds);
      ++stats.instructions;
    }
    if (width != cols) {
      for (std::size_t i = 0; i < index.size(); ++i) {
        std::copy_n(staging.data() + i * width, width, dst + i * cols + c0);
      }
    }
  }
  for (std::uint32_t r : index) stats.rows_loaded += r < src.rows ? 1u : 0u;
  return stats;
}

}  // namespace tdmsim::emu
