// Hopper's warpgroup matrix instructions (wgmma) for the thin matrix-core
// layer: the NVIDIA sm_90a backend of the GEMM main loops for tiles of at
// least 64 rows (docs/gpu-kernels.md "wgmma"). A warpgroup (4 warps, 128
// threads) multiplies a 64 x N tile of A by an N-row tile of B, both read
// straight from LDS through matrix descriptors, into fp32 registers; the
// instruction runs asynchronously until waited for.
//
// Why these descriptors fit our tiles: the copy pipeline stores A and B rows
// of R = 32, 64 or 128 bytes with their 16-byte chunks XOR-swizzled by
// lds::swizzle_mask (lds_swizzle.h). With the stage 1024-byte aligned, the
// XOR term of row r is bits 7.. of the row's address (r R) and the chunk is
// bits 4.., which is exactly the 32B / 64B / 128B swizzle mode of the
// hardware (byte address bits [4, 4 + log2(R/16)) XORed with the bits
// [7, 7 + log2(R/16))). So the tiles the mma.sync loop reads are already
// K-major swizzled wgmma operands: core matrices of 8 rows, 8 rows R * 8
// bytes apart (the stride byte offset), a K step of 32 bytes advances the
// start address by 32.
#pragma once

#include <cstdint>

#if defined(__CUDA_ARCH__) && defined(TDMSIM_WGMMA) && TDMSIM_WGMMA && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "TDMSIM_WGMMA needs the sm_90a target (wgmma is an arch-specific feature)"
#endif

namespace tdmsim::gpu::wg {

enum class Operands { bf16, e4m3 };

// Swizzle mode field of the descriptor for rows of `row_bytes`.
__host__ __device__ constexpr std::uint64_t swizzle_mode(int row_bytes) {
  return row_bytes == 128 ? 1 : row_bytes == 64 ? 2 : 3;  // 128B, 64B, 32B
}

// Shared-memory matrix descriptor of a K-major swizzled operand whose first
// row is at shared address `addr` (the LDS window address; its 8-row group
// aligned to 8 * row_bytes, the K step added on top). Fields (PTX ISA,
// "Matrix Descriptor Format"): start address >> 4 in bits 0-13, leading byte
// offset >> 4 in 16-29 (unused by swizzled K-major layouts whose K step fits
// in a row; 1 by convention), stride byte offset >> 4 in 32-45 (8 rows),
// base offset 0 in 49-51 (aligned pattern), swizzle mode in 62-63.
__host__ __device__ constexpr std::uint64_t descriptor(std::uint32_t addr, int row_bytes) {
  return (std::uint64_t{(addr & 0x3FFFFu) >> 4}) | (std::uint64_t{1} << 16) |
         (std::uint64_t{(8u * static_cast<std::uint32_t>(row_bytes)) >> 4} << 32) |
         (swizzle_mode(row_bytes) << 62);
}

template <int N, Operands op>
struct Mma;  // Mma<N, op>::run(d, desc_a, desc_b, accumulate): d (+)= A(64 x K) * B(N x K)^T

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// Orders this thread's register writes before the warpgroup's next wgmma.
__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Waits until at most `pending` committed groups of this warpgroup run.
template <int pending>
__device__ __forceinline__ void wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(pending) : "memory");
}
// Makes this thread's LDS writes (cp.async is a generic-proxy write) visible
// to wgmma, which reads LDS through the async proxy.
__device__ __forceinline__ void fence_lds_for_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// Stores a warpgroup's fp32 accumulators of an m64nN product into C (row
// stride `ld`): element i is row `row` (this thread's first: the part's first
// row + 16 (warp % 4) + lane / 4), + 8 for i % 4 >= 2, and column
// col0 + 8 (i / 4) + 2 (lane % 4) + i % 2 (PTX ISA, wgmma D fragment layout).
template <int kAcc>
__device__ __forceinline__ void store_accumulators(const float (&acc)[kAcc], int row, int col0, int ld, float* C) {
  static_assert(kAcc % 2 == 0);
  const int lane = threadIdx.x % 32;
  // Elements i and i + 1 (i even) are adjacent columns: one 8-byte store.
#pragma unroll
  for (int i = 0; i < kAcc; i += 2) {
    const int r = row + ((i % 4) >= 2 ? 8 : 0);
    const int c = col0 + 8 * (i / 4) + 2 * (lane % 4);
    *reinterpret_cast<float2*>(C + r * ld + c) = make_float2(acc[i], acc[i + 1]);
  }
}
// The register operands pin each accumulator in place; ptxas keeps them there
// between issue and wait only if nothing else touches them (it serialises the
// instruction otherwise and says so).
#include "kernels/hip/wgmma_ops.h"
#endif

}  // namespace tdmsim::gpu::wg
