// Hopper's Tensor Memory Accelerator for the thin matrix-core layer: one
// thread asks the copy engine for a 2-D box of a row-major tensor and the
// engine writes it into LDS, 128B-swizzled, and counts its bytes down on an
// mbarrier (docs/gpu-kernels.md "TMA"). The warp-specialized main loop loads
// its B tiles (expert weight rows) this way: one instruction per K tile where
// cp.async took one per 16 bytes per thread, which kept the producer warps
// issue-bound (epilogue-2026-11-30/ncu: consumers waited on a full buffer in
// 45% of their samples while the producer rarely waited for an empty one).
// It is the NVIDIA counterpart of the gfx1250 Tensor Data Mover (the tensor
// mover, docs/descriptor-format.md); the A rows are a gather by token and
// stay on cp.async (Hopper's TMA has no row gather).
//
// The 128B swizzle writes byte address bits [4, 7) XORed with bits [7, 10):
// the layout of lds_swizzle.h for rows of 128 bytes in a 1024-byte aligned
// stage, which the wgmma descriptors (wgmma.h) already read.
#pragma once

#include <cstdint>

#include "kernels/hip/hip_portability.h"

namespace tdmsim::gpu::tma {

// A tensor map: 128 opaque bytes, 128-byte aligned (CUtensorMap's layout,
// kept opaque here so that the header builds without the CUDA driver API).
// Kernels take it inside a __grid_constant__ parameter: the copy engine
// reads it from parameter space.
struct alignas(128) Map {
  std::uint64_t opaque[16];
};

// The box a tile load asks for: `box_rows` rows of 64 bf16 (128 bytes).
constexpr int kBoxCols = 64;
constexpr int kRowBytes = 128;

// Host: encodes `map` for a row-major bf16 tensor of `rows` x `cols` elements
// at `base` (rows `cols` elements apart; cols * 2 a multiple of 16), read in
// boxes of kBoxCols x `box_rows` (<= 256) with the 128B swizzle and zeros
// outside the tensor. Returns false with `why` set where the driver cannot
// (no sm_90a build, or the driver refuses the shape).
bool encode_bf16_rows(Map& map, const void* base, std::uint64_t rows, std::uint64_t cols,
                      std::uint32_t box_rows, const char*& why);

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// Adds `bytes` to the transaction count the barrier's current phase waits
// for (no arrival: the issuing thread still arrives with its own copies).
__device__ __forceinline__ void expect_bytes(std::uint64_t* bar, std::uint32_t bytes) {
  const auto b = static_cast<std::uint32_t>(__cvta_generic_to_shared(bar));
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" ::"r"(b), "r"(bytes) : "memory");
}

// Loads the box whose first element is (row, col) into LDS at `dst` (1024-byte
// aligned), completing its bytes on `bar`.
__device__ __forceinline__ void load_box(std::uint32_t dst, const Map* map, std::uint32_t col,
                                         std::uint32_t row, std::uint64_t* bar) {
  const auto b = static_cast<std::uint32_t>(__cvta_generic_to_shared(bar));
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
      "[%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(col), "r"(row), "r"(b)
      : "memory");
}
#endif

}  // namespace tdmsim::gpu::tma
