// The 2-stage fused-MoE kernels (gate/up, down) and the kernels between or
// before them (split-K reduction, the intermediate's quantisation, the
// output's clearing), as tile programs; docs/moe-timing.md.
#include "sim/programs/moe_program_common.h"

#include <algorithm>
#include <utility>

namespace tdmsim::sim::programs::moe_detail {

void gate_up_program(const Layer& l, const TileJob& j, isa::TileProgram& p) {
  const KernelTile& tile = l.kernel.gate_up_tile;
  const DType dt = l.shape.dtype, wdt = l.shape.weight_dtype;
  const plan::Range n = plan::job_n_range(l.shape, l.kernel, j);
  const plan::Range k = plan::job_k_range(l.shape, l.kernel, j);
  const std::uint32_t cols = n.end - n.begin;  // of gate, and as many of up
  base_program(l, tile, 2 * cols, l.wgmma_gate_up, 1, p);
  if (aiter_gemm(l)) aiter_gemm_resources(l, tile, true, p);
  block_prologue(l, j.block, p);
  scale_prologue(l, j, 2 * cols, k.end - k.begin, p);
  // Activations and weights each in their own dtype (mixed pairs: 4-bit weights).
  const std::uint64_t h_row = bytes_of(l.shape.hidden, wdt);
  const std::uint32_t k_bytes = bytes_of(tile.k, dt), wk_bytes = bytes_of(tile.k, wdt);
  const std::uint64_t k0 = bytes_of(k.begin, dt), wk0 = bytes_of(k.begin, wdt);
  isa::Loop& loop = p.loops[0];
  loop.iterations = ceil_div(k.end - k.begin, tile.k);
  loop.loads.reserve(3);
  const std::uint64_t gate = w13_of(l, j.expert) + std::uint64_t{n.begin} * h_row + wk0;
  loop.loads.push_back(token_rows(l.tdm, l.buf.x + k0, k_bytes, j.valid_rows, l.x_rows[j.block], k_bytes));
  loop.loads.push_back(strided(gate, wk_bytes, cols, h_row, wk_bytes));
  loop.loads.push_back(strided(gate + std::uint64_t{l.shape.inter} * h_row, wk_bytes, cols, h_row, wk_bytes));
  matrix_of(l, l.wgmma_gate_up, l.ws_gate_up, &tile, loop);
  amd_loop_of(l, plan::LoopKernel::gate_up, tile, p, loop);
  if (aiter_gemm(l)) weights_in_registers(loop);
  dequant_of(l, 2 * cols, tile.k, loop);
  loop.m = l.block_m;  // padding rows are computed too: that is the padding waste
  loop.n = 2 * cols;
  loop.k = tile.k;
  const std::uint64_t first_row = std::uint64_t{j.block} * l.block_m;
  const std::uint64_t skip = epilogue_skip_ops(l, j, cols);
  if (l.ws_gate_up) p.epilogue_threads = kWsConsumerThreads;
  if (l.kernel.split_k > 1) {
    // fp32 partial sums of gate and up; activation waits for the reduction.
    if (l.ws_gate_up) {
      p.epilogue_vector_ops = std::uint64_t{l.block_m} * cols * l.nv.epilogue.ws_gate_up_partial_ops;
      p.epilogue_issue_bound = true;
    } else if (l.mma_sync) {
      p.epilogue_vector_ops = std::uint64_t{j.valid_rows} * cols * l.nv.epilogue.gate_up_partial_ops + skip;
      p.epilogue_issue_bound = true;
    } else {
      p.epilogue_vector_ops = std::uint64_t{l.block_m} * 2 * cols;
    }
    // Our kernels: one fp32 plane a split, plain stores. AITER's (split
    // stage 1 only): one zeroed fp32 buffer every split adds into atomically
    // (ck_moe_stage1 / asm_stage1 with ksplit, then silu_and_mul reads it).
    const std::uint64_t row = std::uint64_t{2} * l.shape.inter * 4;
    const std::uint64_t plane = partial_planes(l) > 1 ? j.k_split : 0;
    const std::uint64_t at = l.buf.partials + (plane * l.padded_rows + first_row) * row +
                             std::uint64_t{n.begin} * 2 * 4;
    p.stores.push_back(strided(at, 2 * cols * 4, j.valid_rows, row));
    p.stores.back().atomic = partial_planes(l) == 1;
  } else {
    const DType it = l.inter_dtype;
    if (l.ws_gate_up) {
      p.epilogue_vector_ops = std::uint64_t{l.block_m} * cols * l.nv.epilogue.ws_gate_up_ops;
      p.epilogue_issue_bound = true;
    } else if (l.mma_sync) {
      p.epilogue_vector_ops = std::uint64_t{j.valid_rows} * cols * l.nv.epilogue.gate_up_ops + skip;
      p.epilogue_issue_bound = true;
    } else {
      p.epilogue_vector_ops = std::uint64_t{l.block_m} * cols *
                              (l.epilogue.activation_ops + (dtype_bits(it) <= 8 ? l.epilogue.quant_ops : 0));
    }
    const std::uint64_t i_row = bytes_of(l.shape.inter, it);
    p.stores.push_back(strided(l.buf.inter + first_row * i_row + bytes_of(n.begin, it),
                               bytes_of(cols, it), j.valid_rows, i_row));
  }
}

// Split-K reduction of the gate/up partials, then the activation: one
// workgroup per block.
isa::TileProgram reduce_program(const Layer& l, std::uint32_t block, std::uint32_t valid) {
  isa::TileProgram p;
  p.threads = 256;
  p.vgprs_per_thread = 64;
  const std::uint64_t row = std::uint64_t{2} * l.shape.inter * 4;
  const std::uint64_t first_row = std::uint64_t{block} * l.block_m;
  const std::uint32_t planes = partial_planes(l);
  for (std::uint32_t s = 0; s < planes; ++s) {
    p.prologue_loads.push_back(strided(
        l.buf.partials + (std::uint64_t{s} * l.padded_rows + first_row) * row,
        static_cast<std::uint32_t>(row), valid, row));
  }
  const std::uint64_t elems = std::uint64_t{valid} * l.shape.inter;
  p.epilogue_vector_ops = elems * (2 * planes * l.epilogue.reduce_ops + l.epilogue.activation_ops +
                                   (dtype_bits(l.inter_dtype) <= 8 ? l.epilogue.quant_ops : 0));
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
// the kernel's own instruction count (the profile's nvidia.quant).
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
  passes.vector_ops = (std::uint64_t{group} * (l.nv.quant.amax_ops + l.nv.quant.round_ops) +
                       std::uint64_t{p.threads} * l.nv.quant.group_ops_per_thread) / 2;
  passes.vector_issue_bound = true;  // its own instructions, a row per workgroup
  p.loops.push_back(std::move(passes));
  p.stores.push_back(strided(l.buf.inter_q + row * q_row, static_cast<std::uint32_t>(q_row), 1, 0));
  p.stores.push_back(strided(l.buf.scales + std::uint64_t{row} * scales * 4, scales * 4, 1, 0));
  return p;
}

// Workgroup wg of a grid of wgs over the output: its bytes [first, last).
static std::pair<std::uint64_t, std::uint64_t> output_share(const Layer& l, std::uint32_t wg, std::uint32_t wgs) {
  const std::uint64_t total = std::uint64_t{l.shape.tokens} * l.out_row;
  return {total * wg / wgs, total * (wg + 1) / wgs};
}

// Clearing the output before the combine adds into it (kernels.combine:
// fp32; a memset's grid of 64 KiB per workgroup).
isa::TileProgram zero_program(const Layer& l, std::uint32_t wg, std::uint32_t wgs) {
  const auto [first, last] = output_share(l, wg, wgs);
  isa::TileProgram p;
  p.threads = 256;
  p.vgprs_per_thread = 16;
  p.stores.push_back(strided(l.buf.out + first, static_cast<std::uint32_t>(std::max<std::uint64_t>(4, last - first)), 1, 0));
  if (wg == 0) p.extra_time_ps = l.clear_overhead_ps;  // once per clearing (kernels.clear_overhead)
  return p;
}

void down_program(const Layer& l, const TileJob& j, isa::TileProgram& p) {
  const KernelTile& tile = l.kernel.down_tile;
  const DType dt = l.shape.dtype, wdt = l.shape.weight_dtype;
  const plan::Range n = plan::job_n_range(l.shape, l.kernel, j);
  const plan::Range k = plan::job_k_range(l.shape, l.kernel, j);
  const std::uint32_t cols = n.end - n.begin;
  base_program(l, tile, cols, l.wgmma_down, 1, p);
  if (aiter_gemm(l)) aiter_gemm_resources(l, tile, false, p);
  block_prologue(l, j.block, p);
  scale_prologue(l, j, cols, k.end - k.begin, p);
  const std::uint64_t i_row = bytes_of(l.shape.inter, dt), wi_row = bytes_of(l.shape.inter, wdt);
  const std::uint32_t k_bytes = bytes_of(tile.k, dt), wk_bytes = bytes_of(tile.k, wdt);
  const std::uint64_t k0 = bytes_of(k.begin, dt), wk0 = bytes_of(k.begin, wdt);
  const std::uint64_t first_row = std::uint64_t{j.block} * l.block_m;
  isa::Loop& loop = p.loops[0];
  loop.iterations = ceil_div(k.end - k.begin, tile.k);
  loop.loads.reserve(2);
  // The block's intermediate rows are contiguous (sorted order).
  const std::uint64_t a_base = l.buf.inter_q != 0 ? l.buf.inter_q : l.buf.inter;
  loop.loads.push_back(strided(a_base + first_row * i_row + k0, k_bytes, j.valid_rows, i_row, k_bytes));
  loop.loads.push_back(strided(w2_of(l, j.expert) + std::uint64_t{n.begin} * wi_row + wk0, wk_bytes,
                               cols, wi_row, wk_bytes));
  matrix_of(l, l.wgmma_down, l.ws_down, &tile, loop);
  amd_loop_of(l, plan::LoopKernel::down, tile, p, loop);
  if (aiter_gemm(l)) weights_in_registers(loop);
  dequant_of(l, cols, tile.k, loop);
  loop.m = l.block_m;
  loop.n = cols;
  loop.k = tile.k;
  if (l.mma_sync) {
    p.epilogue_vector_ops = std::uint64_t{j.valid_rows} * cols * l.nv.epilogue.down_ops + epilogue_skip_ops(l, j, cols);
    p.epilogue_issue_bound = true;
  } else {
    p.epilogue_vector_ops = std::uint64_t{l.block_m} * cols * l.epilogue.combine_ops;
  }
  if (l.reduce_combine) {
    // kernels.combine reduce: plain stores of each row to its own (token,
    // slot) row; the sum kernel adds them up afterwards.
    p.stores.push_back(gathered(l.buf.topk_out + std::uint64_t{n.begin} * l.out_elem, cols * l.out_elem,
                                j.valid_rows, &l.topk_rows[j.block]));
    return;
  }
  // Combine: atomic adds into the tokens' output rows (each split adds its
  // part); the L2's atomic units do the read-modify-write.
  p.stores.push_back(gathered(l.buf.out + std::uint64_t{n.begin} * l.out_elem, cols * l.out_elem,
                              j.valid_rows, &l.out_rows[j.block]));
  p.stores.back().atomic = true;
}

// kernels.combine reduce: workgroup wg of wgs sums the top-k rows of its run
// of tokens (contiguous in [tokens][slots][H]) into [tokens][H]: one add per
// element read, fp32 accumulation converted back to bf16.
isa::TileProgram topk_sum_program(const Layer& l, std::uint32_t wg, std::uint32_t wgs) {
  const std::uint64_t t0 = std::uint64_t{l.shape.tokens} * wg / wgs, t1 = std::uint64_t{l.shape.tokens} * (wg + 1) / wgs;
  isa::TileProgram p;
  p.threads = 256;
  p.vgprs_per_thread = 32;
  if (t1 == t0) return p;
  const std::uint64_t in_row = std::uint64_t{l.slots} * l.out_row;
  p.prologue_loads.push_back(strided(l.buf.topk_out + t0 * in_row, static_cast<std::uint32_t>((t1 - t0) * in_row), 1, 0));
  p.epilogue_vector_ops = (t1 - t0) * l.shape.hidden * (l.slots + 1);
  p.stores.push_back(strided(l.buf.topk_sum + t0 * l.out_row, static_cast<std::uint32_t>((t1 - t0) * l.out_row), 1, 0));
  return p;
}

// And the copy of the sums into the output (`out.copy_`).
isa::TileProgram out_copy_program(const Layer& l, std::uint32_t wg, std::uint32_t wgs) {
  const auto [first, last] = output_share(l, wg, wgs);
  isa::TileProgram p;
  p.threads = 256;
  p.vgprs_per_thread = 16;
  if (last == first) return p;
  p.prologue_loads.push_back(strided(l.buf.topk_sum + first, static_cast<std::uint32_t>(last - first), 1, 0));
  p.stores.push_back(strided(l.buf.out + first, static_cast<std::uint32_t>(last - first), 1, 0));
  return p;
}

}  // namespace tdmsim::sim::programs::moe_detail
