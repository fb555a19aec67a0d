// The fused-MoE expert GEMMs, one workgroup per tile job of the plan
// (docs/moe-plan.md "Tile jobs"): gate/up (+ activation), its split-K
// reduction, the fp8 intermediate quantisation, down (+ routed weight and
// combine by atomic add), and the 1-stage kernel that does both for a slice of
// the intermediate. Every kernel is a template over the element type and the
// tile (M x N x K, 256 threads; 384 for the warp-specialized tiles of sm_90a,
// whose gate/up kernel is persistent: one workgroup an SM looping over the
// jobs); `pipeline_stages` buffers of A and B tiles stream through LDS with
// asynchronous copies. docs/gpu-kernels.md has the design and the numerics.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#if defined(__CUDACC__)
#include <cuda.h>  // CUtensorMap and its encoder's types (tma::encode_bf16_rows)
#endif

#include "kernels/hip/async_copy.h"
#include "kernels/hip/matrix_core.h"
#include "kernels/hip/mbarrier.h"
#include "kernels/hip/tma.h"
#include "kernels/hip/wgmma.h"
#include "descriptors/plan/kernel_rules.h"
#include "kernels/moe/moe_gpu.h"

namespace tdmsim::gpu {
namespace {

using mc::bf16;

constexpr int kWarps = kThreads / 32;  // 32-lane groups: the reductions' unit (half a wavefront on AMD)
// Groups of lanes that issue one matrix-core operation together: warps of 32
// on NVIDIA, wavefronts of 64 on AMD (MFMA). The GEMM cores split the tile
// over these.
constexpr int kWaves = kThreads / mc::kWaveLanes;
constexpr int kMaxStages = 6;
#ifndef TDMSIM_WGMMA
#define TDMSIM_WGMMA 0  // wgmma main loop for tiles of 64+ rows (sm_90a; build-gpu-runner.sh sets it)
#endif
#ifndef TDMSIM_WS_TMA
#define TDMSIM_WS_TMA 1  // the warp-specialized loop's B tiles by TMA (0: cp.async, to compare)
#endif
#ifndef TDMSIM_FP8_VIA_F16
#define TDMSIM_FP8_VIA_F16 1  // fp8 tiles through the f16 pipe on NVIDIA (docs/gpu-kernels.md)
#endif
constexpr float kSwigluOaiAlpha = 1.702f;  // emu::kSwigluOaiAlpha

// The logistic function of the gated activations: with IEEE exponential and
// division, or (kFast) with the hardware exponential and an approximate
// division, a few ulp of fp32, far below the bf16 rounding that follows. The
// IEEE ones were most of the gate/up epilogue's instructions
// (epilogue-2026-11-30/ncu); the persistent gate/up kernel, whose epilogue
// nothing overlaps on the tensor cores, takes the fast one (gate/up up to
// 1.16x faster, relative Frobenius error of the layers within 1% of the IEEE
// one's: persistent-2026-11-30, v16). The other kernels keep the IEEE one, whose
// instructions the timing model counts (sim/programs/moe_kernels.cpp).
template <bool kFast = false>
__device__ __forceinline__ float sigmoid(float x) {
  if constexpr (kFast) return __fdividef(1.0f, 1.0f + __expf(-x));
  return 1.0f / (1.0f + expf(-x));
}

template <bool kFast = false>
__device__ __forceinline__ float activate(Act act, float g, float u, float limit) {
  switch (act) {
    case Act::silu: return g * sigmoid<kFast>(g) * u;
    case Act::gelu: return 0.5f * g * (1.0f + erff(g * 0.70710678118654752f)) * u;
    case Act::swiglu_oai:
      if (limit > 0.0f) {
        g = fminf(g, limit);
        u = fminf(fmaxf(u, -limit), limit);
      }
      return (u + 1.0f) * (g * sigmoid<kFast>(kSwigluOaiAlpha * g));
  }
  return 0.0f;
}

// Which warps compute which fragments of a BM x BN tile: a WM x WN grid of
// warps (plan::rules::warp_grid, which the timing model counts with too),
// each TM x TN fragments of 16 x 16. Small tiles leave warps idle in the
// multiply; they still copy.
// On AMD the grid is one of wavefronts (Warps = kWaves, 4 of 256 threads).
template <int BM, int BN, int Warps = kWarps>
struct WarpGrid {
  static constexpr int FM = BM / 16, FN = BN / 16;
  static constexpr int WM = int(plan::rules::warp_grid(BM, BN, Warps).wm);
  static constexpr int WN = int(plan::rules::warp_grid(BM, BN, Warps).wn);
  static constexpr int TM = FM / WM, TN = FN / WN;
  static_assert(WM * WN <= Warps && TM * WM == FM && TN * WN == FN, "tile not covered");
};


// A tile's rows as the copy loop sees them: a source address per row (null:
// zero-fill) and, for fp8, the row's activation scales.
struct RowSrc {
  const std::uint8_t* ptr;
  const float* scale;
};

// How the A and B rows of a pipeline stage lie in LDS is the backend's
// (kernels/hip/lds_swizzle.h): on NVIDIA rows of exactly BK elements with their
// 16-byte chunks XOR-swizzled, which ldmatrix reads without bank conflicts; on
// AMD rows padded by 16 bytes, which the MFMA fragment loads (one 16-byte
// read per lane) read without bank conflicts.
#ifdef TDMSIM_MMA_SYNC
constexpr bool kSwizzledTiles = true;
#else
constexpr bool kSwizzledTiles = false;
#endif

// Which tiles the wgmma main loop takes: plan::rules::wgmma_tile
// (descriptors/plan/kernel_rules.h, the rule the plan and the timing model
// use too), in sm_90a builds.
template <class T, int BM, int BN, int BK, bool BS>
struct WgmmaTile {
  static constexpr bool ok = TDMSIM_WGMMA && plan::rules::wgmma_tile(kThreads, BM, BN, BK, 8 * sizeof(T));
  static constexpr int kMinStages = plan::rules::kWgmmaMinStages;  // the copy runs stages - 2 tiles ahead
};

// Which tiles take the warp-specialized wgmma loop (gemm_core_ws): those of
// plan::rules::ws_tile, launched with its 384 threads, in sm_90a builds.
template <class T, int BM, int BN, int BK, int NT>
struct WsTile {
  static constexpr bool ok = TDMSIM_WGMMA && plan::rules::ws_tile(NT, BM, BN, BK, 8 * sizeof(T));
};

// Shared-memory layout of the GEMM core, in bytes.
template <class T, int BM, int BN, int BK>
struct Smem {
  static_assert(BK * int(sizeof(T)) % 16 == 0 && BM % 8 == 0, "rows of whole 16-byte chunks; B from a row 8k");
  using Layout = lds::TileLayout<BK * int(sizeof(T)) / 16, kSwizzledTiles>;
  static constexpr int kRowBytes = Layout::kRowBytes;  // BK * sizeof(T), + 16 if padded
  static constexpr int kStageBytes = (BM + BN) * kRowBytes;
  static constexpr int kHalfLd = BK + 8;  // fp8 -> bf16 buffer, elements (wmma path)
  static_assert(kHalfLd % 8 == 0);
#ifdef TDMSIM_MMA_SYNC
  static constexpr int kConvBytes = 0;  // mma.sync multiplies e4m3 directly
#else
  static constexpr int kConvBytes = sizeof(T) == 1 ? (BM + BN) * kHalfLd * 2 : 0;
#endif
  static constexpr int kCLd = BN + int(plan::rules::kCTilePad);  // fp32 epilogue tile
  static constexpr int kCBytes = BM * kCLd * 4;
  // The wgmma loop aligns its stages to 1024 bytes (wgmma.h): room to do so
  // (only there: 1 KiB more per workgroup cost the small mma.sync tiles a
  // workgroup per SM, 8% on decode layers).
  static constexpr int kAlignSlack = WgmmaTile<T, BM, BN, BK, false>::ok ? 1024 : 0;
  // Dynamic LDS of a launch. On AMD, plan::rules::amd_gemm_lds_bytes (the
  // plan checks the same bytes against the machine's LDS): the conversion
  // buffer only where the loop converts e4m3, i.e. not on a target with the
  // fp8 MFMA (`fp8_mfma`, known on the host from the device: fp8_mfma_device)
  // when the K tile holds whole 64-byte fragments.
  static int bytes(int stages, bool fp8_mfma) {
#ifdef TDMSIM_MFMA
    return static_cast<int>(plan::rules::amd_gemm_lds_bytes(
        BM, BN, BK, sizeof(T), static_cast<std::uint32_t>(stages),
        plan::rules::amd_converts_fp8(sizeof(T), BK, fp8_mfma)));
#else
    (void)fp8_mfma;
    const int main = stages * kStageBytes + kConvBytes + kAlignSlack;
    return main > kCBytes ? main : kCBytes;
#endif
  }
};

// Whether the device the runner uses has the fp8 MFMA (gfx940-942, gfx950):
// the host pass cannot tell from macros (__gfx94x__ are device-pass only), so
// it asks the runtime once (a constant for the process's life).
inline bool fp8_mfma_device() {
#ifdef TDMSIM_MFMA
  static const bool has = [] {
    int dev = 0;
    hipDeviceProp_t prop{};
    if (hipGetDevice(&dev) != hipSuccess || hipGetDeviceProperties(&prop, dev) != hipSuccess) return false;
    const std::string arch = prop.gcnArchName;
    for (const char* t : {"gfx940", "gfx941", "gfx942", "gfx950"}) {
      if (arch.rfind(t, 0) == 0) return true;
    }
    return false;
  }();
  return has;
#else
  return false;
#endif
}

// Waits until at most `pending` (0..kMaxStages - 2) copy groups are in flight.
__device__ __forceinline__ void async_wait_at_most(int pending) {
  switch (pending) {
    case 0: async_wait<0>(); break;
    case 1: async_wait<1>(); break;
    case 2: async_wait<2>(); break;
    case 3: async_wait<3>(); break;
    default: async_wait<4>(); break;
  }
}



// Workgroups per CU the GEMM kernels are compiled for: two when the fp32
// accumulators (doubled by partial sums: block_128 on mma.sync, every fp8
// tile on wgmma) take at most 64 registers per thread, so that the register
// file holds two workgroups of 256 threads (<= 128 registers each); else one.
// The timing model uses the same rule (sim/programs/moe_kernels.cpp, gemm_vgprs).
template <class T, int BM, int BN, int BK, bool BS, int NT = kThreads>
inline constexpr int kMinBlocks =
    NT != kThreads ? 1  // the warp-specialized loop: one workgroup of 384 threads an SM
    : plan::rules::accumulators(BM, BN, kThreads, WgmmaTile<T, BM, BN, BK, BS>::ok ? sizeof(T) == 1 : BS) <= 64 ? 2 : 1;


// The copy side of both main loops' pipelines. Each thread copies the same
// (row, 16-byte chunk) slots of every K tile (lds::CopySlots: logical chunk
// tid % C of rows tid / C + i * kThreads / C): their sources and the LDS
// offset are computed once, so a tile's copies cost an add and a cp.async
// each (the index arithmetic per copy was of the order of the matrix work).
// A null row source zero-fills (padding rows, rows past N). Slot i's LDS
// offset is slot 0's plus i * Slots::kSlotStride in either layout: in the
// swizzled one because its rows are a multiple of 8 rows apart and the
// swizzle depends on the row mod 8 only (lds_swizzle.h).
// `Threads` threads copy, from thread `First` on: the whole workgroup in the
// 256-thread loops, the producer warpgroup in gemm_core_ws. They copy the
// first `Rows` rows of the stage: A and B, or A alone where TMA brings B.
template <class T, int BM, int BN, int BK, int Threads = kThreads, int First = 0, int Rows = BM + BN>
struct TileCopy {
  using S = Smem<T, BM, BN, BK>;
  using L = typename S::Layout;
  using Slots = lds::CopySlots<Threads, L>;
  static constexpr int kElems = 16 / int(sizeof(T));  // elements per 16-byte copy
  static constexpr int kRows = Rows;
  static constexpr int kCopies = (kRows + Slots::kRowsPerPass - 1) / Slots::kRowsPerPass;

