// The tensor descriptor, modelled on the gfx1250 Tensor Data Mover (the
// "tensor mover" here; TDM in this project is the MoE unit) descriptor (shared/hardware.md section 1): a typed struct, pack() to the
// exact 20-dword SGPR image (group0 4 dwords, group1 8, group2 4, group3 4),
// unpack() that trusts nothing, and validate(). The functional model that
// executes a descriptor lives in tensor_mover.h. Layout tables:
// docs/descriptor-format.md, "Tensor descriptor".
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>

#include "descriptors/format/descriptor_error.h"
#include "workloads/specs/enums.h"

namespace tdmsim::format {

// Where group0 dword0 keeps the gather-enable and the index-size flag. Public
// sources disagree (hardware.md 1.3): the MLIR lowering
// (mlir/test/Conversion/AMDGPUToROCDL/gfx1250.mlir, make_gather_dma_base) sets
// bit 30 = gather, bit 31 = 32-bit indices; Triton (TDMUtility.cpp,
// fillTDMDescriptorForGatherScatter) uses bit 31 = gather, bit 30 = 32-bit
// indices. A tensor-descriptor file records which it was packed with (its
// header, tensor_file.h).
struct GatherBits {
  unsigned gather;   // dword0 bit: gather/scatter mode enable
  unsigned index32;  // dword0 bit: set => 32-bit row indices
};
constexpr GatherBits gather_bits(GatherBitLayout layout) {
  return layout == GatherBitLayout::triton ? GatherBits{31, 30} : GatherBits{30, 31};
}

inline constexpr unsigned kTensorMaxDims = 5;
inline constexpr unsigned kTensorDwords = 20;                     // 4 + 8 + 4 + 4
inline constexpr unsigned kTensorGroupDword[4] = {0, 4, 12, 16};  // first dword of each group
inline constexpr std::uint64_t kTensorGlobalAddressLimit = std::uint64_t{1} << 57;
inline constexpr std::uint64_t kTensorStrideLimit = std::uint64_t{1} << 48;
inline constexpr std::uint32_t kTensorBarrierAddressLimit = 1U << 19;  // 16 bits of addr >> 3
inline constexpr std::uint32_t kTensorMaxIterations = 256;  // documented range (hardware.md 1.5)

using TensorDwords = std::array<std::uint32_t, kTensorDwords>;

enum class IndexSize : std::uint8_t { i16, i32 };

// Rows a single gather instruction can carry: 16 at 16 bits, 8 at 32 bits.
constexpr std::uint32_t gather_capacity(IndexSize s) { return s == IndexSize::i32 ? 8 : 16; }

// One tensor-mover instruction's descriptor. Fields hold decoded values (element bytes,
// pad interval in dwords, iterate count), not the biased hardware encodings;
// pack()/unpack() convert. Unused fields must be zero so that pack/unpack is a
// bijection on valid descriptors (checked by validate()).
struct TensorDescriptor {
  // ---- group0
  std::uint8_t pred = 1;  // 0 = the instruction is a no-op (field [1:0]; 2 and 3 invalid)
  bool gather = false;    // gather (load) / scatter (store) of rows by index
  IndexSize index_size = IndexSize::i16;  // gather only
  std::uint32_t lds_addr = 0;             // LDS byte address of the tile
  std::uint64_t global_addr = 0;          // 57-bit global byte address of the tile origin
  // ---- group1
  std::uint16_t workgroup_mask = 0;  // multicast: one bit per workgroup of the cluster
  std::uint32_t element_bytes = 2;   // 1, 2, 4 or 8 (encoded as log2)
  bool atomic_barrier = false;
  std::uint32_t barrier_addr = 0;  // LDS byte address of the barrier (8-aligned) when enabled
  bool iterate = false;
  bool pad = false;
  bool early_timeout = false;
  std::uint32_t pad_interval = 0;  // dwords written between pads: 2..256, power of two
  std::uint32_t pad_amount = 0;    // dwords skipped per pad: 1..128
  // dim 0 is innermost (contiguous). Dims 2..4 live in group2/3: raw value 0
  // means "absent" (the 2-group d2 form); all three present means the d4 form.
  std::array<std::uint32_t, kTensorMaxDims> tensor_dim{};
  // tile_dim[1] is the number of valid row indices in gather mode.
  std::array<std::uint16_t, kTensorMaxDims> tile_dim{};
  // stride[d] = elements between consecutive coordinates of dim d+1
  // (hardware "tensor_dim{d}_stride"); the innermost stride is implicitly 1.
  std::array<std::uint64_t, kTensorMaxDims - 1> stride{};
  // ---- group2 in iterate mode (replaces tensor_dim3, tensor_dim2_stride, tile_dim3)
  std::uint32_t iterate_lds_increment = 0;     // bytes added to lds_addr per iteration
  std::uint64_t iterate_global_increment = 0;  // bytes added to global_addr (48-bit)
  std::uint32_t iterate_count = 0;             // 1..256 iterations when enabled
  // ---- group2/3 in gather mode: row indices, the first tile_dim[1] used
  std::array<std::uint32_t, 16> indices{};

  bool operator==(const TensorDescriptor&) const = default;

  std::uint32_t index_count() const { return gather ? tile_dim[1] : 0; }
  // Group2/3 non-zero: the compiler would emit the 4-group (d4) instruction form.
  bool uses_four_groups() const;
  // Effective extent of dim d (absent dims count as 1).
  std::uint32_t tensor_extent(unsigned d) const { return tensor_dim[d] == 0 ? 1 : tensor_dim[d]; }
  std::uint32_t tile_extent(unsigned d) const { return tile_dim[d] == 0 ? 1 : tile_dim[d]; }
  // Elements in the tile of one instruction (one iteration).
  std::uint64_t tile_elements() const;
};

// Byte offset, in the 80-byte SGPR image, of dword `dword` of group `group`.
constexpr std::uint64_t tensor_field_offset(unsigned group, unsigned dword) {
  return 4ULL * (kTensorGroupDword[group] + dword);
}

// The first rule the descriptor breaks (offsets point into the packed image).
std::optional<DescriptorError> validate(const TensorDescriptor& d);

// The 20 dwords the instruction takes. Throws DescriptorException if invalid.
TensorDwords pack(const TensorDescriptor& d, GatherBitLayout layout);

// Fields from dwords: reserved bits and the type field are checked here, the
// remaining rules by validate(), which unpack() runs before returning.
Decoded<TensorDescriptor> unpack(std::span<const std::uint32_t, kTensorDwords> dwords,
                                 GatherBitLayout layout);

}  // namespace tdmsim::format
