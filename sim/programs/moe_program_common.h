// Internal to the MoE tile programs (sim/programs/moe_*.cpp): the per-layer
// data every kernel's program() reads (Layer), the instruction counts the
// programs charge (k* constants, with where each comes from), and the helpers
// the kernel families share. Not part of the simulator's interface: include
// sim/programs/moe_kernels.h for that.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "descriptors/plan/amd_kernels.h"
#include "descriptors/plan/moe_plan.h"
#include "isa/tile_program.h"
#include "sim/programs/moe_kernels.h"

namespace tdmsim::sim::programs::moe_detail {

using plan::MoePlan;
using plan::Stage;
using plan::TileJob;
using isa::gathered;
using isa::strided;

// Vector work per element of the epilogues (our estimates, docs/moe-timing.md):
// SwiGLU is exp, add, reciprocal and two multiplies plus a conversion.
inline constexpr std::uint64_t kActivationOps = 8;
// Re-quantising the intermediate to fp8: amax reduction, scale, convert.
inline constexpr std::uint64_t kQuantOps = 4;
// Down epilogue: routed-weight multiply, conversion for the atomic add.
inline constexpr std::uint64_t kCombineOps = 2;
// Split-K reduction: one add per partial per element.
inline constexpr std::uint64_t kReduceOps = 1;
// Our NVIDIA kernels' epilogues (kernels/moe/fused_moe.hip), issued by each
// thread in turn and so bound by the warps' issue rate (kernels.warp_issue_cycles),
// not by the vector pipe. gate_up_kernel, per element of a real row: 67
// thread instructions, counted by Nsight Compute on Mixtral-8x7B 4096 tokens
// (validation/data/h200/moe/epilogue-2026-11-30/ncu: the C reads, scales, two
// bf16 roundings, SwiGLU with its IEEE division, packing and the store);
// with split-K, per element of a real row, the partial sums' path instead
// (~12 from the source: per four columns the loop and tests ~10, two float4 C
// reads, ten scale loads, sixteen multiplies, the address, two float4
// stores); per four columns of a padding row, the loop step and row test
// (~8, from the source). down_kernel, per element of a real row: ~14, from the source (per
// four columns: the loop step, index split and bounds and token tests ~10, a
// float4 C read, six scale loads, twelve multiplies, four bf16 roundings ~20,
// the address and one vector atomic ~5).
inline constexpr std::uint64_t kGateUpEpilogueOps = 67;
inline constexpr std::uint64_t kGateUpPartialOps = 12;
// The persistent warp-specialized gate/up kernel (gate_up_ws_kernel) applies
// its epilogue from the consumers' accumulators (256 threads; the producer
// warpgroup meanwhile copies the next job's first K tiles), on every element
// of the BM x N/2 tile, padding rows included (only the store is
// predicated): 19 thread instructions an element, counted by Nsight Compute
// on Mixtral-8x7B 4096 tokens (validation/data/h200/moe/persistent-2026-11-30/
// ncu: two bf16x2 conversions, SwiGLU with the fast logistic, the packing and
// a 4-byte store per two columns); with split-K, per two columns the column,
// its bound, the row address and the two float2 stores of gate and up
// partials (~7, so ~4 an element, from the source).
inline constexpr std::uint64_t kWsGateUpEpilogueOps = 19;
inline constexpr std::uint64_t kWsGateUpPartialOps = 4;
inline constexpr std::uint32_t kWsConsumerThreads = 256;
inline constexpr std::uint64_t kDownEpilogueOps = 14;
inline constexpr std::uint64_t kEpilogueSkipOpsPer4 = 8;
// The fp8 intermediate's quantisation kernel (quant_inter_kernel in
// kernels/moe/fused_moe.hip), instructions counted from its source: per
// element, the amax pass (address, load, widen, abs, max, loop step: 8) and
// the quantising pass (address, load, widen, fp32 division ~10, e4m3_bits ~25
// integer operations, address and byte store, loop step: 43); per scale group
// and thread, the reduction (5 shuffles and maxima, partial store, 2
// barriers, 8 partial loads and maxima, the scale's division and store, loop
// set-up: ~50).
inline constexpr std::uint64_t kQuantAmaxOps = 8;
inline constexpr std::uint64_t kQuantRoundOps = 43;
inline constexpr std::uint64_t kQuantGroupOpsPerThread = 50;
// The 1-stage kernel's down phase (fused_kernel), per chunk of N output
// columns, counted from its source: the e4m3 -> bf16 conversion of the chunk's
// down rows in LDS, per element (loop step, index split, LDS byte load,
// e4m3_to_bf16_fast, LDS store: 17); the scan of the BM x N product that adds
// it into y, per element, padding rows included (loop step, index split,
// bounds test, LDS token load and test: 12); per element of a real row, the
// add itself (scale load, product load, two multiplies, address, atomic: 10).
inline constexpr std::uint64_t kFusedConvertOps = 17;
inline constexpr std::uint64_t kFusedScanOps = 12;
inline constexpr std::uint64_t kFusedAddOps = 10;
// What those counts from the source leave out, per element of the BM x N
// product of a chunk (per thread: BM x N / threads a chunk): Nsight Compute
// executed 931.7 M warp instructions in the calibration scenario
// dsv3-fp8-4tok-1stage-pt (validation/data/h200/moe/ncu-2026-11-30: 1024
// workgroups of 8 warps, 113.7 k a warp) where every count of this file for
// that kernel gives 83.5 k (phase 1's K tiles 13.4 k, its epilogue 0.2 k, the
// down phase's chunks 69.9 k); the 30.2 k left, over its 56 chunks of 64 x 128
// products (32 elements a thread), is 16.8 a thread per element. It is put on
// the product's element because everything of a chunk that is not per
// converted weight or per copy scales with it (the product's wmma fragment
// loads and stores, with K = N / 2, and the scan), so the same count holds for
// other tiles. Fitted to that instruction count (not to any time), on a
// calibration scenario; docs/calibration.md.
inline constexpr std::uint64_t kFusedProductOps = 17;
// The 1-stage kernel's phase-1 epilogue (fused_kernel), per element of the
// BM x N/2 slice: a real row's activation as gate_up_kernel's counted
// kGateUpEpilogueOps (67) less its two bf16 roundings of gate and up (~5
// each), which the 1-stage kernel does not do: 57; a padding row's element
// (loop step, index split, the column and token tests, the zero's LDS
// store): 12. Both from the source.
inline constexpr std::uint64_t kFusedActivationOps = 57;
inline constexpr std::uint64_t kFusedActivationSkipOps = 12;
// And per chunk and thread, the rest of the chunk's loop (our count, as the
// main loops' below): per 16-byte cp.async of the down rows 21 (the index
// split, the K-tail bounds, a 64-bit row address, LDGSTS); the wait, three
// barriers and the loop (8); per wmma K step and fragment of a multiplying
// warp a 16 x 16 load from LDS (8 loads, 2 addresses) and per fragment pair
// 2 mma; per fragment pair its zeroing (8) and store to LDS (10).
inline constexpr std::uint64_t kFusedCopyOps = 21;
inline constexpr std::uint64_t kFusedChunkLoopOps = 8;
inline constexpr std::uint64_t kFusedFragmentLoadOps = 10;
inline constexpr std::uint64_t kFusedFragmentOps = 18;
// One K tile of our NVIDIA main loops (kernels/moe/fused_moe.hip), in
// instructions of one warp, counted from the source per construct; the
// counts per construct are those of the SASS of one instance (the 16x64x128
// e4m3 block_128 gate/up tile, gemm_core_mma: Nsight Compute's executed
// instructions per warp and K tile, validation/data/h200/moe/ws-2026-11-30/ncu,
// 316 for a multiplying warp). Every warp: the loop's own control, the jump
// table of async_wait_at_most (its LDC and BRX), the cp.async wait, the
// barrier and the group commit (25).
inline constexpr std::uint32_t kTileLoopOps = 25;
// `tile % stages` by the run-time buffer count: an unsigned division
// (I2F, MUFU.RCP, F2I and the correction steps: 17), paid by the copy issue
// and again for the stage being read.
inline constexpr std::uint32_t kStageDivisionOps = 17;
// Per 16-byte cp.async a thread issues (TileCopy::copy: source or zero-fill,
// byte count of the K tail, address, LDGSTS: 19), plus 3 for the issue.
inline constexpr std::uint32_t kCopyOps = 19;
inline constexpr std::uint32_t kCopyIssueOps = 3;
// gemm_core_mma, a multiplying warp: the stage's swizzled ldmatrix addresses
// (29 besides the division); per 32-byte K step, per A or B fragment, one
// ldmatrix and 2 address operations; per fragment and step of an e4m3 tile
// converted to f16 (TDMSIM_FP8_VIA_F16), 8 cvt and 4 shifts; block_128: per
// scale loaded (2 per A fragment, 1 per B fragment) 7 (its row's pointer
// from LDS, the address, the load), and per pair of fragments the scaled
// add of the partial sums (8 FFMA, 2 FMUL).
inline constexpr std::uint32_t kMmaStageOps = 29;
inline constexpr std::uint32_t kFragmentLoadOps = 3;
inline constexpr std::uint32_t kFragmentConvertOps = 12;
inline constexpr std::uint32_t kScaleLoadOps = 7;
inline constexpr std::uint32_t kScaleApplyOps = 10;
// gemm_core_wgmma (the wgmma loop of tiles of 64+ rows), one warp per K tile,
// besides the loop, divisions and copies it shares with gemm_core_mma: per
// 32-byte K step two LDS descriptors and the wgmma (7); the fences, commit and
// wait (4); 8-bit tiles promote each fp32 accumulator (an add; block_128 an
// FFMA). block_128 also loads its scales: the thread's two rows' activation
// scales and one weight scale per 16-column fragment (gemm_core_wgmma loads
// sw[j] = b_scale[(col0 + 8 j) / 16][kb] for each group of 8 columns, but the
// two groups of a fragment read the same address, which the compiler loads
// once: accumulators / 8 distinct loads, not / 4), each of kScaleLoadOps; and
// multiplies each distinct pair of them once (2 x accumulators / 8 FMUL: the
// accumulators of one row and fragment share their scale product).
// Our estimates per construct from the source, not read off its SASS; they
// give 240 per warp for e4m3 64x128x128, 290 with block_128, and 396 for e4m3
// block_128 128x128x128 (310 per_token).
inline constexpr std::uint32_t kWgmmaStepOps = 7;
inline constexpr std::uint32_t kWgmmaSyncOps = 4;
// The sort kernel (moe_align_block_size): histogram, prefix sum, scatter.
inline constexpr std::uint64_t kSortOpsPerRow = 8;
inline constexpr std::uint32_t kSortRowsPerWorkgroup = 4096;  // 256 threads x 16 rows
// Our sort (kernels/moe/sort.hip launch_sort), four kernels; counts read off
// the source. fuse_kernel: a thread per row or capacity entry (256 a
// workgroup): index and slot split, two loads, up to four stores (~12).
// count_kernel and place_kernel: a workgroup of kSortChunk threads per chunk
// of kSortChunk rows. count: a load, a test and an LDS atomic per row, a
// clear and a store per expert (~8). place: the rank among equal experts by
// 32 shuffles (shuffle, compare, two adds: 128), then 32 warp steps (test,
// barrier, loop: 96); the warp whose turn it is loads its rows' weights,
// which its stores wait for, so the chunk's warps with a row each wait one
// round trip in turn. scan_kernel: one workgroup of 256 threads, a thread per
// expert (ceil(E / 256) passes): the expert's count in every chunk loaded,
// added and stored back in turn (a load the next store waits for: a chain of
// `chunks` round trips per pass), then the blocks per expert, two shuffle
// scans and the block -> expert map (~40 per expert).
inline constexpr std::uint32_t kSortChunk = plan::rules::kSortChunk;
inline constexpr std::uint32_t kSortThreads = 256;
inline constexpr std::uint64_t kSortFuseOps = 12;
inline constexpr std::uint64_t kSortCountOps = 8;
inline constexpr std::uint64_t kSortPlaceOps = 128 + 96;
inline constexpr std::uint64_t kSortScanOpsPerExpert = 40;
// Our sort in one kernel (sort.hip sort_one_kernel), when the rows fit one
// chunk: one workgroup of plan::rules::sort_one_threads() threads, a thread per row and per
// expert, its phases serial between barriers; counts per thread read off the
// source (its PTX), in the four kernels' convention (a shuffle step 4).
// Fused routing of its row (index split by a division, two loads, the
// choice) and the counter cleared (~30); each pass of the padding fill (~8);
// the LDS atomic and a barrier (~8); the scan: its expert's count, blocks by a
// division, two five-step shuffle scans, three barriers, the stores and the
// cursor (~140); the block -> expert map, per block of the busiest expert
// (~4); the rank among equal experts (128, as place_kernel's); per warp with
// rows a turn (test, barrier, loop: ~5), and its own turn (cursor load, two
// stores, the cursor moved: ~18). The weights stay in registers, so no turn
// waits for a load (place_kernel's does).
inline constexpr std::uint64_t kSortOneFuseOps = 30;
inline constexpr std::uint64_t kSortOneFillOpsPerPass = 8;
inline constexpr std::uint64_t kSortOneCountOps = 8;
inline constexpr std::uint64_t kSortOneScanOps = 140;
inline constexpr std::uint64_t kSortOneMapOpsPerBlock = 4;
inline constexpr std::uint64_t kSortOneRankOps = 128;
inline constexpr std::uint64_t kSortOneTurnOps = 5;
inline constexpr std::uint64_t kSortOneOwnTurnOps = 18;
inline constexpr std::uint32_t kVgprs = 128;  // per thread, for the MFMA/WGMMA kernels
// Threads of AITER's 1-stage assembly kernels (asm_fmoe.cu: bdx = 256).
inline constexpr std::uint32_t kAiterOneStageThreads = 256;
// Bytes one workgroup of the output-clearing kernel writes (a memset's grid).
inline constexpr std::uint64_t kZeroBytesPerWorkgroup = 64 * 1024;

inline std::uint32_t ceil_div(std::uint64_t a, std::uint64_t b) {
  return static_cast<std::uint32_t>((a + b - 1) / b);
}

// Bytes of `elems` elements of `t` (whole bytes, rounding up 4-bit pairs).
inline std::uint32_t bytes_of(std::uint64_t elems, DType t) {
  return static_cast<std::uint32_t>((elems * dtype_bits(t) + 7) / 8);
}

// Everything a kernel's program() needs, shared by the kernels of a layer so
// the plan's vectors are not copied per workgroup.
struct Layer {
  plan::LayerShape shape;
  plan::KernelChoice kernel;
  MoeBuffers buf;
  bool tdm = false;         // token rows arrive through the tensor data movers
  DType mma = DType::bf16;  // matrix-pipe dtype of the mma.sync / ISA loops
  DType mma_wgmma = DType::bf16;  // and of the wgmma loops (8-bit operands as they are)
  bool mma_sync = false;    // our NVIDIA kernels (kernels.matrix_instructions: mma_sync or wgmma)
  // Our kernels on a CDNA machine (kernel.source tdmsim): the code objects
  // whose main-loop mix and LDS they are charged (plan::mix_target); none for
  // AITER's kernels and other machines.
  std::optional<plan::CdnaTarget> amd_target;
  // What amd_loop_of charges a main loop of each plan::LoopKernel (indexed by
  // it) for the tile it was looked up with: looked up once per layer in
  // build() (amd_loop_lookup), since every workgroup's program needs it and
  // the lookup (a nearest-tile search over the compiled table, with
  // logarithms) cost more than the rest of building a program. A tile other
  // than the one looked up is looked up as it comes.
  struct AmdLoop {
    bool looked_up = false;
    std::uint32_t m = 0, n = 0, k = 0;  // the tile
    std::optional<plan::MixChoice> mix;
    std::uint32_t lds_bytes = 0;  // plan::amd_kernel_lds_bytes (when there is a mix)
  };
  std::array<AmdLoop, 3> amd_loops{};
  bool wgmma_gate_up = false, wgmma_down = false;  // plan::wgmma_tile of each stage's tile
  bool ws_gate_up = false, ws_down = false;        // plan::ws_tile of each stage's tile
  // Vector-pipe element operations per fp8 -> f16 conversion of a pair
  // (kernels.fp8_conversions_per_clock; 0: conversions not modelled).
  double lane_ops_per_conversion = 0;
  // Vector-pipe element operations per weight element a main loop dequantises
  // in registers before its matrix instructions (mixed pairs whose weights
  // the matrix pipe does not take as they are; dequant_ops_per_weight).
  double dequant_ops = 0;
  DType inter_dtype = DType::bf16;  // what gate/up stores (bf16 when a kernel quantises)
  std::uint32_t block_m = 0;
  std::uint32_t padded_rows = 0;
  std::uint32_t blocks = 0;
  std::uint64_t x_row = 0;    // bytes of one activation row (H elements)
  std::uint64_t out_row = 0;  // bytes of one output row (H elements of the combine type)
  std::uint32_t out_elem = 2; // bytes of one output element
  std::vector<TileJob> stage1, stage2;
  std::vector<std::uint32_t> block_expert;
  std::uint64_t sort_overhead_ps = 0;      // kernels.sort_overhead (the four-kernel sort)
  std::uint64_t sort_one_overhead_ps = 0;  // kernels.sort_one_overhead (the one-kernel sort)
  std::uint64_t clear_overhead_ps = 0;  // kernels.clear_overhead
  std::uint64_t vgpr_file_bytes = 0;    // compute.vgpr_file_per_cu
  // Our sort's scratch (sort.hip): fused expert and weight per row, counts
  // per chunk and expert (the one kernel: rows per expert), first block per
  // expert; and per chunk, the first row of each warp with a local row
  // (place_kernel's serial loads).
  std::uint64_t l2_hit_ps = 0;  // memory.l2.hit_latency
  std::uint64_t topk_weights = 0, fused_rows = 0, chunk_counts = 0, first_block = 0;
  std::vector<std::vector<std::uint32_t>> chunk_warp_rows;
  std::uint64_t iteration_overhead_ps = 0;  // kernels.iteration_overhead
  std::uint64_t fp8_tile_wait_ps = 0;  // kernels.wgmma_fp8_tile_wait
  // Per block: byte offsets of its real rows' tokens in x and in out.
  std::vector<std::shared_ptr<const std::vector<std::uint64_t>>> x_rows, out_rows;
};

// The 16 x 16 fragments of an M x N tile (at least one each way), the grid of
// the kernel's 8 warps over them (plan::rules::warp_grid, as
// kernels/moe/fused_moe.hip WarpGrid) and the fragments of one warp, tm x tn.
struct Fragments {
  std::uint32_t fm, fn, wm, wn, tm, tn;
};

// Shared helpers (moe_program_common.cpp; each is described there).
isa::MemRange token_rows(bool tdm, std::uint64_t addr, std::uint32_t row_bytes, std::uint32_t rows,
                         std::shared_ptr<const std::vector<std::uint64_t>> offsets,
                         std::int64_t iter_stride = 0);
std::uint32_t lds_for(const Layer& l, std::uint32_t n_rows, std::uint32_t k);
std::uint32_t gemm_vgprs(const Layer& l, const KernelTile& tile, bool wgmma);
std::uint32_t copies_ahead(const Layer& l, const KernelTile& tile, bool wgmma);
isa::TileProgram base_program(const Layer& l, const KernelTile& tile, std::uint32_t n_rows, bool wgmma);
Fragments fragments(std::uint32_t m, std::uint32_t n);
std::uint64_t fp8_conversions(const KernelTile& t);
std::uint64_t epilogue_skip_ops(const Layer& l, const TileJob& j, std::uint32_t cols);
std::uint32_t tile_instructions(const Layer& l, const KernelTile& tile, bool wgmma);
void matrix_of(const Layer& l, bool wgmma, bool ws, const KernelTile* tile, isa::Loop& loop);
// Our AMD kernel's main loop on CDNA (Layer::amd_target): its code object's
// instruction mix, its LDS, and bf16 MFMAs where it converts e4m3.
void amd_loop_of(const Layer& l, plan::LoopKernel kind, const KernelTile& tile, isa::TileProgram& p, isa::Loop& loop);
// The mix and LDS amd_loop_of charges a loop of `kind` with `tile` (the
// lookup itself: Layer::amd_loops keeps its result per layer).
Layer::AmdLoop amd_loop_lookup(const Layer& l, plan::LoopKernel kind, const KernelTile& tile);
void block_prologue(const Layer& l, std::uint32_t block, isa::TileProgram& p);
// A main loop's in-register dequantisation of an n x k weight tile per
// iteration (mixed pairs, Layer::dequant_ops), beside its matrix work.
void dequant_of(const Layer& l, std::uint32_t n, std::uint32_t k, isa::Loop& loop);
void scale_prologue(const Layer& l, const TileJob& j, std::uint32_t n_rows, std::uint32_t k_len,
                    isa::TileProgram& p);
std::uint64_t w13_of(const Layer& l, std::uint32_t expert);
std::uint64_t w2_of(const Layer& l, std::uint32_t expert);

// The 2-stage kernels and what runs between them (moe_gemm_programs.cpp).
isa::TileProgram gate_up_program(const Layer& l, const TileJob& j);
isa::TileProgram reduce_program(const Layer& l, std::uint32_t block, std::uint32_t valid);
isa::TileProgram quant_program(const Layer& l, std::uint32_t row, bool real);
isa::TileProgram zero_program(const Layer& l, std::uint32_t wg, std::uint32_t wgs);
isa::TileProgram down_program(const Layer& l, const TileJob& j);

// The 1-stage kernel (moe_fused_program.cpp).
isa::TileProgram fused_program(const Layer& l, const TileJob& j);

// The sort kernels (moe_sort_programs.cpp).
isa::TileProgram sort_program(const Layer& l, std::uint32_t wg, std::uint32_t wgs);
isa::TileProgram sort_fuse_program(const Layer& l, std::uint32_t wg, std::uint32_t capacity);
isa::TileProgram sort_count_program(const Layer& l, std::uint32_t chunk);
isa::TileProgram sort_scan_program(const Layer& l, std::uint32_t chunks);
isa::TileProgram sort_place_program(const Layer& l, std::uint32_t chunk);
isa::TileProgram sort_one_program(const Layer& l, std::uint32_t capacity);

}  // namespace tdmsim::sim::programs::moe_detail