  const std::uint8_t* src[kCopies];  // row source at k0 + this thread's chunk; null: zero-fill
  int dst;                           // slot 0's byte offset in a stage (physical chunk)

  __device__ static int tid() { return int(threadIdx.x) - First; }
  // Whether slot i's row exists (only the last slot can lack one).
  __device__ static bool has(int i) {
    return kRows % Slots::kRowsPerPass == 0 || i < kCopies - 1 || Slots::row(tid(), i) < kRows;
  }
  __device__ TileCopy(const RowSrc* a, const RowSrc* b, std::uint32_t k0) {
    const int chunk = Slots::chunk(tid());
    dst = Slots::first_offset(tid());
#pragma unroll
    for (int i = 0; i < kCopies; ++i) {
      src[i] = nullptr;
      if (has(i)) {
        const int row = Slots::row(tid(), i);
        const RowSrc& rs = row < BM ? a[row] : b[row - BM];
        if (rs.ptr) src[i] = rs.ptr + (std::size_t{k0} + chunk * kElems) * sizeof(T);
      }
    }
  }
  // Copies K tile `tile` of [k0, k1) (columns k0 + tile BK on) into the
  // stage buffer `st`.
  __device__ void copy(unsigned char* st, std::uint32_t tile, std::uint32_t k0, std::uint32_t k1,
                       const void* any_global) const {
    const std::uint32_t kt = tile * BK;  // from k0
    // The bytes of this thread's chunk inside [k0, k1): 16 except in the K
    // tail (part of a chunk, or none). From the LOGICAL chunk, which is the
    // same for every slot, never from `dst` (a swizzled position).
    const std::uint32_t k = k0 + kt + Slots::chunk(tid()) * kElems;
    const unsigned in_range = k >= k1 ? 0u : (k1 - k >= kElems ? 16u : (k1 - k) * unsigned(sizeof(T)));
#pragma unroll
    for (int i = 0; i < kCopies; ++i) {
      if (!has(i)) continue;
      const unsigned bytes = src[i] ? in_range : 0u;
      const void* from = bytes ? static_cast<const void*>(src[i] + std::size_t{kt} * sizeof(T))
                               : any_global;
      copy16_async(st + dst + i * Slots::kSlotStride, from, bytes);
    }
  }
  // copy() into the tile's stage buffer, then commits a group; past the last
  // tile only an empty group, which keeps the wait count uniform.
  __device__ void issue(unsigned char* smem, std::uint32_t tile, std::uint32_t tiles, int stages,
                        std::uint32_t k0, std::uint32_t k1, const void* any_global) const {
    if (tile < tiles) copy(smem + (tile % stages) * S::kStageBytes, tile, k0, k1, any_global);
    async_commit();
  }
};

#ifdef TDMSIM_MFMA
// The main loop on AMD CDNA: C[BM][BN] += A[BM][k0:k1] * B[BN][k0:k1]^T, A
// and B rows from `a` and `b` (in LDS), elements T (bf16 bits or e4m3), on
// MFMA (matrix_core.h), one wavefront per WarpGrid cell. Fragments are 16 rows
// x 64 bytes of K, one ds_read_b128 per lane from the padded layout. e4m3
// tiles are multiplied as copied where the target has the fp8 MFMA and the K
// tile holds whole fragments (gfx94x, BK % 64 == 0); elsewhere (gfx90a) they
// are converted to bf16 in LDS (exact) and, with block_128 scales, the
// activation scale of the row's 128-column group is folded into A during the
// conversion (rounded to bf16). Block scales on the native fp8 path multiply
// each K tile's partial sums by the row's activation scale and the 16-column
// fragment's weight scale, as the NVIDIA mma.sync loop does (`b_scale[f]`
// points at the fragment's scale row, indexed by k / 128). Leaves the result
// in `C` (fp32, LDS, ld kCLd) after a barrier. `block_scaled` is a template
// parameter so that every fragment index is static: a fragment chosen at run
// time would live in scratch memory.
template <class T, int BM, int BN, int BK, bool block_scaled>
__device__ void gemm_core(unsigned char* smem, const RowSrc* a, const RowSrc* b,
                          const float* const* b_scale, std::uint32_t k0, std::uint32_t k1,
                          int stages, const void* any_global, float* C) {
  using S = Smem<T, BM, BN, BK>;
  using G = WarpGrid<BM, BN, kWaves>;
  constexpr bool kFp8 = sizeof(T) == 1;
  constexpr bool kNativeFp8 = kFp8 && TDMSIM_MFMA_FP8 && BK % 64 == 0;
  constexpr bool kConvert = kFp8 && !kNativeFp8;
  // The loads and the e4m3 conversion read rows in logical order, `ld` apart.
  static_assert(!S::Layout::kSwizzled, "gemm_core reads the padded layout");
  static_assert(BK % mc::kFragK == 0, "K tile of whole fragments");
  const int wave = threadIdx.x / mc::kWaveLanes;
  const int wm = wave / G::WN, wn = wave % G::WN;
  const bool computes = wave < G::WM * G::WN;
  const std::uint32_t tiles = (k1 - k0 + BK - 1) / BK;

  mc::FragC acc[G::TM][G::TN];
  mc::FragC part[block_scaled ? G::TM : 1][block_scaled ? G::TN : 1];
#pragma unroll
  for (int i = 0; i < G::TM; ++i)
#pragma unroll
    for (int j = 0; j < G::TN; ++j) mc::zero(acc[i][j]);

  const TileCopy<T, BM, BN, BK> copy(a, b, k0);
  const auto issue = [&](std::uint32_t tile) { copy.issue(smem, tile, tiles, stages, k0, k1, any_global); };

  for (int s = 0; s < stages - 1; ++s) issue(s);
  for (std::uint32_t tile = 0; tile < tiles; ++tile) {
    async_wait_at_most(stages - 2);
    __syncthreads();
    const unsigned char* st = smem + (tile % stages) * S::kStageBytes;
    const std::uint32_t kb = (k0 + tile * BK) / 128;
    const bf16* as = nullptr;
    const bf16* bs = nullptr;
    int ld = 0;
    if constexpr (kConvert) {
      // e4m3 -> bf16, exact (four at a time, two 32-bit stores); block_128:
      // A times its row's group scale, rounded to bf16.
      auto* conv = reinterpret_cast<std::uint16_t*>(smem + stages * S::kStageBytes);
      for (int i = threadIdx.x; i < (BM + BN) * BK / 4; i += kThreads) {
        const int row = i / (BK / 4), col = (i % (BK / 4)) * 4;
        const std::uint32_t q4 = *reinterpret_cast<const std::uint32_t*>(st + row * S::kRowBytes + col);
        std::uint32_t h[4];
        if (block_scaled && row < BM) {
          const float sa = a[row].scale ? a[row].scale[kb] : 1.0f;
#pragma unroll
          for (int e = 0; e < 4; ++e) h[e] = bf16_bits(fp8_value(static_cast<std::uint8_t>(q4 >> (8 * e))) * sa);
        } else {
#pragma unroll
          for (int e = 0; e < 4; ++e) h[e] = fp8_to_bf16_fast(static_cast<std::uint8_t>(q4 >> (8 * e)));
        }
        auto* out = reinterpret_cast<std::uint32_t*>(conv + row * S::kHalfLd + col);
        out[0] = h[0] | (h[1] << 16);
        out[1] = h[2] | (h[3] << 16);
      }
      __syncthreads();
      as = reinterpret_cast<const bf16*>(conv);
      bs = as + BM * S::kHalfLd;
      ld = S::kHalfLd;
    } else if constexpr (!kFp8) {
      as = reinterpret_cast<const bf16*>(st);
      bs = reinterpret_cast<const bf16*>(st + BM * S::kRowBytes);
      ld = S::kRowBytes / 2;
    }
    if (computes) {
      if constexpr (block_scaled) {
#pragma unroll
        for (int i = 0; i < G::TM; ++i)
#pragma unroll
          for (int j = 0; j < G::TN; ++j) mc::zero(part[i][j]);
      }
      if constexpr (kNativeFp8) {
#if TDMSIM_MFMA_FP8
        const std::uint8_t* a8 = st + (wm * G::TM * 16) * S::kRowBytes;
        const std::uint8_t* b8 = st + (BM + wn * G::TN * 16) * S::kRowBytes;
#pragma unroll
        for (int kk = 0; kk < BK; kk += 64) {
          mc::Frag8 fa[G::TM];
          mc::Frag8 fb[G::TN];
#pragma unroll
          for (int i = 0; i < G::TM; ++i) mc::load8(fa[i], a8 + (i * 16) * S::kRowBytes + kk, S::kRowBytes);
#pragma unroll
          for (int j = 0; j < G::TN; ++j) mc::load8(fb[j], b8 + (j * 16) * S::kRowBytes + kk, S::kRowBytes);
#pragma unroll
          for (int i = 0; i < G::TM; ++i)
#pragma unroll
            for (int j = 0; j < G::TN; ++j) {
              if constexpr (block_scaled) mc::mma(part[i][j], fa[i], fb[j]);
              else mc::mma(acc[i][j], fa[i], fb[j]);
            }
        }
#endif
      } else {
#pragma unroll
        for (int kk = 0; kk < BK; kk += mc::kFragK) {
          mc::FragA fa[G::TM];
          mc::FragB fb[G::TN];
#pragma unroll
          for (int i = 0; i < G::TM; ++i) mc::load_a(fa[i], as + ((wm * G::TM + i) * 16) * ld + kk, ld);
#pragma unroll
          for (int j = 0; j < G::TN; ++j) mc::load_b(fb[j], bs + ((wn * G::TN + j) * 16) * ld + kk, ld);
#pragma unroll
          for (int i = 0; i < G::TM; ++i)
#pragma unroll
            for (int j = 0; j < G::TN; ++j) {
              if constexpr (block_scaled) mc::mma(part[i][j], fa[i], fb[j]);
              else mc::mma(acc[i][j], fa[i], fb[j]);
            }
        }
      }
      if constexpr (block_scaled) {
#pragma unroll
        for (int j = 0; j < G::TN; ++j) {
          const float sw = b_scale[wn * G::TN + j][kb];
#pragma unroll
          for (int i = 0; i < G::TM; ++i) {
            if constexpr (kNativeFp8) {
              // A's scale per accumulator row (padding rows: no source, 0).
              mc::f32x4 s;
#pragma unroll
              for (int r = 0; r < 4; ++r) {
                const RowSrc& rs = a[(wm * G::TM + i) * 16 + mc::c_row(r)];
                s[r] = (rs.scale ? rs.scale[kb] : 0.0f) * sw;
              }
              acc[i][j].x += part[i][j].x * s;
            } else {
              mc::add_scaled(acc[i][j], part[i][j], sw);
            }
          }
        }
      }
    }
    issue(tile + stages - 1);  // into the buffer every wave finished with above
  }
  async_wait<0>();
  __syncthreads();  // the stage buffers become the epilogue tile
  if (computes) {
#pragma unroll
    for (int i = 0; i < G::TM; ++i)
#pragma unroll
      for (int j = 0; j < G::TN; ++j)
        mc::store(C + ((wm * G::TM + i) * 16) * S::kCLd + (wn * G::TN + j) * 16, acc[i][j], S::kCLd);
  }
  __syncthreads();
}
#endif

#ifdef TDMSIM_MMA_SYNC
// The main loop on NVIDIA: the same copy pipeline, fragments loaded with
// ldmatrix and multiplied with mma.sync, bf16 x bf16 or e4m3 x e4m3 straight
// from the copied tile (no conversion). Each lane knows its accumulator
// elements' coordinates, so block_128 scales multiply each K tile's partial
// sums exactly: acc += part x (activation scale of the row) x (weight scale of
// the 16-column fragment). Same contract as gemm_core.
template <class T, int BM, int BN, int BK, bool block_scaled>
__device__ void gemm_core_mma(unsigned char* smem, const RowSrc* a, const RowSrc* b,
                              const float* const* b_scale, std::uint32_t k0, std::uint32_t k1,
                              int stages, const void* any_global, float* C) {
  using S = Smem<T, BM, BN, BK>;
  using G = WarpGrid<BM, BN>;
  using L = typename S::Layout;  // swizzled: loads through load_a/load_b<L> only
  constexpr bool kFp8 = sizeof(T) == 1;
  constexpr auto kOperands = kFp8 ? mc::Operands::e4m3 : mc::Operands::bf16;
  constexpr int kSteps = BK * int(sizeof(T)) / 32;  // 32-byte K steps per tile
  static_assert(kSteps >= 1, "K tile too small for one matrix step");
  const int warp = threadIdx.x / 32;
  const int wm = warp / G::WN, wn = warp % G::WN;
  const bool computes = warp < G::WM * G::WN;
  const std::uint32_t tiles = (k1 - k0 + BK - 1) / BK;

  mc::RegC acc[G::TM][G::TN];
  mc::RegC part[block_scaled ? G::TM : 1][block_scaled ? G::TN : 1];
#pragma unroll
  for (int i = 0; i < G::TM; ++i)
#pragma unroll
    for (int j = 0; j < G::TN; ++j) mc::zero(acc[i][j]);

  const TileCopy<T, BM, BN, BK> copy(a, b, k0);
  const auto issue = [&](std::uint32_t tile) { copy.issue(smem, tile, tiles, stages, k0, k1, any_global); };

  for (int s = 0; s < stages - 1; ++s) issue(s);
  for (std::uint32_t tile = 0; tile < tiles; ++tile) {
    // block_128: this tile's scales, loaded before the wait so that their
    // latency overlaps it rather than following the multiplies.
    float sa[block_scaled ? G::TM : 1][2];
    float sw[block_scaled ? G::TN : 1];
    if constexpr (block_scaled) {
      if (computes) {
        const std::uint32_t kb = (k0 + tile * BK) / 128;
#pragma unroll
        for (int i = 0; i < G::TM; ++i)
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            const RowSrc& rs = a[(wm * G::TM + i) * 16 + mc::c_row(2 * r)];
            sa[i][r] = rs.scale ? rs.scale[kb] : 0.0f;
          }
#pragma unroll
        for (int j = 0; j < G::TN; ++j) sw[j] = b_scale[wn * G::TN + j][kb];
      }
    }
    async_wait_at_most(stages - 2);
    __syncthreads();
    // Offsets from smem of this warp's first A and B rows in the stage
    // (multiples of kRowBytes, as the swizzled loaders require).
    const int stage = int(tile % stages) * S::kStageBytes;
    const int a_base = stage + wm * G::TM * 16 * S::kRowBytes;
    const int b_base = stage + (BM + wn * G::TN * 16) * S::kRowBytes;
    if (computes) {
      if constexpr (block_scaled) {
#pragma unroll
        for (int i = 0; i < G::TM; ++i)
#pragma unroll
          for (int j = 0; j < G::TN; ++j) mc::zero(part[i][j]);
      }
#pragma unroll
      for (int ks = 0; ks < kSteps; ++ks) {
        mc::RegA fa[G::TM];
        mc::RegB fb[G::TN];
#pragma unroll
        for (int i = 0; i < G::TM; ++i) mc::load_a<L>(fa[i], smem, a_base, ks, i * 16);
#pragma unroll
        for (int j = 0; j < G::TN; ++j) mc::load_b<L>(fb[j], smem, b_base, ks, j * 16);
        if constexpr (kFp8 && TDMSIM_FP8_VIA_F16) {
#pragma unroll
          for (int s = 0; s < 2; ++s) {
            mc::RegA ha[G::TM];
            mc::RegB hb[G::TN];
#pragma unroll
            for (int i = 0; i < G::TM; ++i) mc::a_step_f16(ha[i], fa[i], s);
#pragma unroll
            for (int j = 0; j < G::TN; ++j) mc::b_step_f16(hb[j], fb[j], s);
#pragma unroll
            for (int i = 0; i < G::TM; ++i)
#pragma unroll
              for (int j = 0; j < G::TN; ++j) {
                if constexpr (block_scaled) mc::mma<mc::Operands::f16>(part[i][j], ha[i], hb[j]);
                else mc::mma<mc::Operands::f16>(acc[i][j], ha[i], hb[j]);
              }
          }
        } else {
#pragma unroll
          for (int i = 0; i < G::TM; ++i)
#pragma unroll
            for (int j = 0; j < G::TN; ++j) {
              if constexpr (block_scaled) mc::mma<kOperands>(part[i][j], fa[i], fb[j]);
              else mc::mma<kOperands>(acc[i][j], fa[i], fb[j]);
            }
        }
      }
      if constexpr (block_scaled) {
#pragma unroll
        for (int i = 0; i < G::TM; ++i)
#pragma unroll
          for (int j = 0; j < G::TN; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h)
#pragma unroll
              for (int e = 0; e < 4; ++e) acc[i][j].c[h][e] += part[i][j].c[h][e] * (sa[i][e / 2] * sw[j]);
      }
    }
    issue(tile + stages - 1);
  }
  async_wait<0>();
  __syncthreads();
  if (computes) {
#pragma unroll
    for (int i = 0; i < G::TM; ++i)
#pragma unroll
      for (int j = 0; j < G::TN; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int row = (wm * G::TM + i) * 16 + mc::c_row(e);
            const int col = (wn * G::TN + j) * 16 + mc::c_col(h, e);
            C[row * S::kCLd + col] = acc[i][j].c[h][e];
          }
  }
  __syncthreads();
}
#endif

// Where the warp-specialized loop's B tiles come from under TDMSIM_WS_TMA:
// `parts` boxes of BN / parts rows of `map`, the first rows row[0], row[1]
// (gate/up: the N tile's gate rows and its up rows; down: one box).
struct BTiles {
  const tma::Map* map = nullptr;
  std::uint32_t row[2] = {0, 0};
  int parts = 1;
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// The main loop on Hopper for tiles of 64+ rows (WgmmaTile): the same copy
// pipeline and LDS tiles as gemm_core_mma, multiplied by wgmma straight from
// LDS (wgmma.h), bf16 x bf16 or e4m3 x e4m3. Warpgroup g of the two computes
// a 64 x kN part of the tile. Each K tile's wgmmas run while the
// next tile's barrier and copies are issued (one group kept in flight), so the
// copy runs stages - 2 tiles ahead and refills the buffer of tile - 2, which
// every warpgroup has finished reading by the barrier (each waited for its
// groups down to one, that of tile - 1, before reaching it).
// fp8: each K tile's products go to partial sums that are waited for and added
// to the fp32 accumulators (block_128: scaled, as in gemm_core_mma). Hopper's
// fp8 wgmma keeps only part of fp32's precision while it accumulates (DeepSeek-
// V3 technical report, section 3.3.2); summed over all of K in the instruction,
// per_token layers were off by 1.8e-2 against the emulator, with per-tile
// promotion all fp8 layers stay within 6.1e-3 (docs/gpu-kernels.md "wgmma").
// Needs stages >= 3 (WgmmaTile::kMinStages): launch_tile raises a smaller request.
// Same contract as gemm_core.
template <class T, int BM, int BN, int BK, bool block_scaled>
__device__ void gemm_core_wgmma(unsigned char* smem, const RowSrc* a, const RowSrc* b,
                                const float* const* b_scale, std::uint32_t k0, std::uint32_t k1,
                                int stages, const void* any_global, float* C) {
  using S = Smem<T, BM, BN, BK>;
  // The two warpgroups: 64-row halves of a 128-row tile, or N halves of a 64-row one.
  constexpr int kGroupsM = BM / 64;                  // warpgroups along M
  constexpr int kN = BN / (2 / kGroupsM);            // one warpgroup's columns
  constexpr int kAcc = kN / 2;                       // fp32 accumulators per thread
  constexpr auto kOp = sizeof(T) == 1 ? wg::Operands::e4m3 : wg::Operands::bf16;
  using Mma = wg::Mma<kN, kOp>;
  constexpr int R = BK * int(sizeof(T));  // bytes of a K row: 32, 64 or 128
  constexpr int kSteps = R / 32;  // wgmma K steps of 32 bytes per tile
  const int warp = threadIdx.x / 32, group = warp / 4, lane = threadIdx.x % 32;
  const int a_row0 = kGroupsM == 2 ? 64 * group : 0;        // the warpgroup's A rows
  const int col0 = kGroupsM == 2 ? 0 : group * kN;        // and its B rows (= C columns)
  const int row = a_row0 + (warp % 4) * 16 + lane / 4;      // this thread's C rows: row, row + 8
  const std::uint32_t tiles = (k1 - k0 + BK - 1) / BK;
  const int ahead = stages - 2;

  // Stages from a 1024-byte boundary (S::kAlignSlack): the swizzle pattern is
  // anchored to address bits 7-9.
  const auto raw = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem));
  const std::uint32_t pad = (1024u - raw % 1024u) % 1024u;
  unsigned char* stages_base = smem + pad;
  const std::uint32_t lds_base = raw + pad;

