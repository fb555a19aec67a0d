// Helpers the MoE kernel families share (moe_program_common.h).
#include "sim/programs/moe_program_common.h"

#include "descriptors/plan/aiter_kernels.h"

#include "workloads/specs/quant_formats.h"

#include <algorithm>
#include <utility>

namespace tdmsim::sim::programs::moe_detail {

isa::KernelLaunch launch(std::string name, std::uint32_t workgroups,
                         std::function<isa::TileProgram(std::uint32_t)> program) {
  isa::KernelLaunch k;
  k.name = std::move(name);
  k.workgroups = workgroups;
  k.program = std::move(program);
  return k;
}

isa::KernelLaunch launch_into(std::string name, std::uint32_t workgroups,
                              std::function<void(std::uint32_t, isa::TileProgram&)> into) {
  isa::KernelLaunch k;
  k.name = std::move(name);
  k.workgroups = workgroups;
  // The same builder both ways: program(wg) builds into a fresh program.
  k.program = [into](std::uint32_t wg) {
    isa::TileProgram p;
    into(wg, p);
    return p;
  };
  k.program_into = std::move(into);
  return k;
}

// A gather of token rows into LDS: by the waves (software), or by the CU's
// tensor data movers from a gather descriptor (TDM path).
isa::MemRange token_rows(bool tdm, std::uint64_t addr, std::uint32_t row_bytes, std::uint32_t rows,
                         const std::vector<std::uint64_t>& offsets, std::int64_t iter_stride) {
  isa::MemRange r = gathered(addr, row_bytes, rows, &offsets, iter_stride);
  r.tensor_mover = tdm;
  return r;
}

std::uint32_t lds_for(const Layer& l, std::uint32_t n_rows, std::uint32_t k) {
  // A rows in the activation dtype, B rows in the weight dtype.
  const std::uint64_t tile = std::uint64_t{l.block_m} * bytes_of(k, l.shape.dtype) +
                             std::uint64_t{n_rows} * bytes_of(k, l.shape.weight_dtype);
  return static_cast<std::uint32_t>(tile * std::max(1u, l.kernel.pipeline_stages));
}

// AITER's 2-stage GEMMs: LDS and registers as plan::aiter_gemm_resources
// reads them off CK's source (descriptors/plan/aiter_kernels.cpp), the same
// figures the plan checks a tile against.
void aiter_gemm_resources(const Layer& l, const KernelTile& tile, bool gate_up, isa::TileProgram& p) {
  const auto r = plan::aiter_gemm_resources(
      l.shape.dtype, l.shape.weight_dtype, l.block_m, tile, gate_up,
      plan::aiter_lds_buffers(l.kernel.aiter_traits, gate_up, l.kernel.pipeline_stages), l.lds_file_bytes);
  p.lds_bytes = r.lds_bytes;
  p.vgprs_per_thread = r.vgprs_per_thread;
  // AITER's assembly stage-1 kernels run under CK's nearest tile; their names
  // say how many share a CU, which CK's estimate need not match
  // (..._32x128_3tg_pf3: 3, where CK's registers for that tile allow 2): the
  // register file and the LDS are shared that many ways (the assembly
  // kernel's own LDS is not published; CK's figure for the tile is kept
  // where it is smaller).
  if (gate_up && l.kernel.aiter_traits.gate_up_workgroups_per_cu != 0) {
    const std::uint32_t n = l.kernel.aiter_traits.gate_up_workgroups_per_cu;
    registers_shared(l, n, p);
    p.lds_bytes = static_cast<std::uint32_t>(plan::aiter_gate_up_lds_share(p.lds_bytes, l.lds_file_bytes, n));
  }
}

void registers_shared(const Layer& l, std::uint32_t per_cu, isa::TileProgram& p) {
  const std::uint64_t n = std::max(1u, per_cu);
  p.vgprs_per_thread = static_cast<std::uint32_t>(l.vgpr_file_bytes / (n * std::max(1u, p.threads) * 4));
}

void weights_in_registers(isa::Loop& loop, std::size_t first_weight) {
  for (std::size_t i = first_weight; i < loop.loads.size(); ++i) loop.loads[i].to_registers = true;
  loop.b_in_registers = true;
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

void base_program(const Layer& l, const KernelTile& tile, std::uint32_t n_rows, bool wgmma, std::size_t loops,
                  isa::TileProgram& p) {
  // A GEMM workgroup's program: block and scale prologue, one or two loops,
  // its stores. (Built into the storage of the program p held before:
  // programs are built per workgroup.)
  p.reset(loops);
  p.prologue_loads.reserve(4);
  p.stores.reserve(1);
  p.threads = tile.threads;
  p.vgprs_per_thread = gemm_vgprs(l, tile, wgmma);
  p.lds_bytes = lds_for(l, n_rows, tile.k);
  p.pipeline_depth = copies_ahead(l, tile, wgmma);
  p.iteration_overhead_ps = l.iteration_overhead_ps;
}

// The fragments of an M x N tile (Fragments, moe_program_common.h).
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
  return std::uint64_t{l.block_m - j.valid_rows} * ceil_div(cols, 4) * l.nv.epilogue.skip_ops_per_4;
}

// Instructions one multiplying warp of gemm_core_mma (our NVIDIA mma.sync main
// loop, kernels/moe/fused_moe.hip) issues per K tile of `tile` (the profile's
// nvidia.main_loop counts), or one warp of gemm_core_wgmma (its wgmma_* counts
// besides the shared ones); 0 for the warp-specialized
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
  const std::uint32_t fixed = l.nv.main_loop.tile_loop_ops + 2 * l.nv.main_loop.stage_division_ops + l.nv.main_loop.copy_issue_ops + copies * l.nv.main_loop.copy_ops;
  // Hopper has no block-scaled MMA: K-group scales (1x128, MX 1x32) are
  // applied to the fp32 partial sums.
  const bool block = plan::block_scaled(l.shape.quant);
  if (wgmma) {
    // Two warpgroups: 64-row halves of the tile, or N halves of a 64-row one.
    const std::uint32_t cols = tile.m >= 128 ? tile.n : tile.n / 2;
    const std::uint32_t acc = cols / 2;  // fp32 accumulators per thread
    // 8-bit tiles promote each fp32 accumulator (an add; block_128 an FFMA).
    // block_128 also loads its scales: the thread's two rows' activation
    // scales and one weight scale per 16-column fragment (gemm_core_wgmma
    // loads b_scale per group of 8 columns, but a fragment's two groups read
    // one address, which the compiler loads once: accumulators / 8 loads),
    // and multiplies each distinct pair once (2 x accumulators / 8 FMUL).
    std::uint32_t n = fixed + steps * l.nv.main_loop.wgmma_step_ops + l.nv.main_loop.wgmma_sync_ops;
    if (bytes == 1) n += block ? acc + acc / 4 + (2 + acc / 8) * l.nv.main_loop.scale_load_ops : acc;
    return n;
  }
  const Fragments f = fragments(tile.m, tile.n);
  const std::uint32_t tm = f.tm, tn = f.tn;  // fragments of one warp
  const bool via_f16 = bytes == 1 && l.lane_ops_per_conversion > 0;
  // m16n8k16 (k32 for e4m3 as it is): two per 16 x 16 fragment pair per step,
  // four when e4m3 goes through f16 (two K halves).
  const std::uint32_t mmas = tm * tn * (via_f16 ? 4 : 2);
  std::uint32_t n = fixed + l.nv.main_loop.mma_stage_ops + steps * ((tm + tn) * l.nv.main_loop.fragment_load_ops + mmas);
  if (via_f16) n += steps * (tm + tn) * l.nv.main_loop.fragment_convert_ops;
  if (block) n += (2 * tm + tn) * l.nv.main_loop.scale_load_ops + 1 + tm * tn * l.nv.main_loop.scale_apply_ops;
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

// Our AMD kernels on CDNA (docs/moe-timing.md "CDNA main-loop issue"): each
// iteration's instructions per wavefront are the compiled instantiation's
// (plan::loop_mix: the tile's own, or the nearest compiled one scaled by
// MFMA count); 8-bit operands map onto the e4m3 kernels (4-bit and int8
// ones too: ours have nothing narrower), K-group scales (block_128, 1x32)
// onto the block-scaled ones. A loop whose kernel converts e4m3 to bf16
// multiplies bf16 (the code object's MFMA type). LDS: the kernel's static
// LDS plus what its host code asks for (plan::amd_kernel_lds_bytes).
Layer::AmdLoop amd_loop_lookup(const Layer& l, plan::LoopKernel kind, const KernelTile& tile) {
  Layer::AmdLoop a;
  a.looked_up = true;
  a.m = tile.m;
  a.n = tile.n;
  a.k = tile.k;
  if (!l.amd_target) return a;
  const plan::CdnaTarget t = *l.amd_target;
  const bool fp8 = dtype_bits(l.shape.dtype) <= 8;
  const bool bs = plan::block_scaled(l.shape.quant);
  a.mix = plan::loop_mix(t, kind, fp8, bs, tile.m, tile.n, tile.k);
  if (a.mix) a.lds_bytes = plan::amd_kernel_lds_bytes(t, kind, fp8, bs, tile.m, tile.n, tile.k, l.kernel.pipeline_stages);
  return a;
}

void amd_loop_of(const Layer& l, plan::LoopKernel kind, const KernelTile& tile, isa::TileProgram& p, isa::Loop& loop) {
  if (!l.amd_target) return;
  const Layer::AmdLoop& kept = l.amd_loops[static_cast<std::size_t>(kind)];
  const bool same = kept.looked_up && kept.m == tile.m && kept.n == tile.n && kept.k == tile.k;
  const Layer::AmdLoop a = same ? kept : amd_loop_lookup(l, kind, tile);
  if (!a.mix) return;
  const plan::CdnaTarget t = *l.amd_target;
  const bool fp8 = dtype_bits(l.shape.dtype) <= 8;
  loop.wave_issue.instructions = a.mix->mix.instructions;
  loop.wave_issue.valu = a.mix->mix.valu;
  if (fp8 && plan::rules::amd_converts_fp8(1, tile.k, t == plan::CdnaTarget::gfx940)) loop.dtype = DType::bf16;
  p.lds_bytes = a.lds_bytes;
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

namespace {
// Bytes of the scales of an n_rows x k_len block of weights (per output
// channel; 128x128 blocks; E8M0 per 32 of K; fp32 per 32 / 128 of K for int4
// groups).
std::uint32_t weight_scale_bytes(Quant q, std::uint32_t n_rows, std::uint32_t k_len) {
  switch (q) {
    case Quant::per_token: return n_rows * 4;
    case Quant::block_128: return ceil_div(n_rows, 128) * ceil_div(k_len, 128) * 4;
    case Quant::per_1x32: return n_rows * ceil_div(k_len, 32);
    case Quant::group_32: return n_rows * ceil_div(k_len, 32) * 4;
    case Quant::group_128: return n_rows * ceil_div(k_len, 128) * 4;
    case Quant::none:
    case Quant::per_tensor: break;
  }
  return 0;
}
}  // namespace

// Scales a job reads: its rows' activation scales (per_token: one per row;
// block_128: one per row and 128 of K; per_1x32: one E8M0 byte per row and
// 32 of K; none for unscaled bf16 activations or int4 groups, which scale
// weights only) and the weight scales of the rows it covers. Small next to
// the tiles, so they are loaded once, up front. The fused kernel's two
// weight blocks are counted apart: its gate/up rows along H and its w_down
// rows along its slice of I (counted as one block of (2 cols + H) rows along
// (H + cols), they had come to H^2 / 32 E8M0 bytes a job at 1x32).
void scale_prologue(const Layer& l, const TileJob& j, std::uint32_t n_rows, std::uint32_t k_len,
                    isa::TileProgram& p, std::uint32_t down_n, std::uint32_t down_k) {
  const Quant q = l.shape.quant;
  if (q == Quant::none || q == Quant::per_tensor) return;
  const std::uint32_t rows = scaled_dtype(l.shape.dtype) ? j.valid_rows : 0;
  std::uint32_t a_scales = 0;
  switch (q) {
    case Quant::per_token: a_scales = rows * 4; break;
    case Quant::block_128: a_scales = rows * ceil_div(k_len, 128) * 4; break;
    case Quant::per_1x32: a_scales = rows * ceil_div(k_len, 32); break;
    case Quant::group_32:
    case Quant::group_128:
    case Quant::none:
    case Quant::per_tensor: break;
  }
  const std::uint32_t b_scales = weight_scale_bytes(q, n_rows, k_len) + weight_scale_bytes(q, down_n, down_k);
  p.prologue_loads.push_back(strided(l.buf.scales, std::max(4u, a_scales + b_scales), 1, 0));
}

std::uint64_t w13_of(const Layer& l, std::uint32_t expert) {
  return l.buf.w13 + std::uint64_t{expert} * 2 * l.shape.inter * bytes_of(l.shape.hidden, l.shape.weight_dtype);
}
std::uint64_t w2_of(const Layer& l, std::uint32_t expert) {
  return l.buf.w2 + std::uint64_t{expert} * l.shape.hidden * bytes_of(l.shape.inter, l.shape.weight_dtype);
}

}  // namespace tdmsim::sim::programs::moe_detail
