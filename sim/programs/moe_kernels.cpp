#include "sim/programs/moe_kernels.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>

#include "descriptors/format/moe_builder.h"
#include "isa/matrix_table.h"
#include "workloads/specs/quant_formats.h"
#include <numeric>

namespace tdmsim::sim::programs {
namespace {

using plan::MoePlan;
using plan::Stage;
using plan::TileJob;

// Vector work per element of the epilogues (our estimates, docs/moe-timing.md):
// SwiGLU is exp, add, reciprocal and two multiplies plus a conversion.
constexpr std::uint64_t kActivationOps = 8;
// In-register weight dequantisation of the mixed pairs (dequant_ops_per_weight),
// vector element operations per weight element. ESTIMATES (docs/calibration.md,
// "Mixed-precision dequantisation"), not measured: fp4 on CDNA4/gfx1250 one
// (v_cvt_scalef32_pk_bf16_fp4 converts two e2m1 and applies the E8M0 scale,
// plus the operand shuffle); fp4 elsewhere two (nibble extraction and a
// table or bit-manipulation conversion); int4 two (nibble extraction with
// sign, and the convert-and-scale multiply-add).
constexpr double kDequantOpsFp4Cvt = 1.0;
constexpr double kDequantOpsFp4 = 2.0;
constexpr double kDequantOpsInt4 = 2.0;

// Re-quantising the intermediate to fp8: amax reduction, scale, convert.
constexpr std::uint64_t kQuantOps = 4;
// Down epilogue: routed-weight multiply, conversion for the atomic add.
constexpr std::uint64_t kCombineOps = 2;
// Split-K reduction: one add per partial per element.
constexpr std::uint64_t kReduceOps = 1;
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
constexpr std::uint64_t kGateUpEpilogueOps = 67;
constexpr std::uint64_t kGateUpPartialOps = 12;
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
constexpr std::uint64_t kWsGateUpEpilogueOps = 19;
constexpr std::uint64_t kWsGateUpPartialOps = 4;
constexpr std::uint32_t kWsConsumerThreads = 256;
constexpr std::uint64_t kDownEpilogueOps = 14;
constexpr std::uint64_t kEpilogueSkipOpsPer4 = 8;
// The fp8 intermediate's quantisation kernel (quant_inter_kernel in
// kernels/moe/fused_moe.hip), instructions counted from its source: per
// element, the amax pass (address, load, widen, abs, max, loop step: 8) and
// the quantising pass (address, load, widen, fp32 division ~10, e4m3_bits ~25
// integer operations, address and byte store, loop step: 43); per scale group
// and thread, the reduction (5 shuffles and maxima, partial store, 2
// barriers, 8 partial loads and maxima, the scale's division and store, loop
// set-up: ~50).
constexpr std::uint64_t kQuantAmaxOps = 8;
constexpr std::uint64_t kQuantRoundOps = 43;
constexpr std::uint64_t kQuantGroupOpsPerThread = 50;
// The 1-stage kernel's down phase (fused_kernel), per chunk of N output
// columns, counted from its source: the e4m3 -> bf16 conversion of the chunk's
// down rows in LDS, per element (loop step, index split, LDS byte load,
// e4m3_to_bf16_fast, LDS store: 17); the scan of the BM x N product that adds
// it into y, per element, padding rows included (loop step, index split,
// bounds test, LDS token load and test: 12); per element of a real row, the
// add itself (scale load, product load, two multiplies, address, atomic: 10).
constexpr std::uint64_t kFusedConvertOps = 17;
constexpr std::uint64_t kFusedScanOps = 12;
constexpr std::uint64_t kFusedAddOps = 10;
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
constexpr std::uint64_t kFusedProductOps = 17;
// The 1-stage kernel's phase-1 epilogue (fused_kernel), per element of the
// BM x N/2 slice: a real row's activation as gate_up_kernel's counted
// kGateUpEpilogueOps (67) less its two bf16 roundings of gate and up (~5
// each), which the 1-stage kernel does not do: 57; a padding row's element
// (loop step, index split, the column and token tests, the zero's LDS
// store): 12. Both from the source.
constexpr std::uint64_t kFusedActivationOps = 57;
constexpr std::uint64_t kFusedActivationSkipOps = 12;
// And per chunk and thread, the rest of the chunk's loop (our count, as the
// main loops' below): per 16-byte cp.async of the down rows 21 (the index
// split, the K-tail bounds, a 64-bit row address, LDGSTS); the wait, three
// barriers and the loop (8); per wmma K step and fragment of a multiplying
// warp a 16 x 16 load from LDS (8 loads, 2 addresses) and per fragment pair
// 2 mma; per fragment pair its zeroing (8) and store to LDS (10).
constexpr std::uint64_t kFusedCopyOps = 21;
constexpr std::uint64_t kFusedChunkLoopOps = 8;
constexpr std::uint64_t kFusedFragmentLoadOps = 10;
constexpr std::uint64_t kFusedFragmentOps = 18;
// One K tile of our NVIDIA main loops (kernels/moe/fused_moe.hip), in
// instructions of one warp, counted from the source per construct; the
// counts per construct are those of the SASS of one instance (the 16x64x128
// e4m3 block_128 gate/up tile, gemm_core_mma: Nsight Compute's executed
// instructions per warp and K tile, validation/data/h200/moe/ws-2026-11-30/ncu,
// 316 for a multiplying warp). Every warp: the loop's own control, the jump
// table of async_wait_at_most (its LDC and BRX), the cp.async wait, the
// barrier and the group commit (25).
constexpr std::uint32_t kTileLoopOps = 25;
// `tile % stages` by the run-time buffer count: an unsigned division
// (I2F, MUFU.RCP, F2I and the correction steps: 17), paid by the copy issue
// and again for the stage being read.
constexpr std::uint32_t kStageDivisionOps = 17;
// Per 16-byte cp.async a thread issues (TileCopy::copy: source or zero-fill,
// byte count of the K tail, address, LDGSTS: 19), plus 3 for the issue.
constexpr std::uint32_t kCopyOps = 19;
constexpr std::uint32_t kCopyIssueOps = 3;
// gemm_core_mma, a multiplying warp: the stage's swizzled ldmatrix addresses
// (29 besides the division); per 32-byte K step, per A or B fragment, one
// ldmatrix and 2 address operations; per fragment and step of an e4m3 tile
// converted to f16 (TDMSIM_FP8_VIA_F16), 8 cvt and 4 shifts; block_128: per
// scale loaded (2 per A fragment, 1 per B fragment) 7 (its row's pointer
// from LDS, the address, the load), and per pair of fragments the scaled
// add of the partial sums (8 FFMA, 2 FMUL).
constexpr std::uint32_t kMmaStageOps = 29;
constexpr std::uint32_t kFragmentLoadOps = 3;
constexpr std::uint32_t kFragmentConvertOps = 12;
constexpr std::uint32_t kScaleLoadOps = 7;
constexpr std::uint32_t kScaleApplyOps = 10;
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
constexpr std::uint32_t kWgmmaStepOps = 7;
constexpr std::uint32_t kWgmmaSyncOps = 4;
// The sort kernel (moe_align_block_size): histogram, prefix sum, scatter.
constexpr std::uint64_t kSortOpsPerRow = 8;
constexpr std::uint32_t kSortRowsPerWorkgroup = 4096;  // 256 threads x 16 rows
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
constexpr std::uint32_t kSortChunk = plan::rules::kSortChunk;
constexpr std::uint32_t kSortThreads = 256;
constexpr std::uint64_t kSortFuseOps = 12;
constexpr std::uint64_t kSortCountOps = 8;
constexpr std::uint64_t kSortPlaceOps = 128 + 96;
constexpr std::uint64_t kSortScanOpsPerExpert = 40;
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
constexpr std::uint64_t kSortOneFuseOps = 30;
constexpr std::uint64_t kSortOneFillOpsPerPass = 8;
constexpr std::uint64_t kSortOneCountOps = 8;
constexpr std::uint64_t kSortOneScanOps = 140;
constexpr std::uint64_t kSortOneMapOpsPerBlock = 4;
constexpr std::uint64_t kSortOneRankOps = 128;
constexpr std::uint64_t kSortOneTurnOps = 5;
constexpr std::uint64_t kSortOneOwnTurnOps = 18;
constexpr std::uint32_t kVgprs = 128;  // per thread, for the MFMA/WGMMA kernels
// Bytes one workgroup of the output-clearing kernel writes (a memset's grid).
constexpr std::uint64_t kZeroBytesPerWorkgroup = 64 * 1024;

std::uint32_t ceil_div(std::uint64_t a, std::uint64_t b) {
  return static_cast<std::uint32_t>((a + b - 1) / b);
}

// Bytes of `elems` elements of `t` (whole bytes, rounding up 4-bit pairs).
std::uint32_t bytes_of(std::uint64_t elems, DType t) {
  return static_cast<std::uint32_t>((elems * dtype_bits(t) + 7) / 8);
}

using isa::gathered;
using isa::strided;

// A gather of token rows into LDS: by the waves (software), or by the CU's
// tensor data movers from a gather descriptor (TDM path).
isa::MemRange token_rows(bool tdm, std::uint64_t addr, std::uint32_t row_bytes, std::uint32_t rows,
                         std::shared_ptr<const std::vector<std::uint64_t>> offsets,
                         std::int64_t iter_stride = 0) {
  isa::MemRange r = gathered(addr, row_bytes, rows, std::move(offsets), iter_stride);
  r.tensor_mover = tdm;
  return r;
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

std::uint32_t lds_for(const Layer& l, std::uint32_t n_rows, std::uint32_t k) {
  // A rows in the activation dtype, B rows in the weight dtype.
  const std::uint64_t tile = std::uint64_t{l.block_m} * bytes_of(k, l.shape.dtype) +
                             std::uint64_t{n_rows} * bytes_of(k, l.shape.weight_dtype);
  return static_cast<std::uint32_t>(tile * std::max(1u, l.kernel.pipeline_stages));
}

// Registers per thread of a GEMM tile. Our NVIDIA kernels are compiled for
// two workgroups per SM (<= 128 registers) when the fp32 accumulators,
// doubled by block_128 partial sums, need at most 64 per thread, else for one
// (kernels/moe/fused_moe.hip kMinBlocks, both counting with
// plan::rules::accumulators); tiles with at most 16 accumulators
// use about half that (ptxas -v, docs/gpu-kernels.md). Other kernels: kVgprs.
std::uint32_t gemm_vgprs(const Layer& l, const KernelTile& tile, bool wgmma) {
  if (!l.mma_sync) return kVgprs;
  // The warp-specialized loop is compiled for one workgroup of 384 threads an
  // SM: 65536 / 384 registers, 168 in ptxas's steps of 8 (it uses 154).
  if (wgmma && tile.threads == plan::rules::kWsThreads) return 168;
  // Partial sums double the accumulators: block_128 on mma.sync, every 8-bit
  // layer on wgmma (promoted per K tile, plan::wgmma_tile).
  const bool doubled = wgmma ? dtype_bits(l.shape.dtype) == 8 : l.shape.quant == Quant::block_128;
  const std::uint32_t acc = plan::rules::accumulators(tile.m, tile.n, tile.threads, doubled);
  return acc <= 16 ? 64 : acc <= 64 ? 128 : 255;  // ptxas: ~40-80, 92-128, 140-255
}

// K tiles whose copies are in flight while a tile is multiplied (the
// program's pipeline_depth: iteration i's loads go out when iteration
// i - depth's math starts), as our NVIDIA main loops keep them
// (kernels/moe/fused_moe.hip, `stages` LDS buffers): gemm_core_mma waits for
// tile t with at most stages - 2 copy groups pending and issues tile
// t + stages - 1 only after tile t's products (its buffer, that of tile t - 1,
// is free once every warp is past tile t's barrier): stages - 2 ahead;
// gemm_core_wgmma issues tile t + stages - 2 after tile t's barrier
// (`ahead`): stages - 2; the warp-specialized producer (WsPipe) refills a buffer as soon
// as the consumers release it, one tile after its products were issued:
// stages - 1. At least 1 (the model's minimum; a 2-buffer mma.sync loop has
// none in flight). Other machines' kernels: `stages`, as before.
std::uint32_t copies_ahead(const Layer& l, const KernelTile& tile, bool wgmma) {
  const std::uint32_t stages = std::max(1u, l.kernel.pipeline_stages);
  if (!l.mma_sync) return stages;
  const bool ws = wgmma && tile.threads == plan::rules::kWsThreads;
  const std::uint32_t behind = ws ? 1 : 2;
  return stages > behind ? std::max(1u, stages - behind) : 1u;
}

isa::TileProgram base_program(const Layer& l, const KernelTile& tile, std::uint32_t n_rows, bool wgmma) {
  isa::TileProgram p;
  // A GEMM workgroup's program: block and scale prologue, one or two loops,
  // its stores. (One allocation each: programs are built per workgroup.)
  p.prologue_loads.reserve(4);
  p.loops.reserve(2);
  p.stores.reserve(1);
  p.threads = tile.threads;
  p.vgprs_per_thread = gemm_vgprs(l, tile, wgmma);
  p.lds_bytes = lds_for(l, n_rows, tile.k);
  p.pipeline_depth = copies_ahead(l, tile, wgmma);
  p.iteration_overhead_ps = l.iteration_overhead_ps;
  return p;
}

// The 16 x 16 fragments of an M x N tile (at least one each way), the grid of
// the kernel's 8 warps over them (plan::rules::warp_grid, as
// kernels/moe/fused_moe.hip WarpGrid) and the fragments of one warp, tm x tn.
struct Fragments {
  std::uint32_t fm, fn, wm, wn, tm, tn;
};
Fragments fragments(std::uint32_t m, std::uint32_t n) {
  const std::uint32_t fm = std::max(1u, m / 16), fn = std::max(1u, n / 16);
  const auto [wm, wn] = plan::rules::warp_grid(16 * fm, 16 * fn, 8);
  return {fm, fn, wm, wn, fm / wm, fn / wn};
}

// Conversions of e4m3 pairs to f16 one K tile of an mma.sync main loop does:
// each computing warp converts the A and B fragments it multiplies, so A is
// converted once per warp column and B once per warp row of the kernel's
// warp grid (plan::rules::warp_grid, as kernels/moe/fused_moe.hip WarpGrid: 8
// warps of 16x16 fragments).
std::uint64_t fp8_conversions(const KernelTile& t) {
  const Fragments f = fragments(t.m, t.n);
  const std::uint64_t a_rows = std::uint64_t{f.fm} * 16 * f.wn, b_rows = std::uint64_t{f.fn} * 16 * f.wm;
  return (a_rows + b_rows) * t.k / 2;
}

// Our epilogues' instructions for the padding rows of job `j`: each passes
// only the loop's row test, per four of its `cols` columns.
std::uint64_t epilogue_skip_ops(const Layer& l, const TileJob& j, std::uint32_t cols) {
  return std::uint64_t{l.block_m - j.valid_rows} * ceil_div(cols, 4) * kEpilogueSkipOpsPer4;
}

// Instructions one multiplying warp of gemm_core_mma (our NVIDIA mma.sync main
// loop, kernels/moe/fused_moe.hip) issues per K tile of `tile` (the k* counts
// above), or one warp of gemm_core_wgmma (kWgmma*); 0 for the warp-specialized
// loop and other machines' kernels (docs/moe-timing.md "Per-K-tile
// instructions"). The copies are the thread's
// share of the tile's A and B rows in 16-byte chunks (TileCopy: the first
// threads, the multiplying warps, take one more when they do not divide).
std::uint32_t tile_instructions(const Layer& l, const KernelTile& tile, bool wgmma) {
  if (!l.mma_sync) return 0;
  // The warp-specialized loop's multiplying warps issue ~40 a K tile: far
  // below its matrix time, not charged.
  if (wgmma && tile.threads == plan::rules::kWsThreads) return 0;
  const std::uint32_t bytes = std::max(1u, dtype_bits(l.shape.dtype) / 8);
  const std::uint32_t steps = std::max(1u, tile.k * bytes / 32);  // 32-byte K steps
  const std::uint64_t tile_bytes = bytes_of(std::uint64_t{tile.m} * tile.k, l.shape.dtype) +
                                   bytes_of(std::uint64_t{tile.n} * tile.k, l.shape.weight_dtype);
  const std::uint32_t copies = ceil_div(tile_bytes / 16, tile.threads);
  const std::uint32_t fixed = kTileLoopOps + 2 * kStageDivisionOps + kCopyIssueOps + copies * kCopyOps;
  // Hopper has no block-scaled MMA: K-group scales (1x128, MX 1x32) are
  // applied to the fp32 partial sums.
  const bool block = l.shape.quant == Quant::block_128 || l.shape.quant == Quant::per_1x32;
  if (wgmma) {
    // Two warpgroups: 64-row halves of the tile, or N halves of a 64-row one.
    const std::uint32_t cols = tile.m >= 128 ? tile.n : tile.n / 2;
    const std::uint32_t acc = cols / 2;  // fp32 accumulators per thread
    std::uint32_t n = fixed + steps * kWgmmaStepOps + kWgmmaSyncOps;
    if (bytes == 1) n += block ? acc + acc / 4 + (2 + acc / 8) * kScaleLoadOps : acc;
    return n;
  }
  const Fragments f = fragments(tile.m, tile.n);
  const std::uint32_t tm = f.tm, tn = f.tn;  // fragments of one warp
  const bool via_f16 = bytes == 1 && l.lane_ops_per_conversion > 0;
  // m16n8k16 (k32 for e4m3 as it is): two per 16 x 16 fragment pair per step,
  // four when e4m3 goes through f16 (two K halves).
  const std::uint32_t mmas = tm * tn * (via_f16 ? 4 : 2);
  std::uint32_t n = fixed + kMmaStageOps + steps * ((tm + tn) * kFragmentLoadOps + mmas);
  if (via_f16) n += steps * (tm + tn) * kFragmentConvertOps;
  if (block) n += (2 * tm + tn) * kScaleLoadOps + 1 + tm * tn * kScaleApplyOps;
  return n;
}

// A main loop's matrix work: the machine's kernel instructions, wgmma (8-bit
// operands as they are; `ws`: the warp-specialized loop, at its own
// efficiency) or mma.sync / the ISA's (l.mma); with `tile`, an mma.sync loop
// converting 8-bit operands to f16 also gets that vector work.
void matrix_of(const Layer& l, bool wgmma, bool ws, const KernelTile* tile, isa::Loop& loop) {
  loop.moe_kernel = true;
  loop.wgmma = wgmma;
  loop.ws = wgmma && ws;
  loop.dtype = wgmma ? l.mma_wgmma : l.mma;
  // 8-bit wgmma: each K tile's products are waited for, then added up in fp32.
  if (wgmma && dtype_bits(l.shape.dtype) == 8) loop.wait_ps = l.fp8_tile_wait_ps;
  if (tile) loop.issue_instructions = tile_instructions(l, *tile, wgmma);
  if (tile && !wgmma && l.lane_ops_per_conversion > 0 && dtype_bits(l.shape.dtype) == 8) {
    loop.vector_ops = static_cast<std::uint64_t>(static_cast<double>(fp8_conversions(*tile)) * l.lane_ops_per_conversion);
  }
}

// A main loop's in-register dequantisation of an n x k weight tile per
// iteration (mixed pairs, Layer::dequant_ops), beside its matrix work.
void dequant_of(const Layer& l, std::uint32_t n, std::uint32_t k, isa::Loop& loop) {
  if (l.dequant_ops <= 0) return;
  loop.vector_ops += static_cast<std::uint64_t>(l.dequant_ops * n * k);
}

// Block metadata every MoE workgroup reads first: its sorted row ids, their
// routed weights and the block's expert id.
void block_prologue(const Layer& l, std::uint32_t block, isa::TileProgram& p) {
  const std::uint64_t first = std::uint64_t{block} * l.block_m * 4;
  p.prologue_loads.push_back(strided(l.buf.sorted_ids + first, l.block_m * 4, 1, 0));
  p.prologue_loads.push_back(strided(l.buf.sorted_weights + first, l.block_m * 4, 1, 0));
  p.prologue_loads.push_back(strided(l.buf.block_experts + std::uint64_t{block} * 4, 4, 1, 0));
}

// Scales a job reads: its rows' activation scales (per_token: one per row;
// block_128: one per row and 128 of K; per_1x32: one E8M0 byte per row and
// 32 of K; none for unscaled bf16 activations) and the weight scales of the
// rows it covers (per output channel; 128x128 blocks; E8M0 per 32 of K;
// fp32 per 32 / 128 of K for int4 groups). Small next to the tiles, so they
// are loaded once, up front.
void scale_prologue(const Layer& l, const TileJob& j, std::uint32_t n_rows, std::uint32_t k_len,
                    isa::TileProgram& p) {
  const Quant q = l.shape.quant;
  if (q == Quant::none || q == Quant::per_tensor) return;
  const std::uint32_t rows = scaled_dtype(l.shape.dtype) ? j.valid_rows : 0;
  std::uint32_t a_scales = 0, b_scales = 0;
  switch (q) {
    case Quant::per_token: a_scales = rows * 4; b_scales = n_rows * 4; break;
    case Quant::block_128:
      a_scales = rows * ceil_div(k_len, 128) * 4;
      b_scales = ceil_div(n_rows, 128) * ceil_div(k_len, 128) * 4;
      break;
    case Quant::per_1x32:
      a_scales = rows * ceil_div(k_len, 32);
      b_scales = n_rows * ceil_div(k_len, 32);
      break;
    case Quant::group_32: b_scales = n_rows * ceil_div(k_len, 32) * 4; break;
    case Quant::group_128: b_scales = n_rows * ceil_div(k_len, 128) * 4; break;
    case Quant::none:
    case Quant::per_tensor: break;
  }
  p.prologue_loads.push_back(strided(l.buf.scales, std::max(4u, a_scales + b_scales), 1, 0));
}

std::uint64_t w13_of(const Layer& l, std::uint32_t expert) {
  return l.buf.w13 + std::uint64_t{expert} * 2 * l.shape.inter * bytes_of(l.shape.hidden, l.shape.weight_dtype);
}
std::uint64_t w2_of(const Layer& l, std::uint32_t expert) {
  return l.buf.w2 + std::uint64_t{expert} * l.shape.hidden * bytes_of(l.shape.inter, l.shape.weight_dtype);
}

isa::TileProgram gate_up_program(const Layer& l, const TileJob& j) {
  const KernelTile& tile = l.kernel.gate_up_tile;
  const DType dt = l.shape.dtype, wdt = l.shape.weight_dtype;
  const plan::Range n = plan::job_n_range(l.shape, l.kernel, j);
  const plan::Range k = plan::job_k_range(l.shape, l.kernel, j);
  const std::uint32_t cols = n.end - n.begin;  // of gate, and as many of up
  isa::TileProgram p = base_program(l, tile, 2 * cols, l.wgmma_gate_up);
  block_prologue(l, j.block, p);
  scale_prologue(l, j, 2 * cols, k.end - k.begin, p);
  // Activations and weights each in their own dtype (mixed pairs: 4-bit weights).
  const std::uint64_t h_row = bytes_of(l.shape.hidden, wdt);
  const std::uint32_t k_bytes = bytes_of(tile.k, dt), wk_bytes = bytes_of(tile.k, wdt);
  const std::uint64_t k0 = bytes_of(k.begin, dt), wk0 = bytes_of(k.begin, wdt);
  isa::Loop loop;
  loop.iterations = ceil_div(k.end - k.begin, tile.k);
  loop.loads.reserve(3);
  const std::uint64_t gate = w13_of(l, j.expert) + std::uint64_t{n.begin} * h_row + wk0;
  loop.loads.push_back(token_rows(l.tdm, l.buf.x + k0, k_bytes, j.valid_rows, l.x_rows[j.block], k_bytes));
  loop.loads.push_back(strided(gate, wk_bytes, cols, h_row, wk_bytes));
  loop.loads.push_back(strided(gate + std::uint64_t{l.shape.inter} * h_row, wk_bytes, cols, h_row, wk_bytes));
  matrix_of(l, l.wgmma_gate_up, l.ws_gate_up, &tile, loop);
  dequant_of(l, 2 * cols, tile.k, loop);
  loop.m = l.block_m;  // padding rows are computed too: that is the padding waste
  loop.n = 2 * cols;
  loop.k = tile.k;
  p.loops.push_back(std::move(loop));
  const std::uint64_t first_row = std::uint64_t{j.block} * l.block_m;
  const std::uint64_t skip = epilogue_skip_ops(l, j, cols);
  if (l.ws_gate_up) p.epilogue_threads = kWsConsumerThreads;
  if (l.kernel.split_k > 1) {
    // fp32 partial sums of gate and up; activation waits for the reduction.
    if (l.ws_gate_up) {
      p.epilogue_vector_ops = std::uint64_t{l.block_m} * cols * kWsGateUpPartialOps;
      p.epilogue_issue_bound = true;
    } else if (l.mma_sync) {
      p.epilogue_vector_ops = std::uint64_t{j.valid_rows} * cols * kGateUpPartialOps + skip;
      p.epilogue_issue_bound = true;
    } else {
      p.epilogue_vector_ops = std::uint64_t{l.block_m} * 2 * cols;
    }
    const std::uint64_t row = std::uint64_t{2} * l.shape.inter * 4;
    const std::uint64_t at = l.buf.partials + (std::uint64_t{j.k_split} * l.padded_rows + first_row) * row +
                             std::uint64_t{n.begin} * 2 * 4;
    p.stores.push_back(strided(at, 2 * cols * 4, j.valid_rows, row));
  } else {
    const DType it = l.inter_dtype;
    if (l.ws_gate_up) {
      p.epilogue_vector_ops = std::uint64_t{l.block_m} * cols * kWsGateUpEpilogueOps;
      p.epilogue_issue_bound = true;
    } else if (l.mma_sync) {
      p.epilogue_vector_ops = std::uint64_t{j.valid_rows} * cols * kGateUpEpilogueOps + skip;
      p.epilogue_issue_bound = true;
    } else {
      p.epilogue_vector_ops = std::uint64_t{l.block_m} * cols *
                              (kActivationOps + (dtype_bits(it) <= 8 ? kQuantOps : 0));
    }
    const std::uint64_t i_row = bytes_of(l.shape.inter, it);
    p.stores.push_back(strided(l.buf.inter + first_row * i_row + bytes_of(n.begin, it),
                               bytes_of(cols, it), j.valid_rows, i_row));
  }
  return p;
}

// Split-K reduction of the gate/up partials, then the activation: one
// workgroup per block.
isa::TileProgram reduce_program(const Layer& l, std::uint32_t block, std::uint32_t valid) {
  isa::TileProgram p;
  p.threads = 256;
  p.vgprs_per_thread = 64;
  const std::uint64_t row = std::uint64_t{2} * l.shape.inter * 4;
  const std::uint64_t first_row = std::uint64_t{block} * l.block_m;
  for (std::uint32_t s = 0; s < l.kernel.split_k; ++s) {
    p.prologue_loads.push_back(strided(
        l.buf.partials + (std::uint64_t{s} * l.padded_rows + first_row) * row,
        static_cast<std::uint32_t>(row), valid, row));
  }
  const std::uint64_t elems = std::uint64_t{valid} * l.shape.inter;
  p.epilogue_vector_ops = elems * (2 * l.kernel.split_k * kReduceOps + kActivationOps +
                                   (dtype_bits(l.inter_dtype) <= 8 ? kQuantOps : 0));
  const std::uint64_t i_row = bytes_of(l.shape.inter, l.inter_dtype);
  p.stores.push_back(strided(l.buf.inter + first_row * i_row, static_cast<std::uint32_t>(i_row),
                             valid, i_row));
  return p;
}

// The fp8 intermediate's quantisation as a kernel between the stages
// (kernels.fp8_intermediate: kernel): one workgroup per padded row, as our
// kernels launch it; a padding row only reads its id. A real row is quantised
// scale group by scale group (block_128: 128 columns; else the whole row),
// each in two passes separated by barriers: the amax of its bf16 values, a
// reduction across the workgroup, then the same values again, divided by the
// scale, converted and stored. Each pass's loads wait for the one before
// (a chain of 2 x groups round trips, each carrying half a group's bytes: the
// second pass reads what the first brought on chip), and the vector work is
// the kernel's own instruction count (kQuant*Ops).
isa::TileProgram quant_program(const Layer& l, std::uint32_t row, bool real) {
  isa::TileProgram p;
  p.threads = 256;
  p.vgprs_per_thread = 32;
  p.pipeline_depth = 1;
  p.prologue_loads.push_back(strided(l.buf.sorted_ids + std::uint64_t{row} * 4, 4, 1, 0));
  if (!real) return p;
  const std::uint32_t inter = l.shape.inter;
  const std::uint64_t in_row = bytes_of(inter, DType::bf16);
  const std::uint64_t q_row = bytes_of(inter, l.shape.dtype);
  const std::uint32_t scales = l.shape.quant == Quant::block_128 ? ceil_div(inter, 128) : 1;
  const std::uint32_t group = ceil_div(inter, scales);
  const std::uint32_t half = std::max(1u, bytes_of(group, DType::bf16) / 2);
  isa::Loop passes;
  passes.iterations = 2 * scales;
  passes.loads.push_back(strided(l.buf.inter + row * in_row, half, 1, 0, half));
  passes.vector_ops = (std::uint64_t{group} * (kQuantAmaxOps + kQuantRoundOps) +
                       std::uint64_t{p.threads} * kQuantGroupOpsPerThread) / 2;
  passes.vector_issue_bound = true;  // its own instructions, a row per workgroup
  p.loops.push_back(std::move(passes));
  p.stores.push_back(strided(l.buf.inter_q + row * q_row, static_cast<std::uint32_t>(q_row), 1, 0));
  p.stores.push_back(strided(l.buf.scales + std::uint64_t{row} * scales * 4, scales * 4, 1, 0));
  return p;
}

// Clearing the output before the combine adds into it (kernels.combine:
// fp32; a memset's grid of 64 KiB per workgroup).
isa::TileProgram zero_program(const Layer& l, std::uint32_t wg, std::uint32_t wgs) {
  const std::uint64_t total = std::uint64_t{l.shape.tokens} * l.out_row;
  const std::uint64_t first = total * wg / wgs, last = total * (wg + 1) / wgs;
  isa::TileProgram p;
  p.threads = 256;
  p.vgprs_per_thread = 16;
  p.stores.push_back(strided(l.buf.out + first, static_cast<std::uint32_t>(std::max<std::uint64_t>(4, last - first)), 1, 0));
  if (wg == 0) p.extra_time_ps = l.clear_overhead_ps;  // once per clearing (kernels.clear_overhead)
  return p;
}

isa::TileProgram down_program(const Layer& l, const TileJob& j) {
  const KernelTile& tile = l.kernel.down_tile;
  const DType dt = l.shape.dtype, wdt = l.shape.weight_dtype;
  const plan::Range n = plan::job_n_range(l.shape, l.kernel, j);
  const plan::Range k = plan::job_k_range(l.shape, l.kernel, j);
  const std::uint32_t cols = n.end - n.begin;
  isa::TileProgram p = base_program(l, tile, cols, l.wgmma_down);
  block_prologue(l, j.block, p);
  scale_prologue(l, j, cols, k.end - k.begin, p);
  const std::uint64_t i_row = bytes_of(l.shape.inter, dt), wi_row = bytes_of(l.shape.inter, wdt);
  const std::uint32_t k_bytes = bytes_of(tile.k, dt), wk_bytes = bytes_of(tile.k, wdt);
  const std::uint64_t k0 = bytes_of(k.begin, dt), wk0 = bytes_of(k.begin, wdt);
  const std::uint64_t first_row = std::uint64_t{j.block} * l.block_m;
  isa::Loop loop;
  loop.iterations = ceil_div(k.end - k.begin, tile.k);
  loop.loads.reserve(2);
  // The block's intermediate rows are contiguous (sorted order).
  const std::uint64_t a_base = l.buf.inter_q != 0 ? l.buf.inter_q : l.buf.inter;
  loop.loads.push_back(strided(a_base + first_row * i_row + k0, k_bytes, j.valid_rows, i_row, k_bytes));
  loop.loads.push_back(strided(w2_of(l, j.expert) + std::uint64_t{n.begin} * wi_row + wk0, wk_bytes,
                               cols, wi_row, wk_bytes));
  matrix_of(l, l.wgmma_down, l.ws_down, &tile, loop);
  dequant_of(l, cols, tile.k, loop);
  loop.m = l.block_m;
  loop.n = cols;
  loop.k = tile.k;
  p.loops.push_back(std::move(loop));
  if (l.mma_sync) {
    p.epilogue_vector_ops = std::uint64_t{j.valid_rows} * cols * kDownEpilogueOps + epilogue_skip_ops(l, j, cols);
    p.epilogue_issue_bound = true;
  } else {
    p.epilogue_vector_ops = std::uint64_t{l.block_m} * cols * kCombineOps;
  }
  // Combine: atomic adds into the tokens' output rows (each split adds its
  // part); the L2's atomic units do the read-modify-write.
  p.stores.push_back(gathered(l.buf.out + std::uint64_t{n.begin} * l.out_elem, cols * l.out_elem,
                              j.valid_rows, l.out_rows[j.block]));
  p.stores.back().atomic = true;
  return p;
}

// LDS of a 1-stage workgroup (fused_moe.hip fused_kernel): the larger of
// phase 1's GEMM buffers (`gemm_lds`, with the wgmma alignment slack) and
// phase 2's (3 buffers of N down-row slices, their bf16 conversion for 8-bit
// layers, the fp32 product tile), plus the static arrays: the tile's row
// sources and scales (TileInfo), tokens and weights, the bf16 slice.
std::uint32_t fused_lds(const Layer& l, const KernelTile& tile, std::uint32_t gemm_lds) {
  const std::uint64_t bm = l.block_m, bn = tile.n, ks = tile.n / 2;
  const std::uint64_t eb = bytes_of(1, l.shape.weight_dtype);  // phase 2 buffers down-weight rows
  const std::uint64_t c_tile = bm * (bn + plan::rules::kCTilePad) * 4;
  const std::uint64_t phase1 =
      std::max<std::uint64_t>(gemm_lds + (l.wgmma_gate_up ? 1024 : 0), c_tile);
  const std::uint64_t phase2 = 3 * bn * (ks * eb + 16) + (eb == 1 ? bn * (ks + 8) * 2 : 0) + c_tile;
  const std::uint64_t info = bm * 16 + bn * 16 + bn / 16 * 8 + bm * 4 + bn * 4;
  const std::uint64_t statics = info + bm * 8 + bm * (ks + 8) * 2;
  return static_cast<std::uint32_t>(std::max(phase1, phase2) + statics);
}

// Instructions per thread of one chunk of the 1-stage kernel's down phase
// besides its conversion and scan (fused_moe.hip fused_kernel; kFused* above):
// the copies of the next chunk's N down-row slices of N/2 columns, the loop's
// wait and barriers, and a multiplying warp's wmma work over K = N/2.
std::uint64_t fused_chunk_ops(const Layer& l, const KernelTile& tile) {
  const std::uint64_t ks = tile.n / 2;
  const std::uint64_t copies = ceil_div(tile.n * ceil_div(bytes_of(ks, l.shape.weight_dtype), 16), tile.threads);
  const Fragments f = fragments(l.block_m, tile.n);
  const std::uint64_t tm = f.tm, tn = f.tn;
  return copies * kFusedCopyOps + kFusedChunkLoopOps +
         ks / 16 * ((tm + tn) * kFusedFragmentLoadOps + tm * tn * 2) + tm * tn * kFusedFragmentOps;
}

// The 1-stage kernel: gate and up for the job's N/2 intermediate columns
// over all of H, activation, then those columns of I through down into every
// H column; the partial sums are scatter-added into the tokens' output rows.
isa::TileProgram fused_program(const Layer& l, const TileJob& j) {
  const KernelTile& tile = l.kernel.gate_up_tile;
  const DType dt = l.shape.dtype, wdt = l.shape.weight_dtype;
  const plan::Range n = plan::job_n_range(l.shape, l.kernel, j);
  const std::uint32_t cols = n.end - n.begin;  // of I
  const std::uint32_t h = l.shape.hidden;
  isa::TileProgram p = base_program(l, tile, 2 * cols, l.wgmma_gate_up);
  // Our kernel (fused_moe.hip fused_kernel): both phases' LDS. Its registers
  // stay as gemm_vgprs says (ptxas -v, sm_90a: 48 for bf16 32x64x128, 94 for
  // e4m3 64x128x128; docs/moe-timing.md).
  if (l.mma_sync) p.lds_bytes = fused_lds(l, tile, p.lds_bytes);
  // Its phase 2 keeps 2 down slices in flight (issue(h0 + 2 BN), then
  // async_wait<2>), phase 1 copies_ahead; one depth per program: `stages`,
  // as before (not revisited: the 1-stage kernel's error is its instructions,
  // docs/moe-timing.md).
  p.pipeline_depth = std::max(1u, l.kernel.pipeline_stages);
  block_prologue(l, j.block, p);
  scale_prologue(l, j, 2 * cols + h, h + cols, p);
  const std::uint64_t h_row = bytes_of(h, wdt);
  const std::uint64_t i_row = bytes_of(l.shape.inter, wdt);
  const std::uint32_t k_bytes = bytes_of(tile.k, dt), wk_bytes = bytes_of(tile.k, wdt);
  isa::Loop up;
  up.iterations = ceil_div(h, tile.k);
  up.loads.reserve(3);
  const std::uint64_t gate = w13_of(l, j.expert) + std::uint64_t{n.begin} * h_row;
  up.loads.push_back(token_rows(l.tdm, l.buf.x, k_bytes, j.valid_rows, l.x_rows[j.block], k_bytes));
  up.loads.push_back(strided(gate, wk_bytes, cols, h_row, wk_bytes));
  up.loads.push_back(strided(gate + std::uint64_t{l.shape.inter} * h_row, wk_bytes, cols, h_row, wk_bytes));
  matrix_of(l, l.wgmma_gate_up, false, &tile, up);
  dequant_of(l, 2 * cols, tile.k, up);
  up.m = l.block_m;
  up.n = 2 * cols;
  up.k = tile.k;
  // Down: the intermediate slice stays on chip (K = cols); the loop walks H
  // in N-wide column groups of w_down, each a cols-long row slice.
  isa::Loop down;
  down.iterations = ceil_div(h, tile.n);
  down.loads.push_back(strided(w2_of(l, j.expert) + bytes_of(n.begin, wdt), bytes_of(cols, wdt),
                               tile.n, i_row, static_cast<std::int64_t>(std::uint64_t{tile.n} * i_row)));
  matrix_of(l, false, false, nullptr, down);  // phase 2's own loop (fused_moe.hip fused_kernel), converting in LDS
  dequant_of(l, tile.n, cols, down);
  down.m = l.block_m;
  down.n = tile.n;
  down.k = cols;
  // Per chunk, between barriers: (8-bit) the chunk's down rows converted in
  // LDS before the product; after it, every element of the BM x N product
  // scanned (padding rows too) and the real rows' ones added into y.
  // (Our kernel, fused_moe.hip fused_kernel; other kernels: the combine in
  // the epilogue.)
  std::uint64_t combine_ops = std::uint64_t{h} * kCombineOps;
  if (l.mma_sync) {
    down.vector_after_matrix = true;
    down.vector_issue_bound = true;
    down.vector_ops = std::uint64_t{tile.n} * (std::uint64_t{l.block_m} * (kFusedScanOps + kFusedProductOps) +
                                               std::uint64_t{j.valid_rows} * kFusedAddOps +
                                               (dtype_bits(dt) == 8 ? std::uint64_t{cols} * kFusedConvertOps : 0)) +
                      std::uint64_t{p.threads} * fused_chunk_ops(l, tile);
    combine_ops = 0;
  }
  p.loops.push_back(std::move(up));
  p.loops.push_back(std::move(down));
  p.epilogue_vector_ops = std::uint64_t{l.block_m} * (cols * kActivationOps + combine_ops);
  if (l.mma_sync) {  // our kernel's phase-1 epilogue, counted (its combine is in the down phase)
    p.epilogue_vector_ops = std::uint64_t{cols} * (std::uint64_t{j.valid_rows} * kFusedActivationOps +
                                                   std::uint64_t{l.block_m - j.valid_rows} * kFusedActivationSkipOps);
  }
  p.epilogue_issue_bound = l.mma_sync;
  p.stores.push_back(gathered(l.buf.out, static_cast<std::uint32_t>(l.out_row), j.valid_rows,
                              l.out_rows[j.block]));
  p.stores.back().atomic = true;
  return p;
}

isa::TileProgram sort_program(const Layer& l, std::uint32_t wg, std::uint32_t wgs) {
  const std::uint64_t rows = std::uint64_t{l.shape.tokens} * l.shape.slots();
  const std::uint64_t first = rows * wg / wgs, last = rows * (wg + 1) / wgs;
  const std::uint64_t out_first = std::uint64_t{l.padded_rows} * wg / wgs;
  const std::uint64_t out_last = std::uint64_t{l.padded_rows} * (wg + 1) / wgs;
  isa::TileProgram p;
  p.threads = 256;
  p.vgprs_per_thread = 32;
  p.lds_bytes = std::max(1u, l.shape.experts_fused()) * 4;  // the expert histogram
  p.prologue_loads.push_back(strided(l.buf.topk_ids + first * 4,
                                     static_cast<std::uint32_t>(std::max<std::uint64_t>(4, (last - first) * 4)), 1, 0));
  p.epilogue_vector_ops = (last - first) * kSortOpsPerRow + l.shape.experts_fused();
  p.extra_time_ps = l.sort_overhead_ps;
  const auto out_bytes = static_cast<std::uint32_t>(std::max<std::uint64_t>(4, (out_last - out_first) * 4));
  p.stores.push_back(strided(l.buf.sorted_ids + out_first * 4, out_bytes, 1, 0));
  p.stores.push_back(strided(l.buf.sorted_weights + out_first * 4, out_bytes, 1, 0));
  if (wg == 0) p.stores.push_back(strided(l.buf.block_experts, std::max(4u, l.blocks * 4), 1, 0));
  return p;
}

// Our sort's four kernels (kernels/moe/sort.hip; counts at kSortChunk).
std::uint64_t sort_rows(const Layer& l) { return std::uint64_t{l.shape.tokens} * l.shape.slots(); }

isa::TileProgram sort_fuse_program(const Layer& l, std::uint32_t wg, std::uint32_t capacity) {
  const std::uint64_t rows = sort_rows(l);
  const std::uint64_t first = std::uint64_t{wg} * kSortThreads, last = first + kSortThreads;
  isa::TileProgram p;
  p.threads = kSortThreads;
  p.vgprs_per_thread = 32;
  p.epilogue_vector_ops = std::uint64_t{kSortThreads} * kSortFuseOps;
  p.epilogue_issue_bound = true;
  const std::uint64_t r0 = std::min(rows, first), r1 = std::min(rows, last);
  if (r1 > r0) {
    const auto bytes = static_cast<std::uint32_t>((r1 - r0) * 4);
    p.prologue_loads.push_back(strided(l.buf.topk_ids + r0 * 4, bytes, 1, 0));
    p.prologue_loads.push_back(strided(l.topk_weights + r0 * 4, bytes, 1, 0));
    p.stores.push_back(strided(l.fused_rows + r0 * 4, bytes, 1, 0));         // fused expert
    p.stores.push_back(strided(l.fused_rows + (rows + r0) * 4, bytes, 1, 0));  // and weight
  }
  const std::uint64_t c0 = std::min<std::uint64_t>(capacity, first), c1 = std::min<std::uint64_t>(capacity, last);
  if (c1 > c0) {
    const auto bytes = static_cast<std::uint32_t>((c1 - c0) * 4);
    p.stores.push_back(strided(l.buf.sorted_ids + c0 * 4, bytes, 1, 0));
    p.stores.push_back(strided(l.buf.sorted_weights + c0 * 4, bytes, 1, 0));
  }
  return p;
}

// What the count and place kernels share: a workgroup per chunk of kSortChunk
// rows (rows [first, first + n)), a thread a row, a counter per expert in LDS.
struct SortChunk {
  std::uint64_t e, first, n;
  isa::TileProgram p;
};
SortChunk sort_chunk(const Layer& l, std::uint32_t chunk) {
  const std::uint64_t rows = sort_rows(l), e = std::max(1u, l.shape.experts_fused());
  const std::uint64_t first = std::uint64_t{chunk} * kSortChunk;
  SortChunk c{e, first, std::min<std::uint64_t>(kSortChunk, rows - first), {}};
  c.p.threads = kSortChunk;
  c.p.vgprs_per_thread = 32;
  c.p.lds_bytes = static_cast<std::uint32_t>(e * 4);
  return c;
}

isa::TileProgram sort_count_program(const Layer& l, std::uint32_t chunk) {
  auto [e, first, n, p] = sort_chunk(l, chunk);
  p.prologue_loads.push_back(strided(l.fused_rows + first * 4, static_cast<std::uint32_t>(n * 4), 1, 0));
  p.epilogue_vector_ops = n * kSortCountOps + e * 2;
  p.epilogue_issue_bound = true;
  p.stores.push_back(strided(l.chunk_counts + chunk * e * 4, static_cast<std::uint32_t>(e * 4), 1, 0));
  return p;
}

isa::TileProgram sort_scan_program(const Layer& l, std::uint32_t chunks) {
  const std::uint32_t e = std::max(1u, l.shape.experts_fused());
  isa::TileProgram p;
  p.threads = kSortThreads;
  p.vgprs_per_thread = 32;
  p.lds_bytes = 33 * 4;
  // The walk over the chunks, pass by pass (a thread per expert): a chain of
  // dependent round trips (one iteration each, pipeline depth 1), each a
  // load of the pass's counts in the next chunk.
  const std::uint32_t passes = ceil_div(e, kSortThreads);
  p.pipeline_depth = 1;
  for (std::uint32_t pass = 0; pass < passes; ++pass) {
    isa::Loop walk;
    walk.iterations = chunks;
    const std::uint32_t experts = std::min(kSortThreads, e - pass * kSortThreads);
    walk.loads.push_back(strided(l.chunk_counts + std::uint64_t{pass} * kSortThreads * 4, experts * 4, 1, 0,
                                 static_cast<std::int64_t>(std::uint64_t{e} * 4)));
    p.loops.push_back(std::move(walk));
  }
  p.epilogue_vector_ops = std::uint64_t{e} * kSortScanOpsPerExpert;
  p.epilogue_issue_bound = true;
  p.extra_time_ps = l.sort_overhead_ps;
  p.stores.push_back(strided(l.first_block, (e + 1) * 4, 1, 0));
  p.stores.push_back(strided(l.buf.block_experts, std::max(4u, l.blocks * 4), 1, 0));
  return p;
}

isa::TileProgram sort_place_program(const Layer& l, std::uint32_t chunk) {
  auto [e, first, n, p] = sort_chunk(l, chunk);
  const std::uint64_t rows = sort_rows(l);
  p.prologue_loads.push_back(strided(l.chunk_counts + chunk * e * 4, static_cast<std::uint32_t>(e * 4), 1, 0));
  p.prologue_loads.push_back(strided(l.fused_rows + first * 4, static_cast<std::uint32_t>(n * 4), 1, 0));
  // The warps with a row, in turn: each loads its rows' weights, which
  // fuse_kernel has just written (L2 hits), and its stores wait for them
  // before the barrier lets the next warp go: one L2 round trip per warp, as
  // a wait per iteration. (Not as loads: concurrent chains of single-line
  // loads queue behind each other's L2 channel reservations in the model,
  // which the chunks' workgroups on separate SMs do not.)
  const auto& warps = l.chunk_warp_rows[chunk];
  if (!warps.empty()) {
    p.prologue_loads.push_back(strided(l.fused_rows + (rows + warps.front()) * 4,
                                       static_cast<std::uint32_t>(warps.size() * 128), 1, 0));
    isa::Loop turns;
    turns.iterations = static_cast<std::uint32_t>(warps.size());
    turns.wait_ps = l.l2_hit_ps;
    p.loops.push_back(std::move(turns));
  }
  p.epilogue_vector_ops = std::uint64_t{kSortChunk} * kSortPlaceOps;
  p.epilogue_issue_bound = true;
  // The chunk's rows land in their experts' runs of the sorted arrays
  // (approximated as one run of as many entries).
  const auto bytes = static_cast<std::uint32_t>(std::max<std::uint64_t>(4, n * 4));
  const std::uint64_t at = std::min<std::uint64_t>(first, l.padded_rows) * 4;
  p.stores.push_back(strided(l.buf.sorted_ids + at, bytes, 1, 0));
  p.stores.push_back(strided(l.buf.sorted_weights + at, bytes, 1, 0));
  return p;
}

isa::TileProgram sort_one_program(const Layer& l, std::uint32_t capacity) {
  const std::uint64_t rows = sort_rows(l);
  const std::uint32_t e = std::max(1u, l.shape.experts_fused());
  isa::TileProgram p;
  p.threads = plan::rules::sort_one_threads(rows, e, capacity);  // launch_sort's block size
  p.vgprs_per_thread = 32;
  p.lds_bytes = (1024 + 32) * 4;  // the counters / cursors (kMaxFused) and the warp totals
  const auto row_bytes = static_cast<std::uint32_t>(std::max<std::uint64_t>(4, rows * 4));
  p.prologue_loads.push_back(strided(l.buf.topk_ids, row_bytes, 1, 0));
  p.prologue_loads.push_back(strided(l.topk_weights, row_bytes, 1, 0));
  // The busiest expert's blocks: its thread writes them into the map alone.
  std::uint64_t most = 0, run = 0;
  for (std::size_t b = 0; b < l.block_expert.size(); ++b) {
    run = b > 0 && l.block_expert[b] == l.block_expert[b - 1] ? run + 1 : 1;
    most = std::max(most, run);
  }
  const std::uint64_t passes = ceil_div(capacity, p.threads);
  const std::uint64_t turns = ceil_div(rows, 32);
  const std::uint64_t per_thread = kSortOneFuseOps + passes * kSortOneFillOpsPerPass + kSortOneCountOps +
                                   kSortOneScanOps + most * kSortOneMapOpsPerBlock + kSortOneRankOps +
                                   turns * kSortOneTurnOps + (turns > 0 ? kSortOneOwnTurnOps : 0);
  p.epilogue_vector_ops = std::uint64_t{p.threads} * per_thread;
  p.epilogue_issue_bound = true;
  // What the counts leave out of this path (kernels.sort_one_overhead, fitted
  // on the one-kernel layers alone: the four kernels' sort_overhead also
  // covers their extra launches and scans, which this path does not have).
  p.extra_time_ps = l.sort_one_overhead_ps;
  const auto cap_bytes = std::max(4u, capacity * 4);
  p.stores.push_back(strided(l.buf.sorted_ids, cap_bytes, 1, 0));  // padding, then the rows
  p.stores.push_back(strided(l.buf.sorted_weights, cap_bytes, 1, 0));
  p.stores.push_back(strided(l.first_block, (e + 1) * 4, 1, 0));
  p.stores.push_back(strided(l.chunk_counts, e * 4, 1, 0));  // expert_rows
  p.stores.push_back(strided(l.buf.block_experts, std::max(4u, l.blocks * 4), 1, 0));
  return p;
}

std::shared_ptr<const std::vector<std::uint64_t>> row_offsets(const MoePlan& plan, std::uint32_t block,
                                                              std::uint64_t row_bytes) {
  auto v = std::make_shared<std::vector<std::uint64_t>>();
  const std::uint32_t bm = plan.layout.block_m;
  for (std::uint32_t r = block * bm; r < (block + 1) * bm && r < plan.layout.padded_rows; ++r) {
    const std::uint32_t row = plan.layout.sorted_rows[r];
    if (row == plan.layout.sentinel) continue;  // padding sits only at an expert's tail
    v->push_back(std::uint64_t{row / plan.shape.slots()} * row_bytes);
  }
  return v;
}

isa::KernelLaunch launch(std::string name, std::uint32_t workgroups,
                         std::function<isa::TileProgram(std::uint32_t)> program) {
  isa::KernelLaunch k;
  k.name = std::move(name);
  k.workgroups = workgroups;
  k.program = std::move(program);
  return k;
}

}  // namespace

double element_bytes(DType t) { return dtype_bits(t) / 8.0; }

namespace {
// `t` if `has(t)`, else the next wider dtype that has an instruction, as
// kernels widen operands in registers: fp4 -> fp8 -> bf16 (every e2m1 value
// is exact in e4m3); fp8 FNUZ -> OCP fp8 (the same bytes read as OCP e4m3
// are twice the FNUZ value, subnormals included, so a kernel folds the 2
// into its scale) -> bf16; integers -> bf16 (not fp8, which is not exact).
template <class Has>
DType widened(DType t, Has has) {
  const bool integer = t == DType::int8 || t == DType::int4;
  for (DType c : {t, DType::fp8_e4m3, DType::bf16}) {
    if (dtype_bits(c) < dtype_bits(t)) continue;  // never narrower than the operands
    if (integer && c == DType::fp8_e4m3) continue;
    if (has(c)) return c;
  }
  return DType::bf16;
}
}  // namespace

double dequant_ops_per_weight(const MachineSpec& m, DType activation, DType weight) {
  if (weight == activation) return 0.0;
  const bool scaled_mfma = m.isa == IsaFamily::cdna4 || m.isa == IsaFamily::gfx1250;
  if (weight == DType::mxfp4) {
    // CDNA4's f8f6f4 MFMA takes fp8 A and fp4 B as they are (a8w4: no
    // conversion; ROCm blog "Matrix Core Programming on CDNA3 and CDNA4").
    if (scaled_mfma && activation == DType::fp8_e4m3) return 0.0;
    return scaled_mfma ? kDequantOpsFp4Cvt : kDequantOpsFp4;
  }
  if (weight == DType::int4) return kDequantOpsInt4;
  return 0.0;
}

DType matrix_dtype(const MachineSpec& m, DType t) {
  return widened(t, [&](DType c) { return isa::matrix_flops_per_clock_per_cu(m.isa, c, 1) > 0; });
}

DType kernel_matrix_dtype(const MachineSpec& m, DType t) {
  if (dtype_bits(t) == 8 && m.kernels.fp8_operands == Fp8Operands::f16) t = DType::fp16;
  return widened(t, [&](DType c) { return isa::kernel_matrix_flops_per_clock_per_simd(m, c) > 0; });
}

MoeFloor moe_floor(const MoePlan& plan, const MachineSpec& machine) {
  const auto& s = plan.shape;
  const double eb = element_bytes(s.dtype);
  // Weights in their own dtype plus their scales (weight_scale_bits_per_1024).
  const double wb = element_bytes(s.weight_dtype) +
                    static_cast<double>(weight_scale_bits_per_1024({s.dtype, s.weight_dtype, s.quant})) / 8.0 / 1024.0;
  MoeFloor f;
  std::uint64_t rows = 0;
  for (std::uint32_t e = 0; e < s.experts_fused(); ++e) {
    const std::uint32_t r = plan.layout.expert_rows[e];
    rows += r;
    if (r > 0) f.weight_bytes += 3.0 * s.inter * s.hidden * wb;
  }
  f.activation_bytes = double(s.tokens) * s.hidden * (eb + 2.0);  // x read once, out written once
  f.flops = 6.0 * double(rows) * s.inter * s.hidden;
  f.memory_s = (f.weight_bytes + f.activation_bytes) /
               static_cast<double>(machine.memory.hbm.bandwidth.bytes_per_s);
  f.compute_s = f.flops / isa::peak_matrix_flops(machine, matrix_dtype(machine, s.dtype));
  return f;
}

namespace {

// Both paths: the same tile programs; the TDM path gathers token rows with
// the tensor data movers and hands its stages to the TDM MoE unit as
// descriptors (written to memory, fetched by the unit) instead of grids.
MoeKernels build(AddressSpace& as, const MoePlan& plan, const MachineSpec& machine, bool tdm) {
  auto l = std::make_shared<Layer>();
  l->tdm = tdm;
  const auto& s = plan.shape;
  l->shape = s;
  l->kernel = plan.kernel;
  l->mma = kernel_matrix_dtype(machine, s.dtype);
  l->mma_wgmma = matrix_dtype(machine, s.dtype);
  l->mma_sync = machine.kernels.matrix_instructions != MatrixInstructions::isa;
  l->wgmma_gate_up = plan::wgmma_tile(machine, plan.kernel.gate_up_tile, s.dtype);
  l->wgmma_down = plan.kernel.stages == 2 && plan::wgmma_tile(machine, plan.kernel.down_tile, s.dtype);
  l->ws_gate_up = plan.kernel.stages == 2 && plan::ws_tile(machine, plan.kernel.gate_up_tile, s.dtype);
  l->ws_down = plan.kernel.stages == 2 && plan::ws_tile(machine, plan.kernel.down_tile, s.dtype);
  if (machine.kernels.fp8_operands == Fp8Operands::f16 && machine.kernels.fp8_conversions_per_clock > 0) {
    l->lane_ops_per_conversion = machine.compute.vector_lanes() / machine.kernels.fp8_conversions_per_clock;
  }
  const bool quant_kernel = plan.kernel.stages == 2 && dtype_bits(s.dtype) <= 8 &&
                            machine.kernels.fp8_intermediate == Fp8Intermediate::kernel;
  l->inter_dtype = quant_kernel ? DType::bf16 : s.dtype;
  l->dequant_ops = dequant_ops_per_weight(machine, s.dtype, s.weight_dtype);
  l->out_elem = machine.kernels.combine == CombineType::fp32 ? 4 : 2;
  l->sort_overhead_ps = machine.kernels.sort_overhead.ps;
  l->sort_one_overhead_ps = machine.kernels.sort_one_overhead.ps;
  l->clear_overhead_ps = machine.kernels.clear_overhead.ps;
  l->iteration_overhead_ps = machine.kernels.iteration_overhead.ps;
  l->fp8_tile_wait_ps = machine.kernels.wgmma_fp8_tile_wait.ps;
  l->block_m = plan.layout.block_m;
  l->padded_rows = plan.layout.padded_rows;
  l->blocks = static_cast<std::uint32_t>(plan.layout.block_expert.size());
  l->x_row = bytes_of(s.hidden, s.dtype);
  l->out_row = std::uint64_t{s.hidden} * l->out_elem;
  l->stage1 = plan.stage1;
  l->stage2 = plan.stage2;
  l->block_expert = plan.layout.block_expert;
  for (std::uint32_t b = 0; b < l->blocks; ++b) {
    l->x_rows.push_back(row_offsets(plan, b, l->x_row));
    l->out_rows.push_back(row_offsets(plan, b, l->out_row));
  }
  const std::uint64_t rows = std::uint64_t{s.tokens} * s.slots();
  MoeBuffers& b = l->buf;
  b.x = as.allocate(std::uint64_t{s.tokens} * l->x_row);
  b.topk_ids = as.allocate(rows * 4);
  b.sorted_ids = as.allocate(std::uint64_t{plan.layout.capacity} * 4);
  b.sorted_weights = as.allocate(std::uint64_t{plan.layout.capacity} * 4);
  b.block_experts = as.allocate(std::uint64_t{l->blocks + 1} * 4);
  const std::uint64_t experts = s.experts_fused();
  b.w13 = as.allocate(experts * 2 * s.inter * bytes_of(s.hidden, s.weight_dtype));
  b.w2 = as.allocate(experts * s.hidden * bytes_of(s.inter, s.weight_dtype));
  b.scales = as.allocate(1 << 20);
  if (plan.kernel.stages == 2) {
    b.inter = as.allocate(std::uint64_t{l->padded_rows} * bytes_of(s.inter, l->inter_dtype));
    if (quant_kernel) b.inter_q = as.allocate(std::uint64_t{l->padded_rows} * bytes_of(s.inter, s.dtype));
    if (plan.kernel.split_k > 1) {
      b.partials = as.allocate(std::uint64_t{plan.kernel.split_k} * l->padded_rows * 2 * s.inter * 4);
    }
  }
  b.out = as.allocate(std::uint64_t{s.tokens} * l->out_row);

  MoeKernels k;
  k.buffers = b;
  if (machine.kernels.combine == CombineType::fp32) {
    const std::uint32_t zero_wgs =
        std::max(1u, ceil_div(std::uint64_t{s.tokens} * l->out_row, kZeroBytesPerWorkgroup));
    k.kernels.push_back(launch("moe_zero_out", zero_wgs, [l, zero_wgs](std::uint32_t wg) {
      return zero_program(*l, wg, zero_wgs);
    }));
    k.stage.push_back("zero_out");
  }
  if (l->mma_sync) {
    // Our sort (kernels/moe/sort.hip launch_sort): one kernel when the rows
    // fit one chunk, else fuse, count, scan, place.
    const std::uint32_t capacity = plan.layout.capacity;
    const std::uint32_t chunks = std::max(1u, ceil_div(rows, kSortChunk));
    l->l2_hit_ps = machine.memory.l2.hit_latency.ps;
    l->topk_weights = as.allocate(std::max<std::uint64_t>(1, rows) * 4);
    if (sort_one_kernel(rows, s.experts_fused())) {
      l->chunk_counts = as.allocate(std::max<std::uint64_t>(1, s.experts_fused()) * 4);  // expert_rows
      l->first_block = as.allocate((std::uint64_t{s.experts_fused()} + 1) * 4);
      k.kernels.push_back(launch("moe_sort_one", 1, [l, capacity](std::uint32_t) {
        return sort_one_program(*l, capacity);
      }));
      k.stage.push_back("sort");
    } else {
      l->fused_rows = as.allocate(std::max<std::uint64_t>(1, rows) * 8);
      l->chunk_counts = as.allocate(std::uint64_t{chunks} * std::max(1u, s.experts_fused()) * 4);
      l->first_block = as.allocate((std::uint64_t{s.experts_fused()} + 1) * 4);
      // Per chunk, the first local row of each warp that has one (a remote
      // pick, under expert parallelism, skips the load).
      l->chunk_warp_rows.assign(chunks, {});
      std::vector<bool> local(rows, false);
      for (std::uint32_t r = 0; r < plan.layout.padded_rows; ++r) {
        if (plan.layout.sorted_rows[r] != plan.layout.sentinel) local[plan.layout.sorted_rows[r]] = true;
      }
      for (std::uint64_t r = 0; r < rows; ++r) {
        auto& warps = l->chunk_warp_rows[r / kSortChunk];
        if (local[r] && (warps.empty() || warps.back() / 32 != r / 32)) warps.push_back(static_cast<std::uint32_t>(r));
      }
      const std::uint32_t fuse_wgs = std::max(1u, ceil_div(std::max<std::uint64_t>(rows, capacity), kSortThreads));
      k.kernels.push_back(launch("moe_sort_fuse", fuse_wgs, [l, capacity](std::uint32_t wg) {
        return sort_fuse_program(*l, wg, capacity);
      }));
      k.kernels.push_back(launch("moe_sort_count", chunks, [l](std::uint32_t c) { return sort_count_program(*l, c); }));
      k.kernels.push_back(launch("moe_sort_scan", 1, [l, chunks](std::uint32_t) { return sort_scan_program(*l, chunks); }));
      k.kernels.push_back(launch("moe_sort_place", chunks, [l](std::uint32_t c) { return sort_place_program(*l, c); }));
      for (int i = 0; i < 4; ++i) k.stage.push_back("sort");
    }
  } else {
    const std::uint32_t sort_wgs = std::max(1u, ceil_div(rows, kSortRowsPerWorkgroup));
    k.kernels.push_back(launch("moe_sort", sort_wgs, [l, sort_wgs](std::uint32_t wg) {
      return sort_program(*l, wg, sort_wgs);
    }));
    k.stage.push_back("sort");
  }
  if (plan.kernel.stages == 1) {
    k.kernels.push_back(launch("moe_fused", static_cast<std::uint32_t>(l->stage1.size()),
                               [l](std::uint32_t wg) { return fused_program(*l, l->stage1[wg]); }));
    k.stage.push_back("fused");
    return k;
  }
  k.kernels.push_back(launch("moe_gate_up", static_cast<std::uint32_t>(l->stage1.size()),
                             [l](std::uint32_t wg) { return gate_up_program(*l, l->stage1[wg]); }));
  k.stage.push_back("gate_up");
  if (plan.kernel.split_k > 1) {
    std::vector<std::uint32_t> valid(l->blocks);
    for (std::uint32_t blk = 0; blk < l->blocks; ++blk) {
      valid[blk] = static_cast<std::uint32_t>(l->x_rows[blk]->size());
    }
    k.kernels.push_back(launch("moe_splitk_reduce", l->blocks, [l, valid](std::uint32_t wg) {
      return reduce_program(*l, wg, valid[wg]);
    }));
    k.stage.push_back("reduce");
  }
  if (quant_kernel) {
    std::vector<bool> real(l->padded_rows);
    for (std::uint32_t r = 0; r < l->padded_rows; ++r) real[r] = plan.layout.sorted_rows[r] != plan.layout.sentinel;
    k.kernels.push_back(launch("moe_quant_inter", l->padded_rows, [l, real](std::uint32_t wg) {
      return quant_program(*l, wg, real[wg]);
    }));
    k.stage.push_back("quant_inter");
  }
  k.kernels.push_back(launch("moe_down", static_cast<std::uint32_t>(l->stage2.size()),
                             [l](std::uint32_t wg) { return down_program(*l, l->stage2[wg]); }));
  k.stage.push_back("down");
  return k;
}

std::shared_ptr<isa::HardwareDispatch> dispatch_of(const std::vector<TileJob>& jobs,
                                                   TdmPolicy policy) {
  auto hw = std::make_shared<isa::HardwareDispatch>();
  hw->policy = policy;
  for (const auto& j : jobs) {
    hw->expert.push_back(j.expert);
    hw->block.push_back(j.block);
    hw->n_tile.push_back(j.n_tile);
  }
  return hw;
}

}  // namespace

bool sort_one_kernel(std::uint64_t rows, std::uint32_t experts_fused) {
  return plan::rules::sort_one_kernel(rows, experts_fused);
}

MoeKernels software_moe(AddressSpace& as, const MoePlan& plan, const MachineSpec& machine) {
  return build(as, plan, machine, false);
}

MoeKernels tdm_moe(AddressSpace& as, const MoePlan& plan, const MachineSpec& machine) {
  if (!machine.tdm) throw std::invalid_argument("machine " + machine.name + " has no TDM MoE unit");
  const TdmPolicy policy = machine.tdm->default_policy;
  MoeKernels k = build(as, plan, machine, true);
  // The descriptors software writes for the layer (docs/descriptor-format.md):
  // their encoded size is what the unit fetches.
  const auto slot_ns = static_cast<std::uint32_t>(std::max<std::uint64_t>(1, machine.tdm->slot_length.ps / 1000));
  const auto descriptors = format::make_moe_descriptors(
      plan, policy, format::packed_address_map(plan, k.buffers.x), {slot_ns, format::SlotUnit::ns});
  std::size_t d = 0;
  for (std::size_t i = 0; i < k.kernels.size(); ++i) {
    // Software still sorts (it writes the task table), clears the output and
    // quantises between the stages.
    if (k.stage[i] == "sort" || k.stage[i] == "zero_out" || k.stage[i] == "quant_inter") continue;
    const auto& jobs = k.stage[i] == "down" ? plan.stage2 : plan.stage1;
    std::shared_ptr<isa::HardwareDispatch> hw;
    if (k.stage[i] == "reduce") {
      // The split-K reduction runs as part of the gate/up descriptor: no fetch.
      hw = std::make_shared<isa::HardwareDispatch>();
      hw->policy = TdmPolicy::custom;
      hw->expert.assign(k.kernels[i].workgroups, 0);
      hw->block.resize(k.kernels[i].workgroups);
      std::iota(hw->block.begin(), hw->block.end(), 0u);
      hw->n_tile.assign(k.kernels[i].workgroups, 0);
    } else {
      hw = dispatch_of(jobs, policy);
      const auto bytes = format::encode(descriptors.at(d++));
      hw->descriptor_bytes = static_cast<std::uint32_t>(bytes.size());
      hw->descriptor_addr = as.allocate(bytes.size());
    }
    k.kernels[i].hardware = hw;
    k.kernels[i].name = "tdm_" + k.kernels[i].name.substr(4);  // moe_gate_up -> tdm_gate_up
  }
  return k;
}

}  // namespace tdmsim::sim::programs