  constexpr bool kPromote = sizeof(T) == 1;
  float acc[kAcc];
  float part[kPromote ? kAcc : 1];
#pragma unroll
  for (int i = 0; i < kAcc; ++i) acc[i] = 0.0f;

  const TileCopy<T, BM, BN, BK> copy(a, b, k0);
  const auto issue = [&](std::uint32_t tile) {
    copy.issue(stages_base, tile, tiles, stages, k0, k1, any_global);
  };
  for (int s = 0; s < ahead; ++s) issue(s);
  for (std::uint32_t tile = 0; tile < tiles; ++tile) {
    float sa[2] = {1.0f, 1.0f};
    float sw[block_scaled ? kAcc / 4 : 1];
    if constexpr (block_scaled) {
      const std::uint32_t kb = (k0 + tile * BK) / 128;
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const RowSrc& rs = a[row + 8 * r];
        sa[r] = rs.scale ? rs.scale[kb] : 0.0f;
      }
#pragma unroll
      for (int j = 0; j < kAcc / 4; ++j) sw[j] = b_scale[(col0 + 8 * j) / 16][kb];
    }
    async_wait_at_most(ahead - 1);
    wg::fence_lds_for_async();
    __syncthreads();
    issue(tile + ahead);
    const std::uint32_t stage = lds_base + (tile % stages) * S::kStageBytes;
    const std::uint32_t a_addr = stage + a_row0 * R, b_addr = stage + (BM + col0) * R;
    wg::fence();
#pragma unroll
    for (int ks = 0; ks < kSteps; ++ks) {
      const std::uint64_t da = wg::descriptor(a_addr + 32 * ks, R);
      const std::uint64_t db = wg::descriptor(b_addr + 32 * ks, R);
      if constexpr (kPromote) Mma::run(part, da, db, ks > 0 ? 1 : 0);
      else Mma::run(acc, da, db, 1);
    }
    wg::commit();
    if constexpr (kPromote) {
      wg::wait<0>();
#pragma unroll
      for (int i = 0; i < kAcc; ++i) {
        if constexpr (block_scaled) acc[i] += part[i] * (sa[(i % 4) / 2] * sw[i / 4]);
        else acc[i] += part[i];
      }
    } else {
      wg::wait<1>();
    }
  }
  wg::wait<0>();
  async_wait<0>();
  __syncthreads();  // the stage buffers become the epilogue tile
  wg::store_accumulators(acc, row, col0, S::kCLd, C);
  __syncthreads();
}

