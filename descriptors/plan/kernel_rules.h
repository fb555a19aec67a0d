// Rules of our GEMM kernels that the plan and the simulator must know as the
// kernels apply them: which tiles run Hopper's wgmma, their fewest pipeline
// buffers, and how many fp32 accumulator registers a thread holds. Plain
// constexpr C++ with no dependencies, so that kernels/moe/fused_moe.hip
// (nvcc, hipcc) and the host code (plan::wgmma_tile, the timing model's
// register count) use one definition.
#pragma once

#include <cstdint>

// Rules a kernel evaluates at run time are device functions as well.
#if defined(__CUDACC__) || defined(__HIPCC__)
#define TDMSIM_RULE __host__ __device__
#else
#define TDMSIM_RULE
#endif

namespace tdmsim::plan::rules {

// Vector registers per thread the timing model charges a matrix kernel on
// AMD and the AITER-like kernels (their occupancy: a 256-thread workgroup
// takes 128 KiB of the register file, four to a 512 KiB CDNA CU).
inline constexpr std::uint32_t kMatrixKernelVgprs = 128;

// The fewest pipeline buffers the wgmma loop runs with (the copy is issued
// buffers - 2 tiles ahead); the kernels raise a smaller request to this.
inline constexpr std::uint32_t kWgmmaMinStages = 3;

// fp32 columns of padding after each row of a GEMM's C tile in LDS (row
// stride N + kCTilePad). 8 puts the four rows a half-warp's 8-byte
// accumulator stores cover (wgmma/mma.sync D fragments: rows lane / 4,
// column pairs 2 (lane % 4)) 8 banks apart, so they do not conflict (with 4
// they did, 2-4 ways: Nsight Compute, ws-2026-11-30/ncu). The 1-stage
// kernel's LDS size counts it (sim/programs/moe_fused_program.cpp fused_lds).
inline constexpr std::uint32_t kCTilePad = 8;

// Our AMD GEMM kernels' dynamic LDS (kernels/moe/fused_moe.hip Smem and
// fused_phase2_bytes on AMD, where rows are padded by 16 bytes for the MFMA
// fragment loads): `stages` buffers of the (m + n) A and B rows of k
// elements of `elem_bytes`, plus, where e4m3 is converted to bf16 in LDS
// (`convert`: gfx90a, or a K tile of less than 64 bytes), (m + n) bf16 rows of
// k + 8; the fp32 C tile (m rows of n + kCTilePad) reuses them and needs
// that much at least. The host code asks for exactly this, the plan checks it
// against the machine's LDS per workgroup (docs/moe-plan.md "Kernel heuristic", item LDS on AMD).
constexpr std::uint32_t amd_gemm_lds_bytes(std::uint32_t m, std::uint32_t n, std::uint32_t k,
                                           std::uint32_t elem_bytes, std::uint32_t stages, bool convert) {
  const std::uint32_t row = k * elem_bytes + 16;
  const std::uint32_t main = stages * (m + n) * row + (convert ? (m + n) * (k + 8) * 2 : 0);
  const std::uint32_t c = m * (n + kCTilePad) * 4;
  return main > c ? main : c;
}
// The fused 1-stage kernel's second phase (down through its N/2 slice of the
// intermediate): three buffers of n padded rows of n/2 elements, the e4m3
// slice converted to bf16 (n rows of n/2 + 8) for 8-bit operands, and the
// fp32 product tile. The kernel asks for the larger of its two phases.
constexpr std::uint32_t fused_phase2_lds_bytes(std::uint32_t m, std::uint32_t n, std::uint32_t elem_bytes) {
  const std::uint32_t ks = n / 2;
  return 3 * n * (ks * elem_bytes + 16) + (elem_bytes == 1 ? n * (ks + 8) * 2 : 0) + m * (n + kCTilePad) * 4;
}
// Whether our AMD main loop converts e4m3 to bf16 in LDS: everywhere but
// the targets with the fp8 MFMA (gfx940-942, gfx950) when the K tile holds
// whole 64-byte fragments.
constexpr bool amd_converts_fp8(std::uint32_t elem_bytes, std::uint32_t k, bool fp8_mfma) {
  return elem_bytes == 1 && !(fp8_mfma && k % 64 == 0);
}

// Our sort (kernels/moe/sort.hip): rows (tokens x slots) in chunks of
// kSortChunk, at most kSortMaxFused fused experts. A layer whose rows fit one
// chunk sorts in one workgroup (sort_one_kernel) of sort_one_threads()
// threads: one per row and per expert, and enough that the padding fill of
// the `capacity` sorted entries takes at most 8 passes; a multiple of a warp,
// at most a chunk.
inline constexpr std::uint32_t kSortChunk = 1024;
inline constexpr std::uint32_t kSortMaxFused = 1024;
constexpr bool sort_one_kernel(std::uint64_t rows, std::uint32_t experts_fused) {
  return rows <= kSortChunk && experts_fused <= kSortMaxFused;
}
constexpr std::uint32_t sort_one_threads(std::uint64_t rows, std::uint32_t experts, std::uint32_t capacity) {
  std::uint64_t t = rows > experts ? rows : experts;
  const std::uint64_t fill = (std::uint64_t{capacity} + 7) / 8;
  if (t < fill) t = fill;
  if (t == 0) t = 1;
  t = (t + 31) / 32 * 32;
  return static_cast<std::uint32_t>(t < kSortChunk ? t : kSortChunk);
}

// fp32 accumulator registers per thread of an M x N tile on `threads`,
// doubled when partial sums are kept beside them (block_128 scales on
// mma.sync, every 8-bit tile on wgmma).
constexpr std::uint32_t accumulators(std::uint32_t m, std::uint32_t n, std::uint32_t threads, bool doubled) {
  return m * n / (threads ? threads : 1) * (doubled ? 2 : 1);
}

// How the warps of a workgroup split an M x N tile of 16 x 16 fragments in
// the mma.sync and wmma main loops: a wm x wn grid of warps (wm 1 for one
// fragment row, 4 for tall narrow tiles, else 2; wn as many as the columns
// and the remaining warps allow). Small tiles leave warps idle.
struct WarpGrid {
  std::uint32_t wm, wn;
};
constexpr WarpGrid warp_grid(std::uint32_t m, std::uint32_t n, std::uint32_t warps) {
  const std::uint32_t fm = m / 16, fn = n / 16;
  const std::uint32_t wm = fm == 1 ? 1 : (fm >= 8 && fn <= 4 ? 4 : 2);
  return {wm, fn < warps / wm ? fn : warps / wm};
}

// Whether a tile of 8- or 16-bit operands runs wgmma: 256 threads as two
// warpgroups (a 128-row tile gives each 64 rows, a 64-row tile each N/2
// columns), K rows of 32, 64 or 128 bytes (the swizzle modes), 32-256 columns
// per warpgroup, and its accumulators (doubled for 8-bit operands, which are
// promoted per K tile) at most 128 registers.
constexpr bool wgmma_tile(std::uint32_t threads, std::uint32_t m, std::uint32_t n, std::uint32_t k,
                          std::uint32_t bits) {
  if ((bits != 8 && bits != 16) || threads != 256 || (m != 64 && m != 128)) return false;
  const std::uint32_t row_bytes = k * bits / 8;
  if (row_bytes != 32 && row_bytes != 64 && row_bytes != 128) return false;
  const std::uint32_t groups_n = 2 / (m / 64);
  if (n % groups_n != 0) return false;
  const std::uint32_t per_group = n / groups_n;
  if (per_group != 32 && per_group != 64 && per_group != 128 && per_group != 256) return false;
  return accumulators(64, per_group, 128, bits == 8) <= 128;
}

// Whether a tile runs the warp-specialized wgmma loop (fused_moe.hip
// WsPipe, gate_up_ws_kernel and gemm_core_ws): 384 threads, of which one warpgroup only copies (a producer
// that keeps every pipeline buffer but the one being multiplied in flight)
// and two multiply, 64 rows each of a 128-row tile; 16-bit operands, K rows
// of 128 bytes, 128 or 256 columns (at most 128 accumulators a thread).
inline constexpr std::uint32_t kWsThreads = 384;
constexpr bool ws_tile(std::uint32_t threads, std::uint32_t m, std::uint32_t n, std::uint32_t k,
                       std::uint32_t bits) {
  return threads == kWsThreads && bits == 16 && m == 128 && k * bits / 8 == 128 && (n == 128 || n == 256);
}

// The order of a GEMM stage's tile jobs, which is also the order in which a
// software grid's workgroup ids map onto them (plan::tile_jobs; the kernels
// decode blockIdx.x with it). Blocks are taken in groups of `group`
// consecutive blocks; within a group the N tile is the outer index, then the
// block, then the K split. So the workgroups that run at the same time share
// a few N tiles of the weights (read from memory once, then from cache by the
// group's other blocks) and the group's A rows, which stay in cache across the
// whole N sweep. group 1 is block-major (a block's N tiles one after another:
// each block of an expert streams all of the expert's weights again).
struct JobAt {
  std::uint32_t block, n_tile, split;
};
TDMSIM_RULE constexpr JobAt job_at(std::uint32_t id, std::uint32_t blocks, std::uint32_t n_tiles, std::uint32_t splits,
                       std::uint32_t group) {
  const std::uint32_t full = group * n_tiles * splits;  // jobs of a whole group
  const std::uint32_t g = id / full, r = id % full;
  const std::uint32_t first = g * group;
  const std::uint32_t size = blocks - first < group ? blocks - first : group;  // the last may be short
  const std::uint32_t per_n = size * splits;
  return {first + r % per_n / splits, r / per_n, r % splits};
}
#undef TDMSIM_RULE

}  // namespace tdmsim::plan::rules
