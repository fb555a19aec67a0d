// The thin wmma-style layer between the MoE kernels and the matrix cores:
// one 16x16x16 bf16 -> fp32 tile shape, loads from LDS, multiply-accumulate
// and stores. nvcuda::wmma on NVIDIA (mma.sync tensor cores), rocWMMA on AMD
// (MFMA). fp8 operands are converted to bf16 in LDS before they reach this
// layer: every e4m3 value is exactly a bf16 value, and nvcuda::wmma has no
// fp8 shape (docs/gpu-kernels.md "fp8").
#pragma once

#include "kernels/hip/hip_portability.h"

#if defined(__HIP_PLATFORM_AMD__) || defined(__HIPCC__) && !defined(__CUDACC__)
#include <hip/hip_bf16.h>
#include <rocwmma/rocwmma.hpp>
namespace tdmsim::gpu::mc {
namespace api = rocwmma;
using bf16 = hip_bfloat16;
}  // namespace tdmsim::gpu::mc
#else
#include <cuda_bf16.h>
#include <mma.h>
namespace tdmsim::gpu::mc {
namespace api = nvcuda::wmma;
using bf16 = __nv_bfloat16;
}  // namespace tdmsim::gpu::mc
#endif

namespace tdmsim::gpu::mc {

constexpr int kTile = 16;  // M = N = K of one matrix-core operation

// A: 16 rows x 16 k, row-major in LDS. B: 16 n x 16 k stored n-major (each
// output column's k values contiguous, as weight rows are), which is a
// column-major K x N operand. C: fp32 16 x 16.
using FragA = api::fragment<api::matrix_a, kTile, kTile, kTile, bf16, api::row_major>;
using FragB = api::fragment<api::matrix_b, kTile, kTile, kTile, bf16, api::col_major>;
using FragC = api::fragment<api::accumulator, kTile, kTile, kTile, float>;

__device__ __forceinline__ void zero(FragC& c) { api::fill_fragment(c, 0.0f); }

// `ld` in elements; a multiple of 8.
__device__ __forceinline__ void load_a(FragA& a, const bf16* p, unsigned ld) {
  api::load_matrix_sync(a, p, ld);
}
__device__ __forceinline__ void load_b(FragB& b, const bf16* p, unsigned ld) {
  api::load_matrix_sync(b, p, ld);
}
__device__ __forceinline__ void mma(FragC& c, const FragA& a, const FragB& b) {
  api::mma_sync(c, a, b, c);
}
// c += t * s, element by element (the layout of both fragments is the same,
// so no element needs its coordinates).
__device__ __forceinline__ void add_scaled(FragC& c, const FragC& t, float s) {
#pragma unroll
  for (int i = 0; i < c.num_elements; ++i) c.x[i] += t.x[i] * s;
}
// Row-major fp32 store to LDS or global memory; `ld` in elements.
__device__ __forceinline__ void store(float* p, const FragC& c, unsigned ld) {
  api::store_matrix_sync(p, c, ld, api::mem_row_major);
}

}  // namespace tdmsim::gpu::mc