// The warp-specialized pipeline on Hopper (plan::rules::ws_tile: bf16,
// 128 x 128 or 128 x 256 tiles, K tiles of 64, 384 threads), run by the
// persistent gate_up_ws_kernel and, one job at a time, by down_kernel
// (gemm_core_ws). Warpgroup 2 only
// copies: its 128 threads issue every A row of a K tile into a free stage
// buffer with cp.async and let the hardware arrive on that buffer's `full`
// barrier when their copies have landed; B, the expert weight rows, comes by
// TMA (TDMSIM_WS_TMA): the producer's first thread adds the B bytes to the
// `full` barrier's transaction count and asks the copy engine for the tile's
// boxes (tma.h). Warpgroups 0 and 1 only multiply (64 rows of the tile each,
// wgmma straight from LDS as in gemm_core_wgmma) and arrive on the buffer's
// `empty` barrier once their products of it are done. No workgroup barrier
// inside the loop: the copies run up to `stages` - 1 tiles ahead of the
// products, across jobs too, so the next job's first tiles land while the
// consumers run this job's epilogue from their registers.
// cp.async writes LDS through the generic proxy and wgmma reads it through
// the async proxy: the consumers fence the proxies after acquiring a buffer
// (the fence may sit anywhere on the causality path from the write to the
// read; PTX ISA, memory consistency model, "proxy-preserved base causality").
// The boxes' rows past the tensor's K or rows are zeros, and rows past N
// (other rows of the tensor) feed only columns that the epilogues drop, as
// cp.async's zero-filled ones did.
// Each thread keeps its own place in the ring of stage buffers (`s`,
// `phase`, `filled`); producer and consumers step through the same sequence
// of K tiles, job after job.
template <int BM, int BN, int BK>
struct WsPipe {
  using T = std::uint16_t;
  using S = Smem<T, BM, BN, BK>;
  using L = typename S::Layout;
  static constexpr int R = BK * int(sizeof(T));  // 128 bytes: the 128B swizzle, 8 chunks a row
  static_assert(BM == 128 && R == 128 && L::kSwizzled, "plan::rules::ws_tile");
  static constexpr int kProducers = 128;  // warpgroup 2, threads 256-383
  static constexpr int kConsumers = 256;
  static constexpr int kAcc = BN / 2;  // a consumer warpgroup: 64 x BN fp32
  using Mma = wg::Mma<BN, wg::Operands::bf16>;

  std::uint64_t* full;
  std::uint64_t* empty;
  unsigned char* stages_base;  // generic address of stage 0 (1024-byte aligned)
  std::uint32_t lds_base;      // its LDS address
  int stages;
  int s = 0;
  std::uint32_t phase = 0;
  std::uint32_t filled = 0;  // producer: K tiles issued so far, all jobs

  // Every thread of the workgroup; ends with a workgroup barrier.
  __device__ WsPipe(unsigned char* smem, std::uint64_t* full_bars, std::uint64_t* empty_bars, int n)
      : full(full_bars), empty(empty_bars), stages(n) {
    const auto raw = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem));
    const std::uint32_t pad = (1024u - raw % 1024u) % 1024u;
    stages_base = smem + pad;
    lds_base = raw + pad;
    if (threadIdx.x == 0) {
      for (int i = 0; i < stages; ++i) {
        mbar::init(&full[i], kProducers);
        mbar::init(&empty[i], 8);  // lane 0 of each consumer warp
      }
      mbar::fence_init();
    }
    __syncthreads();
  }
  __device__ static bool producer() { return threadIdx.x >= kConsumers; }
  __device__ void step() {
    if (++s == stages) s = 0, phase ^= 1u;
  }

  // Producer: the K tiles of [k0, k1) of one job. A from the row sources `a`
  // (LDS; read once here), B from `bt` (or from `b` without TMA).
  __device__ void produce(const RowSrc* a, const RowSrc* b, const BTiles& bt, std::uint32_t k0,
                          std::uint32_t k1, const void* any_global) {
    constexpr int kRows = TDMSIM_WS_TMA ? BM : BM + BN;
    const TileCopy<T, BM, BN, BK, kProducers, kConsumers, kRows> copy(a, b, k0);
    const bool engine = TDMSIM_WS_TMA && threadIdx.x == kConsumers;  // asks for the B boxes
    const std::uint32_t box_rows = BN / std::uint32_t(bt.parts);
    const std::uint32_t tiles = (k1 - k0 + BK - 1) / BK;
    for (std::uint32_t tile = 0; tile < tiles; ++tile, ++filled) {
      if (filled >= std::uint32_t(stages)) mbar::wait(&empty[s], phase ^ 1u);
      if (engine) {
        tma::expect_bytes(&full[s], BN * R);
#pragma unroll
        for (int part = 0; part < 2; ++part) {  // constant bound: row[] stays in registers
          if (part == bt.parts) break;
          tma::load_box(lds_base + s * S::kStageBytes + (BM + part * box_rows) * R, bt.map,
                        k0 + tile * BK, bt.row[part], &full[s]);
        }
      }
      copy.copy(stages_base + s * S::kStageBytes, tile, k0, k1, any_global);
      mbar::arrive_after_copies(&full[s]);
      step();
    }
  }

  // Consumers: acc = rows 64 group .. + 63 of the job's tile over [k0, k1)
  // (the wgmma D fragment layout, wgmma.h). Every buffer of the job is
  // released on return.
  __device__ void consume(float (&acc)[kAcc], std::uint32_t k0, std::uint32_t k1) {
    const int group = threadIdx.x / 128, lane = threadIdx.x % 32;
#pragma unroll
    for (int i = 0; i < kAcc; ++i) acc[i] = 0.0f;
    const std::uint32_t tiles = (k1 - k0 + BK - 1) / BK;
    int prev = 0;
    for (std::uint32_t tile = 0; tile < tiles; ++tile) {
      mbar::wait(&full[s], phase);
      wg::fence_lds_for_async();
      const std::uint32_t stage = lds_base + s * S::kStageBytes;
      const std::uint32_t a_addr = stage + 64 * group * R, b_addr = stage + BM * R;
      wg::fence();
#pragma unroll
      for (int ks = 0; ks < R / 32; ++ks) {
        Mma::run(acc, wg::descriptor(a_addr + 32 * ks, R), wg::descriptor(b_addr + 32 * ks, R), 1);
      }
      wg::commit();
      wg::wait<1>();  // the previous tile's products are done: its buffer is free
      if (tile > 0 && lane == 0) mbar::arrive(&empty[prev]);
      prev = s;
      step();
    }
    wg::wait<0>();
    if (tiles > 0 && lane == 0) mbar::arrive(&empty[prev]);
  }
};
#endif

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// This consumer thread's two rows of the tile (wgmma D fragment layout):
// element i of its accumulators is row `row[(i % 4) >= 2]`, column
// 8 (i / 4) + 2 (lane % 4) + i % 2.
struct WsRows {
  int row[2];
  int col;
  __device__ WsRows() {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    row[0] = 64 * (warp / 4) + 16 * (warp % 4) + lane / 4;
    row[1] = row[0] + 8;
    col = 2 * (lane % 4);
  }
  __device__ static constexpr int half(int i) { return (i % 4) >= 2 ? 1 : 0; }
  __device__ int column(int i) const { return 8 * (i / 4) + col; }
};

// One job through the warp-specialized pipeline (down_kernel's; gate/up runs
// persistent, gate_up_ws_kernel): same contract as gemm_core, for all 384
// threads. Once both consumer warpgroups are done with every buffer (named
// barrier 1 over their 256 threads; the producer has issued its last copy by
// then) the stage buffers become the fp32 C tile.
template <int BM, int BN, int BK>
__device__ void gemm_core_ws(unsigned char* smem, const RowSrc* a, const RowSrc* b, const BTiles& bt,
                             std::uint32_t k0, std::uint32_t k1, int stages, const void* any_global, float* C) {
  using Pipe = WsPipe<BM, BN, BK>;
  __shared__ std::uint64_t full[kMaxStages], empty[kMaxStages];
  Pipe pipe(smem, full, empty, stages);
  if (Pipe::producer()) {
    pipe.produce(a, b, bt, k0, k1, any_global);
  } else {
    float acc[Pipe::kAcc];
    pipe.consume(acc, k0, k1);
    asm volatile("bar.sync 1, 256;\n" ::: "memory");
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    wg::store_accumulators(acc, 64 * (warp / 4) + (warp % 4) * 16 + lane / 4, 0, Pipe::S::kCLd, C);
  }
  __syncthreads();
}
#endif

// The main loop of this backend; BS (block_128 scales) only for fp8. Kernels
// are instantiated per scaling mode so that bf16 and per-token fp8 do not pay
// the registers of the block-scaled partial sums.
// NT: the workgroup's threads, 384 for the warp-specialized loop (WsTile).
// bt: where the warp-specialized loop's B tiles come from (unused elsewhere).
template <class T, int BM, int BN, int BK, bool BS, int NT = kThreads>
__device__ void gemm(unsigned char* smem, const RowSrc* a, const RowSrc* b,
                     const float* const* b_scale, std::uint32_t k0, std::uint32_t k1, int stages,
                     const void* any_global, float* C, const BTiles& bt = BTiles{}) {
  static_assert(!BS || sizeof(T) == 1, "block scales are fp8 only");
  static_assert(NT == kThreads || WsTile<T, BM, BN, BK, NT>::ok, "384 threads: warp-specialized tiles only");
#ifdef TDMSIM_MMA_SYNC
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  if constexpr (NT != kThreads) {
    gemm_core_ws<BM, BN, BK>(smem, a, b, bt, k0, k1, stages, any_global, C);
    return;
  } else if constexpr (WgmmaTile<T, BM, BN, BK, BS>::ok) {
    gemm_core_wgmma<T, BM, BN, BK, BS>(smem, a, b, b_scale, k0, k1, stages, any_global, C);
    return;
  }
#endif
  gemm_core_mma<T, BM, BN, BK, BS>(smem, a, b, b_scale, k0, k1, stages, any_global, C);
#else
  gemm_core<T, BM, BN, BK, BS>(smem, a, b, b_scale, k0, k1, stages, any_global, C);
#endif
}

// Per-launch constants of the GEMM kernels.
struct Args {
  LayerDims d;
  std::uint32_t block_m, split_k, stages;
  std::uint32_t blocks, raster_group;  // the layout's blocks; the job order's group (rules::job_at)
  bool two_stage;
  const std::uint8_t* x;
  const float* x_scale;
  const std::uint8_t* w13;
  const float* w13_scale;
  const std::uint8_t* w2;
  const float* w2_scale;
  const std::uint32_t* sorted_rows;
  const float* sorted_weights;
  const std::uint32_t* block_expert;
  std::uint16_t* inter;
  const std::uint8_t* inter_a;   // down's A: inter (bf16) or inter_q (e4m3)
  const float* inter_scale;
  float* partials;
  float* y;
  // The B operand's tensor map for the warp-specialized loop's TMA (w13 for
  // gate/up, w2 for down; encoded by launch_tile, unused by other tiles).
  tma::Map b_map;
};

