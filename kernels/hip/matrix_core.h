// The thin wmma-style layer between the MoE kernels and the matrix cores:
// one 16x16x16 bf16 -> fp32 tile shape, loads from LDS, multiply-accumulate
// and stores. nvcuda::wmma on NVIDIA (mma.sync tensor cores), rocWMMA on AMD
// (MFMA). fp8 operands are converted to bf16 in LDS before they reach this
// layer: every e4m3 value is exactly a bf16 value, and nvcuda::wmma has no
// fp8 shape (docs/gpu-kernels.md "fp8").
#pragma once

#include <cstdint>

#include "kernels/hip/hip_portability.h"
#include "kernels/hip/lds_swizzle.h"

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

#if !(defined(__HIP_PLATFORM_AMD__) || defined(__HIPCC__) && !defined(__CUDACC__))
// NVIDIA: the same operations on register fragments of mma.sync, loaded from
// LDS with ldmatrix. nvcuda::wmma's loads compile to many narrow LDS
// instructions (no ldmatrix) and hide the element layout, which the epilogue
// and block scaling need; this is the layer's NVIDIA backend for the GEMM main
// loops (docs/gpu-kernels.md). Tiles are 16 rows x 32 bytes of K: 16 bf16
// (m16n8k16) or 32 e4m3 values (m16n8k32, sm_89+), with identical byte layouts.
#define TDMSIM_MMA_SYNC 1
namespace tdmsim::gpu::mc {

struct RegA { std::uint32_t r[4]; };  // 16 rows x 32 bytes of K
struct RegB { std::uint32_t r[4]; };  // 16 columns (two n8 halves) x 32 bytes of K
struct RegC { float c[2][4]; };       // 16 x 16 fp32, [n8 half][element]

__device__ __forceinline__ void ldsm_x4(std::uint32_t (&r)[4], const void* p) {
  const auto a = static_cast<unsigned>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}
// The loaders read a tile stored in the swizzled layout L (lds_swizzle.h:
// rows of L::kRowBytes = 16 L::kChunks bytes, chunks XOR-swizzled), which
// lds_swizzle.h shows hits 8 distinct bank groups per 8x8 matrix. `base` is
// the byte offset from `smem` of the warp's first fragment row, a multiple of
// L::kRowBytes (stage offset + row index x kRowBytes, the row a multiple of
// 8); the fragment starts `rows` rows further (a multiple of 8, usually a
// constant: it is added after the XOR, as an immediate); `ks` is the 32-byte K
// step (bytes [32 ks, 32 ks + 32) of each row).
// A: 16 rows x 32 bytes of K.
template <class L>
__device__ __forceinline__ void load_a(RegA& f, const unsigned char* smem, int base, int ks, int rows) {
  static_assert(L::kSwizzled, "the ldmatrix loaders address the swizzled layout");
  const int l = threadIdx.x % 32;
  const int y = lds::lane_y<L>(lds::a_lane_row(l), lds::a_lane_chunk(l));
  ldsm_x4(f.r, smem + lds::ldsm_offset<L>(base, y, ks, rows));
}
// B: 16 output columns stored as rows (K contiguous).
template <class L>
__device__ __forceinline__ void load_b(RegB& f, const unsigned char* smem, int base, int ks, int rows) {
  static_assert(L::kSwizzled, "the ldmatrix loaders address the swizzled layout");
  const int l = threadIdx.x % 32;
  const int y = lds::lane_y<L>(lds::b_lane_row(l), lds::b_lane_chunk(l));
  ldsm_x4(f.r, smem + lds::ldsm_offset<L>(base, y, ks, rows));
}
__device__ __forceinline__ void zero(RegC& c) {
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int e = 0; e < 4; ++e) c.c[h][e] = 0.0f;
}
// One mma.sync per n8 half of the 16 x 16 tile: shape and operand types in
// `SHAPE_TYPES`, the same register operands for every variant.
#define TDMSIM_MMA_SYNC_HALF(SHAPE_TYPES, c, a, b, h)                                                \
  asm volatile("mma.sync.aligned." SHAPE_TYPES " {%0, %1, %2, %3}, {%4, %5, %6, %7}, "               \
               "{%8, %9}, {%0, %1, %2, %3};\n"                                                     \
               : "+f"(c.c[h][0]), "+f"(c.c[h][1]), "+f"(c.c[h][2]), "+f"(c.c[h][3])                  \
               : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "r"(b.r[2 * h]),                \
                 "r"(b.r[2 * h + 1]))
// Operand types of a multiply: bf16 or f16 over 16 values of K (32 bytes), or
// e4m3 over 32.
enum class Operands { bf16, f16, e4m3 };
// c += a * b over 32 bytes of K.
template <Operands op>
__device__ __forceinline__ void mma(RegC& c, const RegA& a, const RegB& b) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    if constexpr (op == Operands::e4m3) {
      TDMSIM_MMA_SYNC_HALF("m16n8k32.row.col.f32.e4m3.e4m3.f32", c, a, b, h);
    } else if constexpr (op == Operands::f16) {
      TDMSIM_MMA_SYNC_HALF("m16n8k16.row.col.f32.f16.f16.f32", c, a, b, h);
    } else {
      TDMSIM_MMA_SYNC_HALF("m16n8k16.row.col.f32.bf16.bf16.f32", c, a, b, h);
    }
  }
}
#undef TDMSIM_MMA_SYNC_HALF
// fp8 through the f16 pipe: an e4m3 m16n8k32 fragment is two f16 m16n8k16
// fragments once converted in registers (every e4m3 value is exactly an f16
// value, and products are exact in fp32 either way). K is permuted the same
// way in A and B, so the sums are the same sums: step s takes A's registers
// 2s, 2s+1 and B's register s of each n8 half; the low two bytes of a
// register become f16 slots k 2t, 2t+1 and the high two k 2t+8, 2t+9.
__device__ __forceinline__ std::uint32_t e4m3x2_to_f16x2(std::uint32_t two) {
  std::uint32_t h;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;\n" : "=r"(h) : "h"(static_cast<unsigned short>(two)));
  return h;
}
__device__ __forceinline__ void a_step_f16(RegA& out, const RegA& a, int s) {
  const std::uint32_t x = a.r[2 * s], y = a.r[2 * s + 1];
  out.r[0] = e4m3x2_to_f16x2(x & 0xffffu);
  out.r[1] = e4m3x2_to_f16x2(y & 0xffffu);
  out.r[2] = e4m3x2_to_f16x2(x >> 16);
  out.r[3] = e4m3x2_to_f16x2(y >> 16);
}
__device__ __forceinline__ void b_step_f16(RegB& out, const RegB& b, int s) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const std::uint32_t x = b.r[2 * h + s];
    out.r[2 * h] = e4m3x2_to_f16x2(x & 0xffffu);
    out.r[2 * h + 1] = e4m3x2_to_f16x2(x >> 16);
  }
}
// Coordinates inside the 16 x 16 tile of element e of half h for this lane.
__device__ __forceinline__ int c_row(int e) { return (threadIdx.x % 32) / 4 + (e >= 2 ? 8 : 0); }
__device__ __forceinline__ int c_col(int h, int e) { return h * 8 + (threadIdx.x % 4) * 2 + (e & 1); }

}  // namespace tdmsim::gpu::mc
#endif
