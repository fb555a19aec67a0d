// Global -> LDS copies of 16 bytes that run while the workgroup computes
// (NVIDIA cp.async; on AMD a plain load and store, which the compiler
// schedules early). A copy of fewer than 16 bytes zero-fills the rest, so
// tile edges and padding rows need no branch in the copy loop.
#pragma once

#include <cstdint>

#include "kernels/hip/hip_portability.h"

namespace tdmsim::gpu {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
// `bytes` in [0, 16]; 0 reads nothing from `src` (which must still be a valid address).
__device__ __forceinline__ void copy16_async(void* dst_lds, const void* src, unsigned bytes) {
  const auto dst = static_cast<unsigned>(__cvta_generic_to_shared(dst_lds));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes));
}
__device__ __forceinline__ void async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// Waits until at most `pending` committed groups are still in flight.
template <int pending>
__device__ __forceinline__ void async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(pending));
}
#else
__device__ __forceinline__ void copy16_async(void* dst_lds, const void* src, unsigned bytes) {
  uint4 v = make_uint4(0, 0, 0, 0);
  if (bytes == 16) {
    v = *static_cast<const uint4*>(src);
  } else if (bytes > 0) {
    // The tail, byte by byte into words at static positions: a byte store at
    // a run-time index into `v` would put it in scratch memory (AMD: 32 bytes
    // of private segment per GEMM kernel, kernels.disassemble_amd).
    const auto* s = static_cast<const unsigned char*>(src);
    std::uint32_t w[4] = {0, 0, 0, 0};
#pragma unroll
    for (unsigned i = 0; i < 16; ++i) {
      if (i < bytes) w[i / 4] |= std::uint32_t{s[i]} << (8 * (i % 4));
    }
    v = make_uint4(w[0], w[1], w[2], w[3]);
  }
  *static_cast<uint4*>(dst_lds) = v;
}
__device__ __forceinline__ void async_commit() {}
template <int pending>
__device__ __forceinline__ void async_wait() {}
#endif

}  // namespace tdmsim::gpu