// The K range of split `s` of `splits` over K in tiles of BK (plan::job_k_range).
template <int BK>
__device__ void k_range(std::uint32_t K, std::uint32_t s, std::uint32_t splits, std::uint32_t& k0,
                        std::uint32_t& k1) {
  const std::uint32_t tiles = (K + BK - 1) / BK;
  k0 = min(K, s * tiles / splits * BK);
  k1 = min(K, (s + 1) * tiles / splits * BK);
}

// LDS after the GEMM buffers: row sources and scales of the tile.
template <int BM, int BN>
struct TileInfo {
  RowSrc a[BM];
  RowSrc b[BN];
  const float* b_scale[BN / 16];
  float a_pc[BM];  // per_token scales (1 otherwise)
  float b_pc[BN];
};

// Sets up A rows (gathered token rows of block b) and the gate/up B rows of
// the N tile of columns j0.. (N/2 gate rows then the matching N/2 up rows),
// by `nt` threads of which this is thread `t`.
template <class T, int BM, int BN>
__device__ void gate_up_rows(const Args& p, std::uint32_t b, std::uint32_t e, std::uint32_t j0,
                             TileInfo<BM, BN>& ti, int t = threadIdx.x, int nt = kThreads) {
  const LayerDims& d = p.d;
  const std::uint32_t sentinel = d.tokens * d.slots;
  for (int m = t; m < BM; m += nt) {
    const std::uint32_t row = p.sorted_rows[std::size_t{b} * p.block_m + m];
    RowSrc r{nullptr, nullptr};
    float pc = 1.0f;
    if (row != sentinel) {
      const std::uint32_t t = row / d.slots;
      r.ptr = p.x + std::size_t{t} * d.hidden * sizeof(T);
      if (d.fp8) {
        r.scale = d.quant == Quant::block_128 ? p.x_scale + std::size_t{t} * d.hb() : p.x_scale + t;
        pc = d.quant == Quant::per_token ? p.x_scale[t] : 1.0f;
      }
    }
    ti.a[m] = r;
    ti.a_pc[m] = pc;
  }
  for (int n = t; n < BN; n += nt) {
    const bool up = n >= BN / 2;
    const std::uint32_t j = j0 + (up ? n - BN / 2 : n);
    RowSrc r{nullptr, nullptr};
    float pc = 1.0f;
    if (j < d.inter) {
      const std::uint32_t wrow = (up ? d.inter : 0) + j;
      r.ptr = p.w13 + (std::size_t{e} * 2 * d.inter + wrow) * d.hidden * sizeof(T);
      if (d.fp8 && d.quant == Quant::per_token) pc = p.w13_scale[std::size_t{e} * 2 * d.inter + wrow];
    }
    ti.b[n] = r;
    ti.b_pc[n] = pc;
    if (n % 16 == 0 && d.fp8 && d.quant == Quant::block_128) {
      const std::uint32_t rb = (up ? d.ib() : 0) + min(j, d.inter - 1) / 128;
      ti.b_scale[n / 16] = p.w13_scale + (std::size_t{e} * 2 * d.ib() + rb) * d.hb();
    }
  }
}

// The gate/up N tiles of a layer: N/2 intermediate columns each.
template <int BN>
__device__ std::uint32_t gate_up_n_tiles(const LayerDims& d) {
  return (d.inter + BN / 2 - 1) / (BN / 2);
}

// A shared chunk's zero-weight columns j0.. of block b: their intermediate is
// exactly 0 (written, since the buffer holds the previous layer's values).
// By `nt` threads of which this is thread `t`.
template <int BM, int BN>
__device__ void zero_columns(const Args& p, std::uint32_t b, std::uint32_t j0, std::uint32_t split, int t,
                             int nt) {
  const LayerDims& d = p.d;
  for (int i = t; i < BM * (BN / 2); i += nt) {
    const std::size_t pos = std::size_t{b} * p.block_m + i / (BN / 2);
    const std::uint32_t j = j0 + i % (BN / 2);
    if (j >= d.inter || p.sorted_rows[pos] == d.tokens * d.slots) continue;
    if (p.split_k > 1) {
      float* part = p.partials + (std::size_t{split} * p.blocks * p.block_m + pos) * 2 * d.inter;
      part[j] = 0.0f;
      part[d.inter + j] = 0.0f;
    } else {
      p.inter[pos * d.inter + j] = 0;
    }
  }
}

template <class T, int BM, int BN, int BK, bool BS>
__global__ void __launch_bounds__(kThreads, (kMinBlocks<T, BM, BN, BK, BS>)) gate_up_kernel(const TDMSIM_GRID_CONSTANT Args p) {
  extern __shared__ __align__(16) unsigned char smem[];
  using S = Smem<T, BM, BN, BK>;
  constexpr int NT = kThreads;
  __shared__ TileInfo<BM, BN> ti;
  const LayerDims& d = p.d;
  const plan::rules::JobAt job =
      plan::rules::job_at(blockIdx.x, p.blocks, gate_up_n_tiles<BN>(d), p.split_k, p.raster_group);
  const std::uint32_t b = job.block, split = job.split;
  const std::uint32_t e = p.block_expert[b];
  const std::uint32_t j0 = job.n_tile * (BN / 2);
  if (j0 >= d.columns(e)) return zero_columns<BM, BN>(p, b, j0, split, threadIdx.x, NT);
  gate_up_rows<T, BM, BN>(p, b, e, j0, ti);
  __syncthreads();
  std::uint32_t k0, k1;
  k_range<BK>(d.hidden, split, p.split_k, k0, k1);
  float* C = reinterpret_cast<float*>(smem);
  gemm<T, BM, BN, BK, BS>(smem, ti.a, ti.b, ti.b_scale, k0, k1, p.stages, p.x, C);
  // Epilogue, four adjacent columns per thread: C in float4s from LDS, the
  // row's validity from its A row source (LDS) rather than sorted_rows
  // (global memory, one load an element: Nsight Compute found this epilogue
  // latency-bound, ws-2026-11-30/ncu), one 8-byte store of bf16 (16 of fp32
  // partials). Where I is not a multiple of 4 the stores are per element.
  constexpr int kV = 4, kGroups = BN / 2 / kV;
  static_assert((BN / 2) % kV == 0, "N/2 columns in groups of 4");
  const bool vec = d.inter % kV == 0;
  for (int i = threadIdx.x; i < BM * kGroups; i += NT) {
    const int m = i / kGroups, jj = (i % kGroups) * kV;
    const std::uint32_t j = j0 + jj;
    if (j >= d.inter || ti.a[m].ptr == nullptr) continue;
    const std::size_t pos = std::size_t{b} * p.block_m + m;
    const float4 gc = *reinterpret_cast<const float4*>(C + m * S::kCLd + jj);
    const float4 uc = *reinterpret_cast<const float4*>(C + m * S::kCLd + BN / 2 + jj);
    const float gv[kV] = {gc.x, gc.y, gc.z, gc.w}, uv[kV] = {uc.x, uc.y, uc.z, uc.w};
    float g[kV], u[kV];
#pragma unroll
    for (int e = 0; e < kV; ++e) {
      g[e] = gv[e] * ti.a_pc[m] * ti.b_pc[jj + e];
      u[e] = uv[e] * ti.a_pc[m] * ti.b_pc[BN / 2 + jj + e];
    }
    const int n = vec ? kV : int(min(std::uint32_t(kV), d.inter - j));
    if (p.split_k > 1) {
      float* part = p.partials + (std::size_t{split} * p.blocks * p.block_m + pos) * 2 * d.inter;
      if (vec) {
        *reinterpret_cast<float4*>(part + j) = make_float4(g[0], g[1], g[2], g[3]);
        *reinterpret_cast<float4*>(part + d.inter + j) = make_float4(u[0], u[1], u[2], u[3]);
      } else {
        for (int e = 0; e < n; ++e) part[j + e] = g[e], part[d.inter + j + e] = u[e];
      }
      continue;
    }
    // The 2-stage kernel stores gate/up in bf16 and the activation reads it back.
    std::uint16_t h[kV];
#pragma unroll
    for (int e = 0; e < kV; ++e) h[e] = bf16_bits(activate(d.act, round_bf16(g[e]), round_bf16(u[e]), d.act_limit));
    std::uint16_t* out = p.inter + pos * d.inter + j;
    if (vec) {
      *reinterpret_cast<uint2*>(out) = make_uint2(h[0] | std::uint32_t{h[1]} << 16, h[2] | std::uint32_t{h[3]} << 16);
    } else {
      for (int e = 0; e < n; ++e) out[e] = h[e];
    }
  }
}

// Sums the split-K partials in split order, then the activation. One row per workgroup.
__global__ void splitk_reduce_kernel(Args p, std::uint32_t rows) {
  const LayerDims& d = p.d;
  const std::uint32_t pos = blockIdx.x;
  if (p.sorted_rows[pos] == d.tokens * d.slots) return;
  for (std::uint32_t j = threadIdx.x; j < d.inter; j += blockDim.x) {
    float g = 0.0f, u = 0.0f;
    for (std::uint32_t s = 0; s < p.split_k; ++s) {
      const float* part = p.partials + (std::size_t{s} * rows + pos) * 2 * d.inter;
      g += part[j];
      u += part[d.inter + j];
    }
    p.inter[std::size_t{pos} * d.inter + j] =
        bf16_bits(activate(d.act, round_bf16(g), round_bf16(u), d.act_limit));
  }
}

// fp8: the bf16 intermediate of each real row to e4m3 with its per-row or
// 1x128 scales. One row per workgroup of 256.
__global__ void quant_inter_kernel(Args p, std::uint8_t* q, float* scale) {
  const LayerDims& d = p.d;
  const std::uint32_t pos = blockIdx.x;
  if (p.sorted_rows[pos] == d.tokens * d.slots) return;
  __shared__ float part[kWarps];
  const std::uint32_t group = d.quant == Quant::block_128 ? 128 : d.inter;
  const std::uint16_t* in = p.inter + std::size_t{pos} * d.inter;
  for (std::uint32_t g0 = 0; g0 < d.inter; g0 += group) {
    const std::uint32_t g1 = min(d.inter, g0 + group);
    float amax = 0.0f;
    for (std::uint32_t j = g0 + threadIdx.x; j < g1; j += kThreads) amax = fmaxf(amax, fabsf(bf16_value(in[j])));
    for (int o = 16; o > 0; o /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, o));
    if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = amax;
    __syncthreads();
    amax = 0.0f;
    for (int w = 0; w < kWarps; ++w) amax = fmaxf(amax, part[w]);
    __syncthreads();
    const float s = fp8_scale(amax);
    for (std::uint32_t j = g0 + threadIdx.x; j < g1; j += kThreads) {
      q[std::size_t{pos} * d.inter + j] = fp8_bits(bf16_value(in[j]) / s);
    }
    if (threadIdx.x == 0) scale[d.quant == Quant::block_128 ? std::size_t{pos} * d.ib() + g0 / 128 : pos] = s;
  }
}

