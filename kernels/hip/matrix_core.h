// The thin matrix-core layer between the MoE kernels and the matrix cores:
// 16x16 fp32 tiles from bf16 (or e4m3) operands, loads from LDS,
// multiply-accumulate and stores. On AMD CDNA the MFMA instructions through
// the compiler builtins (wave64, below); on NVIDIA nvcuda::wmma (16x16x16) and
// the mma.sync fragments loaded with ldmatrix further down. fp8 operands reach
// the wmma-style interface as bf16 converted in LDS (every e4m3 value is
// exactly a bf16 value, and nvcuda::wmma has no fp8 shape); on gfx94x the
// AMD GEMM core multiplies e4m3 as copied (Frag8). docs/gpu-kernels.md "AMD CDNA".
#pragma once

#include <cstdint>

#include "kernels/hip/hip_portability.h"
#include "kernels/hip/lds_swizzle.h"

#if defined(__HIP_PLATFORM_AMD__) || defined(__HIPCC__) && !defined(__CUDACC__)
#include <hip/hip_bfloat16.h>
// AMD: MFMA, one wavefront of 64 lanes per instruction.
#define TDMSIM_MFMA 1
// The fp8 x fp8 MFMA (v_mfma_f32_16x16x32_fp8_fp8) exists on gfx940-942
// (operands FNUZ e4m3) and gfx950 (OCP e4m3); gfx90a has no fp8 and the
// kernels convert e4m3 to bf16 in LDS there. Device passes only.
#if defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__) || defined(__gfx950__)
#define TDMSIM_MFMA_FP8 1
#else
#define TDMSIM_MFMA_FP8 0
#endif
namespace tdmsim::gpu::mc {

using bf16 = hip_bfloat16;
constexpr int kTile = 16;       // M = N of one matrix-core operation
constexpr int kWaveLanes = 64;  // the lanes that execute one MFMA together
// K (in bf16 elements) of one fragment of the wmma-style interface: 64 bytes
// of K, two MFMAs of K 16 (bf16) or 32 (e4m3).
constexpr int kFragK = 32;

using bf16x4 = short __attribute__((ext_vector_type(4)));
using bf16x8 = short __attribute__((ext_vector_type(8)));
using f32x4 = float __attribute__((ext_vector_type(4)));

// Lane mapping of v_mfma_f32_16x16x16_bf16 (AMD CDNA3 ISA, "Dependent
// instructions / matrix layouts"; the same for 16x16x32_fp8_fp8 with 8-byte
// operands): lane l supplies A row l % 16 and B column l % 16 at the K group
// l / 16 (4 bf16 or 8 e4m3 values), and receives C rows 4 (l / 16) + i,
// i = 0..3, of column l % 16.
// A fragment here is 16 rows x 64 bytes of K read with ONE 16-byte LDS load
// per lane (ds_read_b128): lane l takes bytes [16 (l / 16), 16 (l / 16) + 16)
// of row l % 16. The first MFMA multiplies the low 8 bytes of every lane, the
// second the high 8: K is permuted the same way in A and B, so the two
// MFMAs sum exactly the 64 bytes of K. Why 16-byte loads: LDS serves a
// ds_read_b128 in 8 phases of 8 lanes (128 bytes each), and the 8 lanes of a
// phase read 8 consecutive rows at one chunk, which the padded layout puts in
// 8 distinct bank groups (lds_swizzle.h, "AMD"); 8-byte loads would serve 16
// rows a phase, two of which share a bank group (2-way conflict).
struct FragA { bf16x8 v; };  // 16 rows x 32 bf16 of K
struct FragB { bf16x8 v; };  // 16 output columns (stored as rows) x 32 bf16 of K
struct FragC {
  static constexpr int num_elements = 4;
  f32x4 x;  // rows c_row(i), column c_col()
};
struct Frag8 { long lo, hi; };  // 16 rows x 64 e4m3 of K

__device__ __forceinline__ int lane() { return int(threadIdx.x) % kWaveLanes; }
// Coordinates inside the 16 x 16 tile of accumulator element i of this lane.
__device__ __forceinline__ int c_row(int i) { return 4 * (lane() / 16) + i; }
__device__ __forceinline__ int c_col() { return lane() % 16; }

__device__ __forceinline__ void zero(FragC& c) { c.x = f32x4{0.0f, 0.0f, 0.0f, 0.0f}; }

// `p` at the fragment's first row and K; `ld_bytes` apart (a multiple of 16).
template <class V>
__device__ __forceinline__ V load16(const void* p, unsigned ld_bytes) {
  const auto* row = static_cast<const unsigned char*>(p) + (lane() % 16) * ld_bytes + 16 * (lane() / 16);
  return *reinterpret_cast<const V*>(row);
}
// `ld` in elements; a multiple of 8.
__device__ __forceinline__ void load_a(FragA& a, const bf16* p, unsigned ld) { a.v = load16<bf16x8>(p, 2 * ld); }
__device__ __forceinline__ void load_b(FragB& b, const bf16* p, unsigned ld) { b.v = load16<bf16x8>(p, 2 * ld); }
__device__ __forceinline__ void load8(Frag8& f, const std::uint8_t* p, unsigned ld_bytes) {
  const auto v = load16<long __attribute__((ext_vector_type(2)))>(p, ld_bytes);
  f.lo = v[0];
  f.hi = v[1];
}

__device__ __forceinline__ void mma(FragC& c, const FragA& a, const FragB& b) {
  const bf16x4 a0 = __builtin_shufflevector(a.v, a.v, 0, 1, 2, 3);
  const bf16x4 a1 = __builtin_shufflevector(a.v, a.v, 4, 5, 6, 7);
  const bf16x4 b0 = __builtin_shufflevector(b.v, b.v, 0, 1, 2, 3);
  const bf16x4 b1 = __builtin_shufflevector(b.v, b.v, 4, 5, 6, 7);
  c.x = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a0, b0, c.x, 0, 0, 0);
  c.x = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a1, b1, c.x, 0, 0, 0);
}
#if TDMSIM_MFMA_FP8
// e4m3 x e4m3 in the target's fp8 flavour (gpu_numerics.h, fp8_bits).
__device__ __forceinline__ void mma(FragC& c, const Frag8& a, const Frag8& b) {
  c.x = __builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8(a.lo, b.lo, c.x, 0, 0, 0);
  c.x = __builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8(a.hi, b.hi, c.x, 0, 0, 0);
}
#endif
// c += t * s, element by element (both fragments have the same layout).
__device__ __forceinline__ void add_scaled(FragC& c, const FragC& t, float s) { c.x += t.x * s; }
// Row-major fp32 store to LDS or global memory; `ld` in elements.
__device__ __forceinline__ void store(float* p, const FragC& c, unsigned ld) {
#pragma unroll
  for (int i = 0; i < 4; ++i) p[c_row(i) * ld + c_col()] = c.x[i];
}

}  // namespace tdmsim::gpu::mc

#else
#include <cuda_bf16.h>
#include <mma.h>
namespace tdmsim::gpu::mc {
namespace api = nvcuda::wmma;
using bf16 = __nv_bfloat16;
}  // namespace tdmsim::gpu::mc

namespace tdmsim::gpu::mc {

constexpr int kTile = 16;  // M = N = K of one matrix-core operation
constexpr int kWaveLanes = 32;
constexpr int kFragK = 16;  // K of one fragment

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
