// choose_kernel: the scenario's kernel configuration where it fixes one,
// otherwise the documented heuristic of docs/moe-plan.md "Kernel heuristic".
#include <algorithm>
#include <array>
#include <cassert>
#include <optional>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "descriptors/plan/aiter_heuristic.h"
#include "descriptors/plan/aiter_kernels.h"
#include "descriptors/plan/amd_kernels.h"
#include "descriptors/plan/default_tile.h"
#include "descriptors/plan/moe_plan.h"
#include "isa/matrix_table.h"
#include "isa/tile_program.h"

namespace tdmsim::plan {
namespace {

std::uint32_t ceil_div(std::uint64_t a, std::uint64_t b) {
  return static_cast<std::uint32_t>((a + b - 1) / b);
}

std::string tile_text(const KernelTile& t) {
  return fmt::format("{}x{}x{}x{}", t.threads, t.m, t.n, t.k);
}

// Blocks of block_m rows the layout gives experts with these row counts.
std::uint64_t block_count(const std::vector<std::uint32_t>& rows, std::uint32_t block_m) {
  std::uint64_t blocks = 0;
  for (const std::uint32_t r : rows) blocks += ceil_div(r, block_m);
  return blocks;
}

// Workgroups of the gate/up stage: every block of every expert times the N
// tiles over 2I (each N/2 columns of gate and the same of up, as tile_jobs).
std::uint64_t gate_up_tiles(const LayerShape& shape, const std::vector<std::uint32_t>& rows,
                            std::uint32_t block_m, const KernelTile& tile) {
  return block_count(rows, block_m) * ceil_div(shape.inter, tile.n / 2);  // = ceil(2I / N) for the even N
}

// The default tiles of machines whose kernels run wgmma (MEASURED on the H200,
// validation/data/h200/moe/wgmma-2026-11-30): at M 128, bf16 128x256x64 (the
// wider N halves the L2 traffic per product that bounds 128x128: 1.08-1.16x)
// and 8-bit 128x128x128 (one 128-byte K row per tile, 1.1-1.25x K 64); 8-bit
// at M 64 64x128x128 (decode: streams the weights 1.55-1.65x faster than the
// mma.sync tiles of M 32). Others: the default tile. bf16 layers with a short
// gate/up K (H <= kShortK) and at least two blocks of rows per expert on
// average take 128x128x64 instead, with 3 buffers so that two workgroups share
// an SM and overlap each other's prologue and epilogue (1.03-1.07x on the four
// models with H 2048-2880 at 4096+ tokens; 0.92-0.97x on Mixtral and
// Qwen2-57B, H 3584-4096, wgmma-2026-11-30/shortk; and 0.94-0.97x at one block
// per expert, timing-v8).
constexpr std::uint32_t kShortK = 3072;

// K tiles from which a 16-row tile's loop counts as long (choose_kernel's
// pipeline depth): between the 16-22 of the layers that lost from a deeper
// pipeline and the 112 of Mixtral's down, which gained.
constexpr std::uint32_t kDeepK = 64;
bool short_k_bf16(std::uint32_t block_m, const LayerShape& shape, double rows_per_expert) {
  return block_m == 128 && dtype_bits(shape.dtype) == 16 && shape.hidden <= kShortK &&
         rows_per_expert >= 2.0 * block_m;
}
//
// With the warp-specialized loop (kernels.warp_specialized), bf16 at M 128 takes
// 384x128x256x64 whatever K: 1.19-1.32x the 256-thread 128x256x64 and the
// short-K 128x128x64 on all ten layers measured (Mixtral, Qwen3-30B, OLMoE,
// DeepSeek-V2-Lite, gpt-oss-20b, Qwen2-57B at 512-16384 tokens), and
// 1.25-1.33x its own 128x128x64 (validation/data/h200/moe/ws-2026-11-30).
KernelTile wgmma_default_tile(std::uint32_t block_m, const LayerShape& shape, bool short_k, bool ws) {
  const bool byte = dtype_bits(shape.dtype) == 8;
  if (ws && !byte && block_m == 128) return {rules::kWsThreads, 128, 256, 64};
  if (short_k) return {256, 128, 128, 64};
  if (block_m == 128) return byte ? KernelTile{256, 128, 128, 128} : KernelTile{256, 128, 256, 64};
  if (block_m == 64 && byte) return {256, 64, 128, 128};
  return default_tile(block_m, shape.quant);
}

std::uint32_t floor_pow2(std::uint32_t v) {
  std::uint32_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}

// FLOP/s of the whole machine multiplying with this tile's main loop, as the
// timing model charges it (sim/cu/compute_unit.cpp matrix_cost): a wgmma
// tile at the ISA's rate and its loop's factor (warp-specialized, 8-bit or
// bf16); any other at the kernels' fastest instruction for the operands
// (isa::kernel_matrix_dtype: widened where there is none, e4m3 as f16 on
// the H200 file's mma.sync) and kernels.matrix_efficiency, multiplying bf16
// where our AMD loop converts e4m3 in LDS; times the CU's matrix efficiency.
double tile_flops_per_s(const MachineSpec& machine, const LayerShape& shape, KernelCode source,
                        const KernelTile& tile) {
  double per_simd = 0;
  if (wgmma_tile(machine, tile, shape.dtype)) {
    const DType d = isa::matrix_dtype(machine, shape.dtype);
    const double factor = ws_tile(machine, tile, shape.dtype) ? machine.kernels.wgmma_ws_efficiency
                          : dtype_bits(shape.dtype) == 8      ? machine.kernels.wgmma_fp8_efficiency
                                                              : machine.kernels.wgmma_efficiency;
    per_simd = isa::matrix_flops_per_clock_per_cu(machine.isa, d, 1) * factor;
  } else {
    DType d = isa::kernel_matrix_dtype(machine, shape.dtype);
    const auto target = our_cdna_target(machine, source);
    if (target && dtype_bits(shape.dtype) <= 8 && rules::amd_converts_fp8(1, tile.k, *target == CdnaTarget::gfx940)) {
      d = DType::bf16;
    }
    per_simd = isa::kernel_matrix_flops_per_clock_per_simd(machine, d) * machine.kernels.matrix_efficiency;
  }
  return per_simd * machine.compute.matrix_efficiency * machine.compute.simds_per_cu * machine.compute.total_cus() *
         static_cast<double>(machine.compute.clock.hz);
}

// Seconds our AMD kernels (kernel.source tdmsim on a CDNA machine) spend
// issuing one stage's main loop (`kind`, over `k_tiles` K tiles of `tile`
// in all): per K tile, each wavefront issues its loop's instructions
// (plan::loop_mix, from the code objects) one per issue turn, in parallel
// with the other workgroups the CU holds (by LDS, registers and wave slots,
// as the timing model's occupancy), and its VALU instructions share the
// CU's vector lanes; the slower of the two, spread over the CUs
// (docs/moe-timing.md "CDNA main-loop issue"). 0 where the kernels are not
// charged per instruction. The block-scaled loops (scales applied to each K
// group's partial products in VALU) make this the bound of padded rows.
double amd_issue_seconds(const MachineSpec& machine, const LayerShape& shape, KernelCode source, LoopKernel kind,
                         double k_tiles, const KernelTile& tile, std::uint32_t stages) {
  const auto target = our_cdna_target(machine, source);
  if (!target) return 0.0;
  const auto& cu = machine.compute;
  const bool fp8 = dtype_bits(shape.dtype) <= 8;
  const bool bs = block_scaled(shape.quant);
  const auto mix = loop_mix(*target, kind, fp8, bs, tile.m, tile.n, tile.k);
  if (!mix) return 0.0;
  const std::uint64_t lds = amd_kernel_lds_bytes(*target, kind, fp8, bs, tile.m, tile.n, tile.k, stages);
  const auto held = static_cast<double>(
      std::max(1u, cu.occupancy(tile.threads, lds, rules::kMatrixKernelVgprs).workgroups));
  const double wave_cycles = k_tiles * mix->mix.instructions * isa::kCdnaIssueTurnCycles / held;
  const double valu_cycles = k_tiles * mix->mix.valu * std::max(tile.threads, cu.wave_size) / cu.vector_lanes();
  return std::max(wave_cycles, valu_cycles) / cu.total_cus() / static_cast<double>(cu.clock.hz);
}

}  // namespace

bool wgmma_tile(const MachineSpec& machine, const KernelTile& tile, DType dtype) {
  return machine.kernels.matrix_instructions == MatrixInstructions::wgmma &&
         (rules::wgmma_tile(tile.threads, tile.m, tile.n, tile.k, dtype_bits(dtype)) ||
          ws_tile(machine, tile, dtype));
}

std::optional<CdnaTarget> our_cdna_target(const MachineSpec& machine, KernelCode source) {
  if (source != KernelCode::tdmsim || machine.kernels.matrix_instructions != MatrixInstructions::isa) return {};
  return mix_target(machine.isa);
}

bool ws_tile(const MachineSpec& machine, const KernelTile& tile, DType dtype) {
  return machine.kernels.matrix_instructions == MatrixInstructions::wgmma && machine.kernels.warp_specialized &&
         rules::ws_tile(tile.threads, tile.m, tile.n, tile.k, dtype_bits(dtype));
}

KernelTile default_tile(std::uint32_t block_m, Quant quant) {
  // fp8 with 128x128 block scales at M 128: K 128, one scale group per K
  // tile, so each tile folds its partial sums once (measured 10-30% faster
  // than K 64 on the H200, docs/gpu-kernels.md "v4"; same LDS bytes per row
  // as bf16 K 64).
  if (quant == Quant::block_128 && block_m == 128) return {256, 128, 128, 128};
  return default_tile(block_m);
}

KernelTile default_tile(std::uint32_t block_m, Quant quant, DType dtype, DType weight_dtype) {
  KernelTile t = default_tile(block_m, quant);
  if (quant == Quant::block_128 && block_m == 128) return t;
  // The K of the bf16 default is what keeps two pipeline buffers of A and B
  // within the LDS budget (default_tile above); narrower operands fill the
  // same bytes with proportionally more K: x2 for 8-bit, x4 for 4-bit
  // (the wider of the two operands decides). Otherwise a 4-bit K step is
  // 32-64 bytes a row, and the kernel is bound by its loop's per-step cost
  // (MI355X MXFP4 gate/up at block_m 64: 2x the published time with K 64,
  // validation/calibration/aiter_mi355x.py; docs/moe-timing.md).
  const std::uint32_t bits = std::max(dtype_bits(dtype), dtype_bits(weight_dtype));
  if (bits > 0 && bits < 16) t.k = t.k * (16 / bits);
  return t;
}

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


// Our kernels on AMD (kernel.source tdmsim on a CDNA machine) allocate the
// LDS of plan::amd_kernel_lds_bytes (padded rows, the fp32 C tile, the e4m3
// conversion buffer where there is one, their static LDS), which a
// workgroup may take up to the CU's whole LDS (compute.lds_per_cu: 64 KiB on
// MI300X, 160 KiB on MI355X; docs/moe-plan.md "Kernel heuristic", item LDS on AMD). What the
// scenario leaves open is chosen to fit: fewer buffers first (down to 2, the
// fewest our AMD loop runs with), then, for a tile of the heuristic's, N
// halved down to 64 and then K halved down to 32, taking the first of those
// tiles that fits and is compiled (kernels/moe/fused_moe.hip with_tile), else
// the first that fits. A scenario's own tile or depth that does not fit is
// left as asked: the run refuses it (exit 2, the kernel and its LDS named).
static void fit_amd_lds(const LayerShape& shape, const KernelSpec& requested, const MachineSpec& machine, KernelChoice& k,
                        std::string& why) {
  const auto target = our_cdna_target(machine, requested.source);
  if (!target) return;
  const bool fp8 = dtype_bits(shape.dtype) <= 8;
  const bool bs = block_scaled(shape.quant);
  const std::uint64_t limit = machine.compute.lds_per_cu.bytes;
  const auto need = [&](const KernelTile& t, LoopKernel kind, std::uint32_t depth) {
    return amd_kernel_lds_bytes(*target, kind, fp8, bs, t.m, t.n, t.k, depth);
  };
  const auto stage_fits = [&](const KernelTile& t, LoopKernel kind, std::uint32_t depth) {
    return need(t, kind, depth) <= limit;
  };
  const auto all_fit = [&](std::uint32_t depth) {
    if (k.stages == 1) return stage_fits(k.gate_up_tile, LoopKernel::fused, depth);
    return stage_fits(k.gate_up_tile, LoopKernel::gate_up, depth) && stage_fits(k.down_tile, LoopKernel::down, depth);
  };
  if (requested.pipeline_stages == 0 && !all_fit(k.pipeline_stages)) {
    const std::uint32_t before = k.pipeline_stages;
    while (k.pipeline_stages > 2 && !all_fit(k.pipeline_stages)) --k.pipeline_stages;
    if (k.pipeline_stages < before) {
      why += fmt::format("; pipeline_stages {} (our AMD kernels' LDS, {} KiB a workgroup)", k.pipeline_stages,
                         limit >> 10);
    }
  }
  const auto shrink = [&](KernelTile& t, LoopKernel kind, const char* which) {
    if (stage_fits(t, kind, k.pipeline_stages)) return;
    std::vector<KernelTile> candidates;
    KernelTile c = t;
    while (c.n > 64) {
      c.n /= 2;
      candidates.push_back(c);
    }
    while (c.k > 32) {
      c.k /= 2;
      candidates.push_back(c);
    }
    const KernelTile* first_fit = nullptr;
    const KernelTile* pick = nullptr;
    for (const auto& x : candidates) {
      if (!stage_fits(x, kind, k.pipeline_stages)) continue;
      if (!first_fit) first_fit = &x;
      if (compiled_tile(kind, fp8, bs, x.m, x.n, x.k)) {
        pick = &x;
        break;
      }
    }
    if (!pick) pick = first_fit;
    if (!pick) return;  // nothing fits: the run refuses the kernel, naming its LDS
    why += fmt::format("; {} tile {} (our AMD kernel's {} B of LDS > {} KiB)", which, tile_text(*pick),
                       need(t, kind, k.pipeline_stages), limit >> 10);
    t = *pick;
  };
  if (k.stages == 1) {
    if (requested.gate_up_tile.is_auto() && requested.down_tile.is_auto()) {
      shrink(k.gate_up_tile, LoopKernel::fused, "1-stage");
      k.down_tile = k.gate_up_tile;
    }
    return;
  }
  if (requested.gate_up_tile.is_auto()) shrink(k.gate_up_tile, LoopKernel::gate_up, "gate_up");
  if (requested.down_tile.is_auto()) shrink(k.down_tile, LoopKernel::down, "down");
}

// AITER's kernels on a CDNA machine: a 2-stage tile the scenario or table
// row leaves open (the default tile) whose LDS in CK's v3 pipeline (two
// buffers of max(A, C shuffle), plan::aiter_gemm_resources) exceeds the CU's
// is run as CK's v1 pipeline (one buffer) when that fits: AITER ships both,
// and its default CK dispatch takes what compiles for the GPU (an A tile of
// more than half the CU's LDS; a down C shuffle that would not fit takes
// 2 XDL rows, aiter_gemm_resources). A named tile is left as named: the run
// refuses it.
static void fit_aiter_lds(const LayerShape& shape, const KernelSpec& requested, const MachineSpec& machine,
                          KernelChoice& k, std::string& why) {
  if (!runs_aiter_kernels(machine, requested.source) || k.stages != 2) return;
  const std::uint64_t limit = machine.compute.lds_per_cu.bytes;
  const auto fit = [&](const KernelTile& t, bool auto_tile, bool gate_up, std::uint32_t& buffers, const char* which) {
    if (!auto_tile || buffers != 0) return;
    const auto lds = [&](std::uint32_t b) {
      return aiter_gemm_resources(shape.dtype, shape.weight_dtype, k.block_m, t, gate_up, b, limit).lds_bytes;
    };
    const std::uint32_t two = aiter_lds_buffers(k.aiter_traits, gate_up, k.pipeline_stages);
    if (two < 2 || lds(two) <= limit || lds(1) > limit) return;
    buffers = 1;
    why += fmt::format("; {} tile: CK's v1 pipeline, one LDS buffer ({} KiB; two would take {} KiB > {} KiB)", which,
                       lds(1) >> 10, lds(two) >> 10, limit >> 10);
  };
  // (A gate/up kernel of a given count a CU shares the CU's LDS that many
  // ways: no pipeline to pick.)
  if (k.aiter_traits.gate_up_workgroups_per_cu == 0) {
    fit(k.gate_up_tile, requested.gate_up_tile.is_auto(), true, k.aiter_traits.gate_up_lds_buffers, "gate/up");
  }
  fit(k.down_tile, requested.down_tile.is_auto(), false, k.aiter_traits.down_lds_buffers, "down");
}

// The largest group of blocks the job order takes (choose_kernel).
constexpr std::uint32_t kMaxRasterGroup = 16;

KernelChoice choose_kernel(const LayerShape& shape, const KernelSpec& requested,
                           const MachineSpec& machine, const FusedRouting& fused, std::string_view fixed_by,
                           const AiterKernelTraits& traits) {
  const std::uint32_t cus = machine.compute.total_cus();
  std::vector<std::uint32_t> rows(shape.experts_fused(), 0);
  std::uint64_t local_rows = 0;
  for (const std::uint32_t e : fused.expert) {
    if (e == kRemoteExpert) continue;
    ++rows[e];
    ++local_rows;
  }

  KernelChoice k;
  if (requested.source == KernelCode::aiter) k.aiter_traits = traits;
  const bool aiter_kernels = runs_aiter_kernels(machine, requested.source);
  std::string why;
  const bool wgmma = machine.kernels.matrix_instructions == MatrixInstructions::wgmma;

  std::uint32_t touched = 0;
  for (const std::uint32_t r : rows) touched += r > 0 ? 1 : 0;
  const double rows_per_expert = touched ? static_cast<double>(local_rows) / touched : 0.0;
  const bool ws = wgmma && machine.kernels.warp_specialized;
  // The tile a layer at block_m m takes where the scenario sets none.
  const auto auto_tile_at = [&](std::uint32_t m) {
    return wgmma ? wgmma_default_tile(m, shape, !ws && short_k_bf16(m, shape, rows_per_expert), ws)
           // AITER's kernels (kernel.source aiter) on an ISA-table machine: K
           // scaled to the operand width; our own kernels keep their compiled
           // tiles (the LDS fit below picks among them).
           : aiter_kernels ? default_tile(m, shape.quant, shape.dtype, shape.weight_dtype)
               : default_tile(m, shape.quant);
  };

  // Block size: fixed by the scenario (block_m, or a tile's M), else the M of
  // {16, 32, 64, 128} from the machine's kernels.min_block_m up with the
  // lowest estimate of the layer: every block streams its expert's weights,
  // and computes all M rows, padding included, at the rate of the tile that M
  // runs (tile_flops_per_s) or, for our CDNA kernels, as fast as their loops
  // issue (amd_issue_seconds), whichever is slower. Ties (within 1%) go to
  // fewer padded rows, then to the larger M. Decode layers (an expert's rows
  // fit in 16) tie and take the smallest: 32 by default, as AITER's tables;
  // 16 on the h200 file, half the padded A rows and LDS of 32 (our H200
  // kernels, tma-2026-11-30/decode: 1.03-1.14x on ten of twelve 1- and
  // 16-token bf16 layers, 0.99x on the other two).
  if (requested.block_m != 0) {
    k.block_m = requested.block_m;
    why = fmt::format("block_m {} ({})", k.block_m, fixed_by);
  } else if (!requested.gate_up_tile.is_auto()) {
    k.block_m = requested.gate_up_tile.m;
    why = fmt::format("block_m {} ({} gate_up_tile)", k.block_m, fixed_by);
  } else if (!requested.down_tile.is_auto()) {
    k.block_m = requested.down_tile.m;
    why = fmt::format("block_m {} ({} down_tile)", k.block_m, fixed_by);
  } else {
    const double expert_bytes = 3.0 * shape.hidden * shape.inter * dtype_bits(shape.weight_dtype) / 8.0;
    const double bw = static_cast<double>(machine.memory.hbm.bandwidth.bytes_per_s);
    struct Candidate {
      std::uint32_t m;
      std::uint64_t padded;
      double seconds;
    };
    std::string table;
    std::optional<Candidate> best;
    for (const std::uint32_t m : std::array<std::uint32_t, 4>{16, 32, 64, 128}) {
      if (m < machine.kernels.min_block_m) continue;
      const std::uint64_t blocks = block_count(rows, m);
      // The tiles and depth a layer at this M would run (before the 1-stage
      // rule), fitted to our AMD kernels' LDS as below.
      KernelChoice at;
      at.block_m = m;
      at.stages = 2;
      at.down_tile = auto_tile_at(m);
      at.gate_up_tile = model_gate_up_tile(at.down_tile, requested.source);
      at.pipeline_stages = std::max(2u, machine.kernels.pipeline_stages);
      std::string unused;
      fit_amd_lds(shape, requested, machine, at, unused);
      // Each stage: the larger of its products' time (padded rows included)
      // at its tile's rate and, for our AMD kernels, its loop's issue; the
      // layer: the larger of the two stages' sum and the weights' streaming.
      const auto stage_s = [&](LoopKernel kind, const KernelTile& t, double flops, std::uint64_t n_tiles,
                               std::uint32_t k_len) {
        const double rate = tile_flops_per_s(machine, shape, requested.source, t);
        const auto k_tiles = static_cast<double>(blocks * n_tiles * ceil_div(k_len, t.k));
        return std::max(rate > 0 ? flops / rate : 0.0,
                        amd_issue_seconds(machine, shape, requested.source, kind, k_tiles, t, at.pipeline_stages));
      };
      const double row_flops = static_cast<double>(blocks * m) * shape.hidden * shape.inter;
      const double compute = stage_s(LoopKernel::gate_up, at.gate_up_tile, 4.0 * row_flops,
                                     ceil_div(shape.inter, at.gate_up_tile.n / 2), shape.hidden) +
                             stage_s(LoopKernel::down, at.down_tile, 2.0 * row_flops,
                                     ceil_div(shape.hidden, at.down_tile.n), shape.inter);
      const Candidate c{m, blocks * m, std::max(static_cast<double>(blocks) * expert_bytes / bw, compute)};
      table += fmt::format("{}M{}: {} blocks {:.1f} us", table.empty() ? "" : ", ", m, blocks,
                           c.seconds * 1e6);
      const bool tie = best && c.seconds <= best->seconds * 1.01 && best->seconds <= c.seconds * 1.01;
      if (!best || (!tie && c.seconds < best->seconds) || (tie && c.padded <= best->padded)) best = c;
    }
    k.block_m = best->m;
    why = fmt::format("block_m {} (lowest estimate, ties to fewer padded rows: {})",
                      k.block_m, table);
    // wgmma needs 64 rows; for 8-bit layers the M 64 wgmma tile streams the
    // weights faster than the M 32 mma.sync one even when most rows are padding.
    if (wgmma && dtype_bits(shape.dtype) == 8 && k.block_m < 64) {
      k.block_m = 64;
      why += "; raised to 64 (8-bit on wgmma kernels)";
    }
  }
  const KernelTile auto_tile = auto_tile_at(k.block_m);
  // An AITER gate/up tile, named or the default, is N per half
  // (model_gate_up_tile): the default names the same N for both stages.
  k.code = requested.source;
  k.gate_up_tile = model_gate_up_tile(requested.gate_up_tile.is_auto() ? auto_tile : requested.gate_up_tile,
                                      requested.source);
  k.down_tile = requested.down_tile.is_auto() ? auto_tile : requested.down_tile;
  why += fmt::format("; tiles {} / {}{}", tile_text(named_gate_up_tile(k)), tile_text(k.down_tile),
                     requested.gate_up_tile.is_auto() && requested.down_tile.is_auto()
                         ? " (default)" : "");

  // Pipeline depth: the machine's kernels' depth (kernels.pipeline_stages:
  // 2 by default, 3 for our H200 kernels, measured faster there), lowered
  // towards 2 while both stages' A and B buffers would not fit in the CU's LDS
  // (AITER's kernels: their LDS does not grow with the depth, so it is never
  // lowered; a tile that does not fit is refused by the run).
  // A wgmma loop runs with at least kWgmmaMinStages (the kernels raise it).
  const bool any_wgmma = wgmma_tile(machine, k.gate_up_tile, shape.dtype) ||
                         wgmma_tile(machine, k.down_tile, shape.dtype);
  const std::uint32_t min_stages = any_wgmma ? kWgmmaMinStages : 2;
  if (requested.pipeline_stages != 0) {
    k.pipeline_stages = std::max(requested.pipeline_stages, any_wgmma ? min_stages : 1u);
    why += fmt::format("; pipeline_stages {} (scenario{})", k.pipeline_stages,
                       k.pipeline_stages > requested.pipeline_stages ? ", raised for wgmma" : "");
  } else {
    const std::uint64_t lds = machine.compute.lds_per_cu.bytes;
    // AITER's kernels (runs_aiter_kernels) load the weights into registers
    // and hold the LDS that plan::aiter_gemm_resources reads off their
    // source, the figure the simulated program takes too; it does not grow
    // with the depth.
    // (The stage count is chosen below; the 2-stage kernels' tiles are checked.)
    const auto fits = [&](std::uint32_t depth) {
      const auto tile_lds = [&](const KernelTile& t, bool gate_up) -> std::uint64_t {
        if (aiter_kernels) {
          const std::uint64_t ck = aiter_gemm_resources(shape.dtype, shape.weight_dtype, k.block_m, t, gate_up,
                                                        aiter_lds_buffers(k.aiter_traits, gate_up, depth), lds)
                                       .lds_bytes;
          return gate_up ? aiter_gate_up_lds_share(ck, lds, k.aiter_traits.gate_up_workgroups_per_cu) : ck;
        }
        // A rows in the activation dtype, B rows in the weight dtype.
        return (std::uint64_t{t.m} * dtype_bits(shape.dtype) + std::uint64_t{t.n} * dtype_bits(shape.weight_dtype)) *
               t.k / 8 * depth;
      };
      return tile_lds(k.gate_up_tile, true) <= lds && tile_lds(k.down_tile, false) <= lds;
    };
    // The short-K bf16 default runs two workgroups per SM: 3 buffers.
    const bool short_k = wgmma && !ws && short_k_bf16(k.block_m, shape, rows_per_expert);
    const bool two_per_sm = short_k && requested.gate_up_tile.is_auto() && requested.down_tile.is_auto();
    // Decode layers (an expert's rows fit in one 16-row block on average) on
    // 16-row tiles over a long K loop (kDeepK tiles or more in either stage)
    // take one buffer more: their LDS still holds two workgroups per CU, and
    // a decode layer's few workgroups each need more bytes in flight to
    // stream their expert's weights (H200, tma-2026-11-30/decode: Mixtral
    // 1 and 16 tokens, 112 K tiles in down, 1.05x over 3 buffers; layers of
    // 16-22 K tiles lose 0-11%, so they keep the machine's depth; v14: the
    // forced 16-row tile at 4096 tokens, many blocks per expert, 0.86x).
    const std::uint32_t k_tiles_max = std::max(ceil_div(shape.hidden, k.gate_up_tile.k),
                                               ceil_div(shape.inter, k.down_tile.k));
    const bool deep = !any_wgmma && k.gate_up_tile.m == 16 && k.down_tile.m == 16 && k_tiles_max >= kDeepK &&
                      rows_per_expert <= 16.0;
    const std::uint32_t wanted = two_per_sm  ? kWgmmaMinStages
                                 : any_wgmma ? machine.kernels.wgmma_pipeline_stages
                                             : std::max(1u, machine.kernels.pipeline_stages) + (deep ? 1 : 0);
    k.pipeline_stages = wanted;
    while (k.pipeline_stages > min_stages && !fits(k.pipeline_stages)) --k.pipeline_stages;
    why += fmt::format("; pipeline_stages {} (machine kernels: {} {}{})", k.pipeline_stages,
                       two_per_sm ? "short-K wgmma tile, two per SM:"
                       : any_wgmma ? "wgmma_pipeline_stages"
                       : deep      ? "pipeline_stages + 1 for 16-row tiles over a long K,"
                                   : "pipeline_stages", wanted,
                       k.pipeline_stages < wanted ? ", lowered to fit LDS" : "");
  }

  // Stages: the fused 1-stage kernel only when this GPU's rows fit in two
  // blocks (with AITER's kernels, only for a format and block_m it has a
  // 1-stage kernel for). Each of its jobs scatter-adds a partial sum over its slice of I
  // into every H column of its rows, I / (N/2) times the output traffic of
  // the 2-stage kernel, which is cheap only for a handful of rows; in
  // exchange it saves a launch and the intermediate's round trip through
  // memory, which dominate at such sizes.
  if (requested.stages != 0) {
    k.stages = requested.stages;
    why += fmt::format("; {}-stage ({})", k.stages, fixed_by);
  } else if (machine.kernels.one_stage_blocks == 0) {
    k.stages = 2;
    why += "; 2-stage (this machine's kernels: kernels.one_stage_blocks 0)";
  } else if (requested.source == KernelCode::aiter &&
             !aiter_has_1stage_kernel(machine.isa, {shape.dtype, shape.quant, shape.weight_dtype})) {
    k.stages = 2;
    why += "; 2-stage (AITER ships no 1-stage kernel for this format on this GPU)";
  } else if (aiter_kernels && !aiter_one_stage_takes_block_m(machine.isa, shape, k.block_m)) {
    k.stages = 2;
    why += fmt::format("; 2-stage (AITER's 1-stage kernels for this format have no block_m {})", k.block_m);
  } else {
    const std::uint64_t blocks = machine.kernels.one_stage_blocks;
    const std::uint64_t limit = blocks * k.block_m;
    k.stages = local_rows <= limit ? 1 : 2;
    why += fmt::format("; {}-stage ({} local rows {} {}*block_m = {})", k.stages, local_rows,
                       k.stages == 1 ? "<=" : ">", blocks, limit);
  }

  // (After the stage count: AITER's 1-stage kernel is an assembly kernel,
  // with no CK pipeline; finish_plan notes the scenario's keys as not used.)
  const AiterKernelTraits& t = k.aiter_traits;
  if (requested.source == KernelCode::aiter && k.stages == 2 && (t.gate_up_lds_buffers != 0 || t.down_lds_buffers != 0)) {
    // From a table's kernel names, or the scenario's kernel.*_lds_buffers.
    const auto text = [](std::uint32_t b) {
      return b == 0 ? "LDS buffers by depth (no pipeline version given)" : b == 1 ? "v1 (1 LDS buffer)" : "v2/v3 (2 LDS buffers)";
    };
    why += fmt::format("; CK pipelines: gate/up {}, down {}", text(t.gate_up_lds_buffers), text(t.down_lds_buffers));
  }
  if (requested.source == KernelCode::aiter && k.stages == 2 && t.down_combine != DownCombine::machine) {
    // From a FlyDSL stage-2 kernel's name (a table's row), or kernel.down_combine.
    why += fmt::format("; down combine: {} ({})", down_combine_text(t.down_combine),
                       requested.down_combine != DownCombine::machine ? "kernel.down_combine"
                                                                      : "the FlyDSL kernel's mode");
  }
  if (requested.source == KernelCode::aiter && k.stages == 2 && t.gate_up_workgroups_per_cu != 0) {
    // From the assembly stage-1 kernel's name (a table's row: the spec
    // refuses the key beside kernel.config), or kernel.gate_up_workgroups_per_cu.
    why += requested.gate_up_workgroups_per_cu != 0
               ? fmt::format("; gate/up: {} workgroups a CU (kernel.gate_up_workgroups_per_cu)",
                             t.gate_up_workgroups_per_cu)
               : fmt::format("; gate/up: {} workgroups a CU (the assembly kernel's _{}tg)",
                             t.gate_up_workgroups_per_cu, t.gate_up_workgroups_per_cu);
  }

  // AITER-like kernels (`isa`): the 1-stage layer runs AITER's assembly
  // kernel's tile (aiter_one_stage_tile), not the 2-stage kernels' default.
  // (kernel.source aiter only: our own fused kernel keeps its default tile.)
  if (k.stages == 1 && aiter_kernels && requested.gate_up_tile.is_auto() && requested.down_tile.is_auto()) {
    k.gate_up_tile = k.down_tile = aiter_one_stage_tile(machine.isa, shape, k.block_m, cus);
    why += fmt::format("; tiles {} for the 1-stage kernel (AITER's assembly kernels{})",
                       tile_text(named_gate_up_tile(k)),
                       aiter_one_stage_takes_block_m(machine.isa, shape, k.block_m)
                           ? ""
                           : fmt::format("; none of block_m {} for this format: its widths taken", k.block_m));
  } else if (k.stages == 1 && aiter_kernels && !requested.gate_up_tile.is_auto() &&
             aiter_one_stage_asm_tile(k.gate_up_tile)) {
    // A named 1-stage kernel (a table row's kernelName1, or the scenario's
    // gate_up_tile 256 x block_m x subGU_n x K): its tile for both phases, as
    // the heuristic's kernel takes.
    k.down_tile = k.gate_up_tile;
    why += fmt::format("; tiles {} for the 1-stage kernel (named: AITER's assembly kernel of that subGU_m x subGU_n)",
                       tile_text(named_gate_up_tile(k)));
  }

  // The fused 1-stage kernel keeps a second phase's tiles in LDS as well: with
  // the wide wgmma default (128x256x64: 3 x 256 rows of down's slice plus the
  // fp32 tile, 334 KiB) that would not fit in an SM, so a 1-stage layer takes
  // the plain default tile there.
  if (k.stages == 1 && wgmma && requested.gate_up_tile.is_auto() && requested.down_tile.is_auto() &&
      k.gate_up_tile.n > 128) {
    k.gate_up_tile = k.down_tile = default_tile(k.block_m, shape.quant);
    why += fmt::format("; tiles {} for the 1-stage kernel", tile_text(k.gate_up_tile));
  }

  fit_amd_lds(shape, requested, machine, k, why);
  fit_aiter_lds(shape, requested, machine, k, why);

  // Split-K: the 1-stage kernel has none, nor AITER's assembly stage 1
  // (kernel.gate_up_workgroups_per_cu). Otherwise, when the gate/up grid
  // would occupy at most a quarter of the CUs, split K by the largest power
  // of two that fills them, at most 8 (each split adds a partial-sum
  // reduction). Never more splits than K tiles in a split stage, so no split
  // is empty. AITER's kernels split stage 1 only (KernelChoice::split_down).
  k.split_down = requested.source != KernelCode::aiter;
  const std::uint32_t k_tiles = k.split_down ? std::min(ceil_div(shape.hidden, k.gate_up_tile.k),
                                                        ceil_div(shape.inter, k.down_tile.k))
                                             : ceil_div(shape.hidden, k.gate_up_tile.k);
  const std::uint64_t grid = std::max<std::uint64_t>(
      1, gate_up_tiles(shape, rows, k.block_m, k.gate_up_tile));
  if (k.stages == 1) {
    k.split_k = 1;
    why += requested.split_k > 1 ? "; split_k 1 (the fused 1-stage kernel does not split K)"
                                 : "; split_k 1 (1-stage)";
  } else if (requested.split_k != 0) {
    k.split_k = std::min(requested.split_k, k_tiles);
    why += k.split_k == requested.split_k
               ? fmt::format("; split_k {} ({})", k.split_k, fixed_by)
               : fmt::format("; split_k {} ({} asked {}, limited to the {} K tiles)",
                             k.split_k, fixed_by, requested.split_k, k_tiles);
  } else if (requested.gate_up_workgroups_per_cu != 0) {
    // The key describes an assembly stage-1 kernel, which runs unsplit, as a
    // table row naming one does (a split_k above 1 beside it is refused).
    k.split_k = 1;
    why += "; split_k 1 (an assembly stage 1 runs unsplit: kernel.gate_up_workgroups_per_cu)";
  } else if (grid * 4 <= cus) {
    const auto fill = static_cast<std::uint32_t>(cus / grid);
    k.split_k = std::min({floor_pow2(fill), 8u, floor_pow2(k_tiles)});
    why += fmt::format("; split_k {} (gate/up grid {} <= {} CUs / 4)", k.split_k, grid, cus);
  } else {
    k.split_k = 1;
    why += fmt::format("; split_k 1 (gate/up grid {} > {} CUs / 4)", grid, cus);
  }
  assert(k.split_k >= 1);
  if (k.split_k > 1 && !k.split_down) why += " (stage 1 only, as AITER's kernels)";

  // Job order (rules::job_at): groups of blocks sweep the N tiles together,
  // so that an expert's weights are read from memory once per group rather
  // than once per block (H200, wgmma-2026-11-30/raster: Mixtral 4096 tokens
  // 1.07x, 16384 1.09x; layers of one or two blocks per expert unchanged).
  // The group is the smallest power of two that holds twice an expert's
  // blocks on average (1 where experts have one block): groups start anywhere in an expert's run of blocks,
  // and one that holds only the average splits most experts over two groups
  // (tma-2026-11-30/raster, the doubling over the previous rule: Mixtral
  // 1024 tokens 1.03x, 512 tokens 1.09x, gpt-oss-20b 1024 1.02x, six other
  // layers 0.99-1.00x). At most kMaxRasterGroup, and no larger than keeps the group's A
  // rows (block_m x the longer K of the two stages), re-read for every N
  // tile of the sweep, within half the last-level cache (L2, or the MALL
  // where there is one).
  if (requested.raster_group != 0) {
    k.raster_group = requested.raster_group;
    why += fmt::format("; raster_group {} (scenario)", k.raster_group);
  } else if (requested.source == KernelCode::aiter) {
    // AITER's kernels launch block-major grids: a block's N tiles one after
    // another (composable_kernel gridwise_moe_gemm.hpp: blockIdx.x the N
    // tile, blockIdx.y the block, as AITER's Nswizzle0 instances run; the
    // assembly 1-stage kernels: gdx = inter_dim / subGU_n, gdy = the blocks,
    // asm_fmoe.cu; CK-Tile's MoE flatmm through GemmSpatiallyLocalTilePartitioner
    // <.., 1, 1>, the M tile outer; FlyDSL's MoE kernels: blockIdx.x the N
    // tile, blockIdx.y the block; docs/moe-plan.md). The validation scripts
    // run the published rows so.
    k.raster_group = 1;
    why += "; raster_group 1 (AITER's kernels: block-major grids)";
  } else {
    const std::uint64_t l2 = std::uint64_t{machine.memory.l2.size_per_die.bytes} * machine.compute.dies;
    const std::uint64_t llc = machine.memory.mall ? std::max(l2, machine.memory.mall->size.bytes) : l2;
    const std::uint64_t a_bytes =
        std::uint64_t{k.block_m} * std::max(shape.hidden, shape.inter) * dtype_bits(shape.dtype) / 8;
    const std::uint64_t blocks = block_count(rows, k.block_m);
    const std::uint64_t per_expert = touched ? (blocks + touched - 1) / touched : 1;
    // Experts of one block (decode) share nothing across blocks: no groups.
    const std::uint64_t wanted_group = per_expert > 1 ? 2 * per_expert : 1;
    k.raster_group = 1;
    while (k.raster_group < kMaxRasterGroup && k.raster_group < wanted_group &&
           2 * k.raster_group * a_bytes <= llc / 2) {
      k.raster_group *= 2;
    }
    why += fmt::format("; raster_group {} ({} blocks per expert; A rows of a group <= 1/2 of the "
                       "{} MiB last-level cache)", k.raster_group, per_expert, llc >> 20);
  }
  k.reason = std::move(why);
  return k;
}

}  // namespace tdmsim::plan