// Sets up A rows (block b's intermediate rows) and the down B rows of the N
// tile of hidden columns h0.., and, where `token` is given, each A row's token
// (the sentinel for padding) and routed weight; by `nt` threads of which this
// is thread `t`.
template <class T, int BM, int BN>
__device__ void down_rows(const Args& p, std::uint32_t b, std::uint32_t e, std::uint32_t h0,
                          TileInfo<BM, BN>& ti, std::uint32_t* token, float* weight, int t, int nt) {
  const LayerDims& d = p.d;
  const std::uint32_t sentinel = d.tokens * d.slots;
  const bool block = d.fp8 && d.quant == Quant::block_128;
  for (int m = t; m < BM; m += nt) {
    const std::size_t pos = std::size_t{b} * p.block_m + m;
    const std::uint32_t row = p.sorted_rows[pos];
    RowSrc r{nullptr, nullptr};
    float pc = 1.0f;
    if (row != sentinel) {
      r.ptr = p.inter_a + pos * d.inter * sizeof(T);
      if (d.fp8) {
        r.scale = block ? p.inter_scale + pos * d.ib() : p.inter_scale + pos;
        pc = d.quant == Quant::per_token ? p.inter_scale[pos] : 1.0f;
      }
    }
    ti.a[m] = r;
    ti.a_pc[m] = pc;
    if (token) {
      token[m] = row == sentinel ? sentinel : row / d.slots;
      weight[m] = p.sorted_weights[pos];
    }
  }
  for (int n = t; n < BN; n += nt) {
    const std::uint32_t h = h0 + n;
    RowSrc r{nullptr, nullptr};
    float pc = 1.0f;
    if (h < d.hidden) {
      r.ptr = p.w2 + (std::size_t{e} * d.hidden + h) * d.inter * sizeof(T);
      if (d.fp8 && d.quant == Quant::per_token) pc = p.w2_scale[std::size_t{e} * d.hidden + h];
    }
    ti.b[n] = r;
    ti.b_pc[n] = pc;
    if (n % 16 == 0 && block) {
      ti.b_scale[n / 16] = p.w2_scale + (std::size_t{e} * d.hb() + min(h, d.hidden - 1) / 128) * d.ib();
    }
  }
}

// The down N tiles of a layer: N hidden columns each.
template <int BN>
__device__ std::uint32_t down_n_tiles(const LayerDims& d) {
  return (d.hidden + BN - 1) / BN;
}

template <class T, int BM, int BN, int BK, bool BS, int NT>
__global__ void __launch_bounds__(NT, (kMinBlocks<T, BM, BN, BK, BS, NT>)) down_kernel(const TDMSIM_GRID_CONSTANT Args p) {
  extern __shared__ __align__(16) unsigned char smem[];
  using S = Smem<T, BM, BN, BK>;
  __shared__ TileInfo<BM, BN> ti;
  __shared__ std::uint32_t token[BM];
  __shared__ float weight[BM];
  const LayerDims& d = p.d;
  const plan::rules::JobAt job =
      plan::rules::job_at(blockIdx.x, p.blocks, down_n_tiles<BN>(d), p.split_k, p.raster_group);
  const std::uint32_t b = job.block, split = job.split;
  const std::uint32_t e = p.block_expert[b];
  const std::uint32_t h0 = job.n_tile * BN;
  const std::uint32_t sentinel = d.tokens * d.slots;
  down_rows<T, BM, BN>(p, b, e, h0, ti, token, weight, threadIdx.x, NT);
  __syncthreads();
  std::uint32_t k0, k1;
  k_range<BK>(d.inter, split, p.split_k, k0, k1);
  float* C = reinterpret_cast<float*>(smem);
  const BTiles bt{&p.b_map, {e * d.hidden + h0, 0}, 1};
  gemm<T, BM, BN, BK, BS, NT>(smem, ti.a, ti.b, ti.b_scale, k0, k1, p.stages, p.x, C, bt);
  // Epilogue: routed weight on the fp32 sum, the expert output rounded to
  // bf16 (whole sums only), then the combine: an atomic add into y.
  // Four adjacent columns per atomic (H is a multiple of 16, so a group is
  // all in or all out): a vector add where the GPU has one (add4_f32).
  for (int i = threadIdx.x; i < BM * BN / 4; i += NT) {
    const int m = i / (BN / 4), n = (i % (BN / 4)) * 4;
    const std::uint32_t h = h0 + n;
    if (h >= d.hidden || token[m] == sentinel) continue;
    // One 16-byte LDS read (four scalar reads 4 floats apart conflicted 4 ways).
    const float4 c = *reinterpret_cast<const float4*>(C + m * S::kCLd + n);
    const float cv[4] = {c.x, c.y, c.z, c.w};
    float v[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      v[e] = cv[e] * ti.a_pc[m] * ti.b_pc[n + e] * weight[m];
      if (p.split_k == 1) v[e] = round_bf16(v[e]);
    }
    add4_f32(p.y + std::size_t{token[m]} * d.hidden + h, v);
  }
}

