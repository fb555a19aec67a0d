// The 1-stage fused-MoE kernel as a tile program; docs/moe-timing.md.
#include "sim/programs/moe_program_common.h"

#include "descriptors/plan/aiter_kernels.h"

#include <algorithm>
#include <utility>

namespace tdmsim::sim::programs::moe_detail {

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
// besides its conversion and scan (fused_moe.hip fused_kernel; the profile's nvidia.fused counts):
// the copies of the next chunk's N down-row slices of N/2 columns, the loop's
// wait and barriers, and a multiplying warp's wmma work over K = N/2.
std::uint64_t fused_chunk_ops(const Layer& l, const KernelTile& tile) {
  const std::uint64_t ks = tile.n / 2;
  const std::uint64_t copies = ceil_div(tile.n * ceil_div(bytes_of(ks, l.shape.weight_dtype), 16), tile.threads);
  const Fragments f = fragments(l.block_m, tile.n);
  const std::uint64_t tm = f.tm, tn = f.tn;
  return copies * l.nv.fused.copy_ops + l.nv.fused.chunk_loop_ops +
         ks / 16 * ((tm + tn) * l.nv.fused.fragment_load_ops + tm * tn * 2) + tm * tn * l.nv.fused.fragment_ops;
}

// The 1-stage kernel: gate and up for the job's N/2 intermediate columns
// over all of H, activation, then those columns of I through down into every
// H column; the partial sums are scatter-added into the tokens' output rows.
void fused_program(const Layer& l, const TileJob& j, isa::TileProgram& p) {
  const KernelTile& tile = l.kernel.gate_up_tile;
  const DType dt = l.shape.dtype, wdt = l.shape.weight_dtype;
  const plan::Range n = plan::job_n_range(l.shape, l.kernel, j);
  const std::uint32_t cols = n.end - n.begin;  // of I
  const std::uint32_t h = l.shape.hidden;
  base_program(l, tile, 2 * cols, l.wgmma_gate_up, 2, p);
  // Our kernel (fused_moe.hip fused_kernel): both phases' LDS. Its registers
  // stay as gemm_vgprs says (ptxas -v, sm_90a: 48 for bf16 32x64x128, 94 for
  // e4m3 64x128x128; docs/moe-timing.md).
  if (l.mma_sync) p.lds_bytes = fused_lds(l, tile, p.lds_bytes);
  // AITER's assembly 1-stage kernels (machines whose kernels are AITER-like,
  // plan::aiter_one_stage_tile): their kernel lists give each kernel its
  // workgroups per CU (tg_num_perCU, plan::aiter_one_stage_workgroups_per_cu):
  // the registers holding the gate/up and down accumulators, not LDS, bound
  // them. Modelled as the register file shared by that many workgroups, and
  // LDS for the token rows' K tiles alone (the weights go to registers).
  const bool aiter_asm = aiter_gemm(l) && plan::aiter_one_stage_asm_tile(tile);
  if (aiter_asm) {
    p.lds_bytes = plan::aiter_one_stage_lds_bytes(l.shape.dtype, l.block_m, tile, l.kernel.pipeline_stages);
    registers_shared(l, l.aiter_one_stage_per_cu, p);
  }
  // Its phase 2 keeps 2 down slices in flight (issue(h0 + 2 BN), then
  // async_wait<2>), phase 1 copies_ahead; one depth per program: `stages`,
  // as before (not revisited: the 1-stage kernel's error is its instructions,
  // docs/moe-timing.md).
  p.pipeline_depth = std::max(1u, l.kernel.pipeline_stages);
  block_prologue(l, j.block, p);
  // Gate/up: 2 cols rows along H; down: H rows along the cols of I.
  scale_prologue(l, j, 2 * cols, h, p, h, cols);
  const std::uint64_t h_row = bytes_of(h, wdt);
  const std::uint64_t i_row = bytes_of(l.shape.inter, wdt);
  const std::uint32_t k_bytes = bytes_of(tile.k, dt), wk_bytes = bytes_of(tile.k, wdt);
  isa::Loop& up = p.loops[0];
  up.iterations = ceil_div(h, tile.k);
  up.loads.reserve(3);
  const std::uint64_t gate = w13_of(l, j.expert) + std::uint64_t{n.begin} * h_row;
  up.loads.push_back(token_rows(l.tdm, l.buf.x, k_bytes, j.valid_rows, l.x_rows[j.block], k_bytes));
  up.loads.push_back(strided(gate, wk_bytes, cols, h_row, wk_bytes));
  up.loads.push_back(strided(gate + std::uint64_t{l.shape.inter} * h_row, wk_bytes, cols, h_row, wk_bytes));
  matrix_of(l, l.wgmma_gate_up, false, &tile, up);
  // (Phase 1 is the code object's main loop; phase 2's loop has no mix of its own.)
  amd_loop_of(l, plan::LoopKernel::fused, tile, p, up);
  dequant_of(l, 2 * cols, tile.k, up);
  up.m = l.block_m;
  up.n = 2 * cols;
  up.k = tile.k;
  if (aiter_asm) weights_in_registers(up);
  // Down: the intermediate slice stays on chip (K = cols); the loop walks H
  // in N-wide column groups of w_down, each a cols-long row slice.
  isa::Loop& down = p.loops[1];
  down.iterations = ceil_div(h, tile.n);
  down.loads.push_back(strided(w2_of(l, j.expert) + bytes_of(n.begin, wdt), bytes_of(cols, wdt),
                               tile.n, i_row, static_cast<std::int64_t>(std::uint64_t{tile.n} * i_row)));
  matrix_of(l, false, false, nullptr, down);  // phase 2's own loop (fused_moe.hip fused_kernel), converting in LDS
  dequant_of(l, tile.n, cols, down);
  down.m = l.block_m;
  down.n = tile.n;
  down.k = cols;
  // w_down into registers too; the intermediate (A) is on chip, read from LDS.
  if (aiter_asm) weights_in_registers(down, 0);
  // Per chunk, between barriers: (8-bit) the chunk's down rows converted in
  // LDS before the product; after it, every element of the BM x N product
  // scanned (padding rows too) and the real rows' ones added into y.
  // (Our kernel, fused_moe.hip fused_kernel; other kernels: the combine in
  // the epilogue.)
  std::uint64_t combine_ops = std::uint64_t{h} * l.epilogue.combine_ops;
  if (l.mma_sync) {
    down.vector_after_matrix = true;
    down.vector_issue_bound = true;
    down.vector_ops = std::uint64_t{tile.n} * (std::uint64_t{l.block_m} * (l.nv.fused.scan_ops + l.nv.fused.product_ops) +
                                               std::uint64_t{j.valid_rows} * l.nv.fused.add_ops +
                                               (dtype_bits(dt) == 8 ? std::uint64_t{cols} * l.nv.fused.convert_ops : 0)) +
                      std::uint64_t{p.threads} * fused_chunk_ops(l, tile);
    combine_ops = 0;
  }
  p.epilogue_vector_ops = std::uint64_t{l.block_m} * (cols * l.epilogue.activation_ops + combine_ops);
  if (l.mma_sync) {  // our kernel's phase-1 epilogue, counted (its combine is in the down phase)
    p.epilogue_vector_ops = std::uint64_t{cols} * (std::uint64_t{j.valid_rows} * l.nv.fused.activation_ops +
                                                   std::uint64_t{l.block_m - j.valid_rows} * l.nv.fused.activation_skip_ops);
  }
  p.epilogue_issue_bound = l.mma_sync;
  p.stores.push_back(gathered(l.buf.out, static_cast<std::uint32_t>(l.out_row), j.valid_rows,
                              &l.out_rows[j.block]));
  p.stores.back().atomic = true;
}

}  // namespace tdmsim::sim::programs::moe_detail
