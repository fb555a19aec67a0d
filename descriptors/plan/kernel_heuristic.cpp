// choose_kernel: the scenario's kernel configuration where it fixes one,
// otherwise the documented heuristic of docs/moe-plan.md "Kernel heuristic".
#include <algorithm>
#include <array>
#include <cassert>
#include <string>

#include <fmt/core.h>

#include "descriptors/plan/moe_plan.h"

namespace tdmsim::plan {
namespace {

std::uint32_t ceil_div(std::uint64_t a, std::uint64_t b) {
  return static_cast<std::uint32_t>((a + b - 1) / b);
}

std::string tile_text(const KernelTile& t) {
  return fmt::format("{}x{}x{}x{}", t.threads, t.m, t.n, t.k);
}

// Workgroups of the gate/up stage: every block of every expert times the N
// tiles over 2I (each N/2 columns of gate and the same of up, as tile_jobs).
std::uint64_t gate_up_tiles(const LayerShape& shape, const std::vector<std::uint32_t>& rows,
                            std::uint32_t block_m, const KernelTile& tile) {
  std::uint64_t blocks = 0;
  for (const std::uint32_t r : rows) blocks += ceil_div(r, block_m);
  return blocks * ceil_div(shape.inter, tile.n / 2);  // = ceil(2I / N) for the even N
}

std::uint32_t floor_pow2(std::uint32_t v) {
  std::uint32_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}

}  // namespace

KernelTile default_tile(std::uint32_t block_m) {
  // 256 threads (4 waves of 64, or 8 warps), as AITER's CK MoE kernels name
  // their tiles; N 64 for the small blocks of decode, N 128 from M 64 up; K
  // as large as keeps the A + B tiles of two pipeline buffers within 64 KiB
  // of LDS in bf16 (MI300X, the smallest shipped LDS): (M + N) * K * 2 B * 2
  // = 48, 48, 64 KiB for M 32, 64, 128. Our choice, not a tuning table.
  const std::uint32_t n = block_m >= 64 ? 128 : 64;
  const std::uint32_t k = block_m >= 256 ? 32 : block_m >= 64 ? 64 : 128;
  return {256, block_m, n, k};
}

KernelChoice choose_kernel(const LayerShape& shape, const KernelSpec& requested,
                           const MachineSpec& machine, const FusedRouting& fused) {
  const std::uint32_t cus = machine.compute.total_cus();
  std::vector<std::uint32_t> rows(shape.experts_fused(), 0);
  std::uint64_t local_rows = 0;
  for (const std::uint32_t e : fused.expert) {
    if (e == kRemoteExpert) continue;
    ++rows[e];
    ++local_rows;
  }

  KernelChoice k;
  k.pipeline_stages = requested.pipeline_stages;
  std::string why;

  // Block size: fixed by the scenario (block_m, or a tile's M), else the M of
  // {32, 64, 128} whose gate/up grid needs the fewest waves over all CUs
  // (one workgroup per CU per wave); ties go to the larger M, which re-reads
  // each expert's weights for fewer blocks.
  if (requested.block_m != 0) {
    k.block_m = requested.block_m;
    why = fmt::format("block_m {} (scenario)", k.block_m);
  } else if (!requested.gate_up_tile.is_auto()) {
    k.block_m = requested.gate_up_tile.m;
    why = fmt::format("block_m {} (scenario gate_up_tile)", k.block_m);
  } else if (!requested.down_tile.is_auto()) {
    k.block_m = requested.down_tile.m;
    why = fmt::format("block_m {} (scenario down_tile)", k.block_m);
  } else {
    std::string table;
    std::uint64_t best_waves = 0;
    for (const std::uint32_t m : std::array<std::uint32_t, 3>{32, 64, 128}) {
      const std::uint64_t tiles = gate_up_tiles(shape, rows, m, default_tile(m));
      const std::uint64_t waves = (tiles + cus - 1) / cus;
      table += fmt::format("{}M{}: {} tiles {} waves", table.empty() ? "" : ", ", m, tiles, waves);
      if (k.block_m == 0 || waves <= best_waves) {
        k.block_m = m;
        best_waves = waves;
      }
    }
    why = fmt::format("block_m {} (fewest gate/up waves over {} CUs, ties to larger M: {})",
                      k.block_m, cus, table);
  }
  k.gate_up_tile =
      requested.gate_up_tile.is_auto() ? default_tile(k.block_m) : requested.gate_up_tile;
  k.down_tile = requested.down_tile.is_auto() ? default_tile(k.block_m) : requested.down_tile;
  why += fmt::format("; tiles {} / {}{}", tile_text(k.gate_up_tile), tile_text(k.down_tile),
                     requested.gate_up_tile.is_auto() && requested.down_tile.is_auto()
                         ? " (default)" : "");

  // Stages: the fused 1-stage kernel only when this GPU's rows fit in two
  // blocks. Each of its jobs scatter-adds a partial sum over its slice of I
  // into every H column of its rows, I / (N/2) times the output traffic of
  // the 2-stage kernel, which is cheap only for a handful of rows; in
  // exchange it saves a launch and the intermediate's round trip through
  // memory, which dominate at such sizes.
  if (requested.stages != 0) {
    k.stages = requested.stages;
    why += fmt::format("; {}-stage (scenario)", k.stages);
  } else {
    const std::uint64_t limit = 2ull * k.block_m;
    k.stages = local_rows <= limit ? 1 : 2;
    why += fmt::format("; {}-stage ({} local rows {} 2*block_m = {})", k.stages, local_rows,
                       k.stages == 1 ? "<=" : ">", limit);
  }

  // Split-K: the 1-stage kernel has none. Otherwise, when the gate/up grid
  // would occupy at most a quarter of the CUs, split K by the largest power
  // of two that fills them, at most 8 (each split adds a partial-sum
  // reduction). Never more splits than K tiles in either stage, so no split
  // is empty.
  const std::uint32_t k_tiles = std::min(ceil_div(shape.hidden, k.gate_up_tile.k),
                                         ceil_div(shape.inter, k.down_tile.k));
  const std::uint64_t grid = std::max<std::uint64_t>(
      1, gate_up_tiles(shape, rows, k.block_m, k.gate_up_tile));
  if (k.stages == 1) {
    k.split_k = 1;
    why += requested.split_k > 1 ? "; split_k 1 (the fused 1-stage kernel does not split K)"
                                 : "; split_k 1 (1-stage)";
  } else if (requested.split_k != 0) {
    k.split_k = std::min(requested.split_k, k_tiles);
    why += k.split_k == requested.split_k
               ? fmt::format("; split_k {} (scenario)", k.split_k)
               : fmt::format("; split_k {} (scenario asked {}, limited to the {} K tiles)",
                             k.split_k, requested.split_k, k_tiles);
  } else if (grid * 4 <= cus) {
    const auto fill = static_cast<std::uint32_t>(cus / grid);
    k.split_k = std::min({floor_pow2(fill), 8u, floor_pow2(k_tiles)});
    why += fmt::format("; split_k {} (gate/up grid {} <= {} CUs / 4)", k.split_k, grid, cus);
  } else {
    k.split_k = 1;
    why += fmt::format("; split_k 1 (gate/up grid {} > {} CUs / 4)", grid, cus);
  }
  assert(k.split_k >= 1);
  k.reason = std::move(why);
  return k;
}

}  // namespace tdmsim::plan