// ---- the persistent warp-specialized gate/up kernel (WsTile, 384 threads) ----
//
// One workgroup an SM, grid = min(jobs, SMs); workgroup w runs jobs w,
// w + grid, ... in the plan's job order (rules::job_at), so the jobs in flight
// at any time are those a one-job-a-workgroup grid would run in that wave. The
// producer warpgroup sets up each job's row sources in LDS (`ti`, its own:
// named barrier 2 over its 128 threads) and streams the job's K tiles; the
// consumers multiply and then apply the epilogue straight from their
// accumulators, while the producer already fills the buffers with the next
// job's first K tiles. Nothing goes through an fp32 C tile in LDS, and the
// epilogue no longer holds the stage buffers (Nsight Compute put the former
// epilogue at 18% of warp samples with nothing overlapping it,
// tma-2026-11-30/ncu). The tiles are bf16 only: per-token scales are 1.
// Down keeps one job a workgroup (down_kernel): run persistent, with its
// atomic adds from the accumulators (8 bytes each, 8 rows a warp), it was
// 1.07x slower on Mixtral-8x7B at 4096+ tokens (persistent-2026-11-30).
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ void producer_sync() { asm volatile("bar.sync 2, 128;\n" ::: "memory"); }
#endif

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// Two floats to bf16 (lo in bits 0-15), nearest even: one instruction, and
// without bf16_bits's NaN branch, which ptxas would answer by serialising
// the next job's wgmma (C7520: accumulator registers touched on a divergent
// path). The same bits for every non-NaN value.
__device__ __forceinline__ std::uint32_t bf16x2_rn(float lo, float hi) {
  std::uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

// The gate/up epilogue from the accumulators: columns i < kHalf are gate,
// i + kHalf the matching up column. Two adjacent columns per store (I is a
// multiple of 16, supported()). As gate_up_kernel: gate and up rounded to
// bf16, then the activation (the fast logistic), stored in bf16.
template <Act act, int kHalf>
__device__ __forceinline__ void ws_gate_up_store(const float (&acc)[2 * kHalf], const WsRows& at, const bool (&real)[2],
                                                 const std::size_t (&pos)[2], std::uint32_t j0, const LayerDims& d,
                                                 std::uint16_t* inter) {
#pragma unroll
  for (int i = 0; i < kHalf; i += 2) {
    const int h = WsRows::half(i);
    const std::uint32_t j = j0 + at.column(i);
    const std::uint32_t g = bf16x2_rn(acc[i], acc[i + 1]), u = bf16x2_rn(acc[kHalf + i], acc[kHalf + i + 1]);
    const std::uint32_t out =
        bf16x2_rn(activate<true>(act, bits_float(g << 16), bits_float(u << 16), d.act_limit),
                  activate<true>(act, bits_float(g & 0xFFFF0000u), bits_float(u & 0xFFFF0000u), d.act_limit));
    if (real[h] && j < d.inter) *reinterpret_cast<std::uint32_t*>(inter + pos[h] * d.inter + j) = out;
  }
}

// Split K: gate and up partial sums in fp32 (rows of 2 I from `part`).
template <int kHalf>
__device__ __forceinline__ void ws_gate_up_partials(const float (&acc)[2 * kHalf], const WsRows& at,
                                                    const bool (&real)[2], const std::size_t (&pos)[2],
                                                    std::uint32_t j0, std::uint32_t inter, float* part) {
#pragma unroll
  for (int i = 0; i < kHalf; i += 2) {
    const int h = WsRows::half(i);
    const std::uint32_t j = j0 + at.column(i);
    if (!real[h] || j >= inter) continue;
    float* row = part + pos[h] * 2 * inter;
    *reinterpret_cast<float2*>(row + j) = make_float2(acc[i], acc[i + 1]);
    *reinterpret_cast<float2*>(row + inter + j) = make_float2(acc[kHalf + i], acc[kHalf + i + 1]);
  }
}
#endif

template <int BM, int BN, int BK>
__global__ void __launch_bounds__(plan::rules::kWsThreads, 1) gate_up_ws_kernel(const TDMSIM_GRID_CONSTANT Args p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ __align__(16) unsigned char smem[];
  using Pipe = WsPipe<BM, BN, BK>;
  constexpr int kHalf = Pipe::kAcc / 2;  // gate columns, then the matching up columns
  __shared__ std::uint64_t full[kMaxStages], empty[kMaxStages];
  __shared__ TileInfo<BM, BN> ti;
  const LayerDims& d = p.d;
  Pipe pipe(smem, full, empty, int(p.stages));
  const std::uint32_t n_tiles = gate_up_n_tiles<BN>(d), jobs = n_tiles * p.split_k * p.blocks;
  const std::uint32_t sentinel = d.tokens * d.slots;
  const WsRows at;
  for (std::uint32_t id = blockIdx.x; id < jobs; id += gridDim.x) {
    const plan::rules::JobAt job = plan::rules::job_at(id, p.blocks, n_tiles, p.split_k, p.raster_group);
    const std::uint32_t b = job.block, split = job.split;
    const std::uint32_t e = p.block_expert[b];
    const std::uint32_t j0 = job.n_tile * (BN / 2);
    std::uint32_t k0, k1;
    k_range<BK>(d.hidden, split, p.split_k, k0, k1);
    if (Pipe::producer()) {
      if (j0 >= d.columns(e)) continue;
      const int t = int(threadIdx.x) - Pipe::kConsumers;
      producer_sync();  // the previous job's row sources have been read
      gate_up_rows<std::uint16_t, BM, BN>(p, b, e, j0, ti, t, Pipe::kProducers);
      producer_sync();
      const std::uint32_t w_row = e * 2 * d.inter + j0;  // the N tile's first gate row in w13
      pipe.produce(ti.a, ti.b, BTiles{&p.b_map, {w_row, w_row + d.inter}, 2}, k0, k1, p.x);
      continue;
    }
    if (j0 >= d.columns(e)) {
      zero_columns<BM, BN>(p, b, j0, split, threadIdx.x, Pipe::kConsumers);
      continue;
    }
    const std::size_t first = std::size_t{b} * p.block_m;  // the block's first sorted row
    const bool real[2] = {p.sorted_rows[first + at.row[0]] != sentinel, p.sorted_rows[first + at.row[1]] != sentinel};
    float acc[Pipe::kAcc];
    pipe.consume(acc, k0, k1);
    const std::size_t pos[2] = {first + at.row[0], first + at.row[1]};
    // One loop per activation, so that no branch inside it touches the
    // accumulators (ptxas serialises the next job's wgmma otherwise, C7520).
    if (p.split_k > 1) {
      float* part = p.partials + (std::size_t{split} * p.blocks * p.block_m) * 2 * d.inter;
      ws_gate_up_partials<kHalf>(acc, at, real, pos, j0, d.inter, part);
      continue;
    }
    switch (d.act) {
      case Act::silu: ws_gate_up_store<Act::silu, kHalf>(acc, at, real, pos, j0, d, p.inter); break;
      case Act::gelu: ws_gate_up_store<Act::gelu, kHalf>(acc, at, real, pos, j0, d, p.inter); break;
      case Act::swiglu_oai: ws_gate_up_store<Act::swiglu_oai, kHalf>(acc, at, real, pos, j0, d, p.inter); break;
    }
  }
  // The producer's threads leave after issuing their last copies, which the
  // consumers still wait for (`full`): they land and arrive in every run so
  // far, though the PTX ISA does not say so for an exited thread. Waiting for
  // them here (async_wait<0>) cost 0.5-1% (persistent-2026-11-30/exp4, exp5:
  // ptxas allocates the whole kernel differently), so it is not done.
#else
  __trap();  // 384-thread tiles are sm_90a only (WsTile); never launched elsewhere
#endif
}

// The 1-stage kernel: gate/up for intermediate columns [j0, j0 + N/2) over
// all of H, the activation, then that slice times the matching columns of
// down into every H column, added into y. The slice stays in LDS as bf16 (no
// fp8 requantisation: a slice is narrower than a 1x128 scale group).
template <class T, int BM, int BN, int BK, bool BS>
__global__ void __launch_bounds__(kThreads) fused_kernel(Args p) {
  extern __shared__ __align__(16) unsigned char smem[];
  using S = Smem<T, BM, BN, BK>;
  using G = WarpGrid<BM, BN, kWaves>;  // phase 2's matrix work, per warp (wavefront on AMD)
  constexpr int KS = BN / 2;             // the slice: phase 2's K
  constexpr int kSliceLd = KS + 8;       // bf16 elements
  constexpr int kBRow = KS * int(sizeof(T)) + 16;  // bytes of one down row slice in LDS
  constexpr int kBLd = KS + 8;           // converted B, elements
  __shared__ TileInfo<BM, BN> ti;
  __shared__ std::uint32_t token[BM];
  __shared__ float weight[BM];
  __shared__ __align__(16) std::uint16_t slice[BM * kSliceLd];
  const LayerDims& d = p.d;
  const plan::rules::JobAt job = plan::rules::job_at(blockIdx.x, p.blocks, (d.inter + KS - 1) / KS, 1, p.raster_group);
  const std::uint32_t b = job.block;
  const std::uint32_t e = p.block_expert[b];
  const std::uint32_t j0 = job.n_tile * KS;
  const std::uint32_t real = d.columns(e);
  if (j0 >= real) return;
  const std::uint32_t sentinel = d.tokens * d.slots;
  const bool block = d.fp8 && d.quant == Quant::block_128;
  gate_up_rows<T, BM, BN>(p, b, e, j0, ti);
  for (int m = threadIdx.x; m < BM; m += kThreads) {
    const std::uint32_t row = p.sorted_rows[std::size_t{b} * p.block_m + m];
    token[m] = row == sentinel ? sentinel : row / d.slots;
    weight[m] = p.sorted_weights[std::size_t{b} * p.block_m + m];
  }
  __syncthreads();
  float* C = reinterpret_cast<float*>(smem);
  gemm<T, BM, BN, BK, BS>(smem, ti.a, ti.b, ti.b_scale, 0, d.hidden, p.stages, p.x, C);
  // Phase 1 epilogue: fp32 gate/up (no store, no rounding), activation, bf16 slice.
  for (int i = threadIdx.x; i < BM * KS; i += kThreads) {
    const int m = i / KS, jj = i % KS;
    float v = 0.0f;
    if (j0 + jj < d.inter && token[m] != sentinel) {
      const float g = C[m * S::kCLd + jj] * ti.a_pc[m] * ti.b_pc[jj];
      const float u = C[m * S::kCLd + KS + jj] * ti.a_pc[m] * ti.b_pc[KS + jj];
      v = activate(d.act, g, u, d.act_limit);
    }
    slice[m * kSliceLd + jj] = bf16_bits(v);
  }
  __syncthreads();

  // Phase 2: down rows h of [h0, h0 + BN), columns [j0, j0 + KS), in
  // kBuffers buffers (the chunks are small: several must be in flight).
  constexpr int kBuffers = 3;
  unsigned char* braw = smem;                                   // kBuffers x BN x kBRow
  auto* bconv = reinterpret_cast<std::uint16_t*>(smem + kBuffers * BN * kBRow);  // fp8 only
  float* C2 = reinterpret_cast<float*>(smem + kBuffers * BN * kBRow + (sizeof(T) == 1 ? BN * kBLd * 2 : 0));
  constexpr int kChunks = KS * int(sizeof(T)) / 16;
  const std::uint32_t kend = min(d.inter, j0 + KS);
  const auto issue = [&](std::uint32_t h0) {
    if (h0 < d.hidden) {
      unsigned char* st = braw + ((h0 / BN) % kBuffers) * BN * kBRow;
      for (int c = threadIdx.x; c < BN * kChunks; c += kThreads) {
        const int n = c / kChunks, chunk = c % kChunks;
        const std::uint32_t h = h0 + n, k = j0 + chunk * (16 / sizeof(T));
        unsigned bytes = 0;
        if (h < d.hidden && k < kend) bytes = min(16u, (kend - k) * unsigned(sizeof(T)));
        const std::uint8_t* src = p.w2 + ((std::size_t{e} * d.hidden + h) * d.inter + k) * sizeof(T);
        copy16_async(st + n * kBRow + chunk * 16, bytes ? static_cast<const void*>(src) : p.w2, bytes);
      }
    }
    async_commit();
  };
  const int warp = threadIdx.x / mc::kWaveLanes;
  const int wm = warp / G::WN, wn = warp % G::WN;
  const bool computes = warp < G::WM * G::WN;
  issue(0);
  issue(BN);
  for (std::uint32_t h0 = 0; h0 < d.hidden; h0 += BN) {
    issue(h0 + 2 * BN);
    async_wait<2>();
    __syncthreads();
    const unsigned char* st = braw + ((h0 / BN) % kBuffers) * BN * kBRow;
    const bf16* bs;
    int ldb;
    if constexpr (sizeof(T) == 1) {
      for (int i = threadIdx.x; i < BN * KS; i += kThreads) {
        const int n = i / KS, k = i % KS;
        bconv[n * kBLd + k] = static_cast<std::uint16_t>(fp8_to_bf16_fast(st[n * kBRow + k]));
      }
      __syncthreads();
      bs = reinterpret_cast<const bf16*>(bconv);
      ldb = kBLd;
    } else {
      bs = reinterpret_cast<const bf16*>(st);
      ldb = kBRow / 2;
    }
    if (computes) {
      mc::FragC acc[G::TM][G::TN];
#pragma unroll
      for (int i = 0; i < G::TM; ++i)
#pragma unroll
        for (int j = 0; j < G::TN; ++j) mc::zero(acc[i][j]);
#pragma unroll
      for (int kk = 0; kk < KS; kk += mc::kFragK) {
        mc::FragA fa[G::TM];
        mc::FragB fb[G::TN];
#pragma unroll
        for (int i = 0; i < G::TM; ++i)
          mc::load_a(fa[i], reinterpret_cast<const bf16*>(slice) + ((wm * G::TM + i) * 16) * kSliceLd + kk, kSliceLd);
#pragma unroll
        for (int j = 0; j < G::TN; ++j) mc::load_b(fb[j], bs + ((wn * G::TN + j) * 16) * ldb + kk, ldb);
#pragma unroll
        for (int i = 0; i < G::TM; ++i)
#pragma unroll
          for (int j = 0; j < G::TN; ++j) mc::mma(acc[i][j], fa[i], fb[j]);
      }
#pragma unroll
      for (int i = 0; i < G::TM; ++i)
#pragma unroll
        for (int j = 0; j < G::TN; ++j)
          mc::store(C2 + ((wm * G::TM + i) * 16) * S::kCLd + (wn * G::TN + j) * 16, acc[i][j], S::kCLd);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < BM * BN; i += kThreads) {
      const int m = i / BN, n = i % BN;
      const std::uint32_t h = h0 + n;
      if (h >= d.hidden || token[m] == sentinel) continue;
      float sw = 1.0f;
      if (d.fp8) {
        sw = block ? p.w2_scale[(std::size_t{e} * d.hb() + h / 128) * d.ib() + j0 / 128]
                   : p.w2_scale[std::size_t{e} * d.hidden + h];
      }
      atomicAdd(p.y + std::size_t{token[m]} * d.hidden + h, C2[m * S::kCLd + n] * sw * weight[m]);
    }
    __syncthreads();  // C2 and this buffer are reused
  }
}

// Phase 2 of the fused kernel needs its own LDS on top of phase 1's.
// (plan::rules::fused_phase2_lds_bytes: the plan checks the same bytes.)
template <class T, int BM, int BN>
int fused_phase2_bytes() {
  return static_cast<int>(plan::rules::fused_phase2_lds_bytes(BM, BN, sizeof(T)));
}

// ---- dispatch over the instantiated tiles ----

enum class Kind { gate_up, down, fused };

template <class T, int BM, int BN, int BK, bool BS, int NT = kThreads>
void launch_tile(Kind kind, const Args& args, dim3 grid, hipStream_t s) {
  Args a = args;
  if (WgmmaTile<T, BM, BN, BK, BS>::ok && a.stages < WgmmaTile<T, BM, BN, BK, BS>::kMinStages) {
    a.stages = WgmmaTile<T, BM, BN, BK, BS>::kMinStages;
  }
  int bytes = Smem<T, BM, BN, BK>::bytes(static_cast<int>(a.stages), fp8_mfma_device());
#if TDMSIM_WGMMA && TDMSIM_WS_TMA
  if constexpr (NT != kThreads) {
    // The warp-specialized loop's B tensor: w13 as E x 2I rows of H (boxes of
    // N/2 rows: gate, then up), or w2 as E x H rows of I (boxes of N rows).
    const LayerDims& d = a.d;
    const bool up = kind == Kind::gate_up;
    const std::uint64_t rows = std::uint64_t{d.experts_fused} * (up ? 2 * d.inter : d.hidden);
    const char* why = "";
    if (!tma::encode_bf16_rows(a.b_map, up ? a.w13 : a.w2, rows, up ? d.hidden : d.inter,
                               up ? BN / 2 : BN, why)) {
      std::fprintf(stderr, "tdmsim-gpu: TMA tensor map of the %s weights: %s\n", up ? "gate/up" : "down", why);
      TDMSIM_GPU_EXIT(1);
    }
  }
#endif
  void (*kernel)(Args) = nullptr;
  if constexpr (NT != kThreads) {
    if (kind == Kind::fused) return;  // never asked for: supported() refuses it
    if (kind == Kind::gate_up) {
      // Persistent: one workgroup an SM at most (the LDS of one), each looping over jobs.
      kernel = gate_up_ws_kernel<BM, BN, BK>;
      int device = 0, sms = 0;
      TDMSIM_HIP_CHECK(hipGetDevice(&device));
      TDMSIM_HIP_CHECK(hipDeviceGetAttribute(&sms, hipDeviceAttributeMultiprocessorCount, device));
      if (grid.x > unsigned(sms)) grid.x = unsigned(sms);
      TDMSIM_HIP_CHECK(hipFuncSetAttribute(reinterpret_cast<const void*>(kernel),
                                           hipFuncAttributeMaxDynamicSharedMemorySize, bytes));
      hipLaunchKernelGGL(kernel, grid, dim3(NT), static_cast<size_t>(bytes), s, a);
      TDMSIM_HIP_CHECK(hipGetLastError());
      return;
    }
  }
  switch (kind) {
    case Kind::gate_up:
      if constexpr (NT == kThreads) kernel = gate_up_kernel<T, BM, BN, BK, BS>;
      break;
    case Kind::down: kernel = down_kernel<T, BM, BN, BK, BS, NT>; break;
    case Kind::fused: {
      kernel = fused_kernel<T, BM, BN, BK, BS>;
      const int p2 = fused_phase2_bytes<T, BM, BN>();
      bytes = bytes > p2 ? bytes : p2;
      break;
    }
  }
#ifdef TDMSIM_MFMA
  {
    // The plan keeps our AMD tiles within a workgroup's LDS
    // (plan::amd_kernel_lds_bytes); a case from elsewhere that does not fit
    // is refused here, named, rather than failing the launch.
    int dev = 0, max_lds = 0;
    TDMSIM_HIP_CHECK(hipGetDevice(&dev));
    TDMSIM_HIP_CHECK(hipDeviceGetAttribute(&max_lds, hipDeviceAttributeMaxSharedMemoryPerBlock, dev));
    if (max_lds > 0 && bytes > max_lds) {
      std::fprintf(stderr, "tdmsim-gpu: tile %dx%dx%d with %u LDS buffers needs %d B of dynamic LDS; the device "
                   "allows %d a workgroup (fewer pipeline_stages or a smaller tile)\n", BM, BN, BK,
                   static_cast<unsigned>(a.stages), bytes, max_lds);
      TDMSIM_GPU_EXIT(2);
    }
  }
#endif
  TDMSIM_HIP_CHECK(hipFuncSetAttribute(reinterpret_cast<const void*>(kernel),
                                       hipFuncAttributeMaxDynamicSharedMemorySize, bytes));
  hipLaunchKernelGGL(kernel, grid, dim3(NT), static_cast<size_t>(bytes), s, a);
  TDMSIM_HIP_CHECK(hipGetLastError());
}

// Calls f.template operator()<BM, BN, BK>() for the tile, or returns false.
template <class F>
bool with_tile(const KernelTileCfg& t, F&& f) {
#define TDMSIM_TILE(M, N, K)                       \
  if (t.m == M && t.n == N && t.k == K) {          \
    f.template operator()<M, N, K>();              \
    return true;                                   \
  }
  TDMSIM_TILE(16, 64, 128)
  TDMSIM_TILE(16, 128, 128)
  TDMSIM_TILE(32, 64, 64)
  TDMSIM_TILE(32, 64, 128)
  TDMSIM_TILE(32, 128, 64)
  TDMSIM_TILE(32, 128, 128)
  TDMSIM_TILE(64, 64, 64)
  TDMSIM_TILE(64, 128, 64)
  TDMSIM_TILE(64, 128, 128)
  TDMSIM_TILE(128, 64, 64)
  TDMSIM_TILE(128, 128, 32)
  TDMSIM_TILE(128, 128, 64)
  TDMSIM_TILE(128, 128, 128)
  TDMSIM_TILE(128, 256, 64)
#undef TDMSIM_TILE
  return false;
}

Args args_of(const MoeCase& c, const LayerDims& d, const Weights* w, Buffers& b) {
  Args a{};
  a.d = d;
  a.block_m = c.block_m;
  a.split_k = c.split_k;
  a.blocks = c.blocks;
  a.raster_group = c.raster_group < 1 ? 1 : c.raster_group;
  a.stages = c.pipeline_stages < 2 ? 2 : (c.pipeline_stages > kMaxStages ? kMaxStages : c.pipeline_stages);
  a.two_stage = c.stages == 2;
  a.x = static_cast<const std::uint8_t*>(b.x);
  a.x_scale = b.x_scale;
  if (w) {
    a.w13 = static_cast<const std::uint8_t*>(w->w13);
    a.w13_scale = w->w13_scale;
    a.w2 = static_cast<const std::uint8_t*>(w->w2);
    a.w2_scale = w->w2_scale;
  }
  a.sorted_rows = b.sorted_rows;
  a.sorted_weights = b.sorted_weights;
  a.block_expert = b.block_expert;
  a.inter = b.inter;
  a.inter_a = d.fp8 ? b.inter_q : reinterpret_cast<const std::uint8_t*>(b.inter);
  a.inter_scale = b.inter_scale;
  a.partials = b.partials;
  a.y = b.y;
  return a;
}

template <class F>
void by_dtype(bool fp8, F&& f) {
  if (fp8) f.template operator()<std::uint8_t>();
  else f.template operator()<std::uint16_t>();
}

void launch_kind(Kind kind, const KernelTileCfg& tile, const Args& a, dim3 grid, hipStream_t s) {
  by_dtype(a.d.fp8, [&]<class T>() {
    with_tile(tile, [&]<int M, int N, int K>() {
      if constexpr (WsTile<T, M, N, K, plan::rules::kWsThreads>::ok) {
        if (tile.threads == plan::rules::kWsThreads) {
          return launch_tile<T, M, N, K, false, plan::rules::kWsThreads>(kind, a, grid, s);
        }
      }
      if constexpr (sizeof(T) == 1) {
        if (a.d.quant == Quant::block_128) return launch_tile<T, M, N, K, true>(kind, a, grid, s);
      }
      launch_tile<T, M, N, K, false>(kind, a, grid, s);
    });
  });
}

std::uint32_t ceil_div(std::uint32_t a, std::uint32_t b) { return (a + b - 1) / b; }

}  // namespace

namespace tma {
bool encode_bf16_rows(Map& map, const void* base, std::uint64_t rows, std::uint64_t cols,
                      std::uint32_t box_rows, const char*& why) {
#if TDMSIM_WGMMA && defined(__CUDACC__)
  static_assert(sizeof(Map) == sizeof(CUtensorMap) && alignof(Map) == alignof(CUtensorMap));
  using Encode = decltype(&cuTensorMapEncodeTiled);
  // Resolved once, through the runtime: the runner needs no link against libcuda.
  static const Encode encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      fn = nullptr;
    }
    return reinterpret_cast<Encode>(fn);
  }();
  if (!encode) {
    why = "the driver does not export cuTensorMapEncodeTiled";
    return false;
  }
  const cuuint64_t dims[2] = {cols, rows};
  const cuuint64_t strides[1] = {cols * 2};  // bytes from a row to the next
  const cuuint32_t box[2] = {kBoxCols, box_rows};
  const cuuint32_t steps[2] = {1, 1};
  CUtensorMap m;
  if (encode(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(base), dims, strides, box, steps,
             CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
             CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
    why = "cuTensorMapEncodeTiled refused the tensor (row bytes a multiple of 16, box rows <= 256)";
    return false;
  }
  std::memcpy(&map, &m, sizeof m);
  return true;
#else
  (void)map, (void)base, (void)rows, (void)cols, (void)box_rows;
  why = "TMA needs an sm_90a NVIDIA build";
  return false;
#endif
}
}  // namespace tma

const char* matrix_backend() {
#if TDMSIM_WGMMA
  return "wgmma (tiles of 64+ rows) + mma.sync";
#elif defined(TDMSIM_MMA_SYNC)
  return "mma.sync";
#else
  return "mfma (bf16; e4m3 x e4m3 on gfx940-942 and gfx950)";
#endif
}

bool supported(const MoeCase& c, std::string& why) {
  const auto check = [&](const KernelTileCfg& t, const char* which) {
    if (t.threads == plan::rules::kWsThreads) {
      if (!(TDMSIM_WGMMA && plan::rules::ws_tile(t.threads, t.m, t.n, t.k, c.fp8() ? 8 : 16)) ||
          (c.stages == 1 && std::string(which) == "gate_up")) {
        why = std::string(which) + " tile " + case_detail::tile_text(t) +
              ": 384 threads is the warp-specialized loop, which takes bf16 128x128x64 and 128x256x64 "
              "tiles of the 2-stage kernels in sm_90a builds (docs/gpu-kernels.md)";
        return false;
      }
    } else if (t.threads != kThreads) {
      why = std::string(which) + " tile has " + std::to_string(t.threads) + " threads; the kernels use 256 (384: warp-specialized)";
      return false;
    }
    if (t.m != c.block_m) {
      why = std::string(which) + " tile M " + std::to_string(t.m) + " differs from block_m " +
            std::to_string(c.block_m);
      return false;
    }
    if (!with_tile(t, []<int M, int N, int K>() {})) {
      why = std::string(which) + " tile " + std::to_string(t.m) + "x" + std::to_string(t.n) + "x" +
            std::to_string(t.k) + " is not instantiated (docs/gpu-kernels.md lists the tiles)";
      return false;
    }
    return true;
  };
  if (c.dtype != "bf16" && c.dtype != "fp8_e4m3") {
    why = "dtype " + c.dtype + ": the kernels run bf16 and fp8_e4m3";
    return false;
  }
  if (c.fp8() && c.quant != "per_token" && c.quant != "block_128") {
    why = "fp8 with quant " + c.quant + ": the kernels take per_token or block_128 scales";
    return false;
  }
  if (c.hidden % 16 != 0 || c.inter % 16 != 0) {
    why = "hidden and per-GPU intermediate sizes must be multiples of 16 (16-byte row copies)";
    return false;
  }
  if (c.pipeline_stages > kMaxStages) {
    why = "pipeline_stages " + std::to_string(c.pipeline_stages) + " > " + std::to_string(kMaxStages);
    return false;
  }
  if (!check(c.gate_up_tile, "gate_up")) return false;
  if (c.stages == 2 && !check(c.down_tile, "down")) return false;
  return true;
}

void launch_gate_up(const MoeCase& c, const LayerDims& d, const Weights& w, Buffers& b,
                    hipStream_t s) {
  const Args a = args_of(c, d, &w, b);
  const dim3 grid(ceil_div(d.inter, c.gate_up_tile.n / 2) * c.split_k * c.blocks);
  if (c.blocks > 0) launch_kind(Kind::gate_up, c.gate_up_tile, a, grid, s);
}

void launch_splitk_reduce(const MoeCase& c, const LayerDims& d, Buffers& b, hipStream_t s) {
  const Args a = args_of(c, d, nullptr, b);
  if (c.padded_rows == 0) return;
  hipLaunchKernelGGL(splitk_reduce_kernel, dim3(c.padded_rows), dim3(kThreads), 0, s, a,
                     c.padded_rows);
  TDMSIM_HIP_CHECK(hipGetLastError());
}

void launch_quant_inter(const MoeCase& c, const LayerDims& d, Buffers& b, hipStream_t s) {
  const Args a = args_of(c, d, nullptr, b);
  if (c.padded_rows == 0) return;
  hipLaunchKernelGGL(quant_inter_kernel, dim3(c.padded_rows), dim3(kThreads), 0, s, a, b.inter_q,
                     b.inter_scale);
  TDMSIM_HIP_CHECK(hipGetLastError());
}

void launch_down(const MoeCase& c, const LayerDims& d, const Weights& w, Buffers& b,
                 hipStream_t s) {
  const Args a = args_of(c, d, &w, b);
  const dim3 grid(ceil_div(d.hidden, c.down_tile.n) * c.split_k * c.blocks);
  if (c.blocks > 0) launch_kind(Kind::down, c.down_tile, a, grid, s);
}

void launch_fused(const MoeCase& c, const LayerDims& d, const Weights& w, Buffers& b,
                  hipStream_t s) {
  const Args a = args_of(c, d, &w, b);
  const dim3 grid(ceil_div(d.inter, c.gate_up_tile.n / 2) * c.blocks);
  if (c.blocks > 0) launch_kind(Kind::fused, c.gate_up_tile, a, grid, s);
}

}  // namespace tdmsim::gpu
