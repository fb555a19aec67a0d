#include "descriptors/plan/aiter_kernels.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "descriptors/plan/aiter_heuristic.h"

namespace tdmsim::plan {
namespace {

std::uint64_t bytes_of(std::uint64_t elems, DType t) { return (elems * dtype_bits(t) + 7) / 8; }

}  // namespace

// AITER's 2-stage MoE GEMMs are CK's DeviceMoeGemm instances
// (aiter csrc/ck_gemm_moe_2stages_codegen/gemm_moe_ck2stages_common.cuh, on
// composable_kernel's GridwiseMoeGemm, include/ck/tensor_operation/gpu/grid/
// gridwise_moe_gemm.hpp), read off their source:
// - The weights (B) are pre-shuffled in memory and loaded from it straight
//   into registers (the b_preshuffle block pipeline): LDS holds only the A
//   tile, block_m x K, and the C shuffle that stores the result, one buffer
//   the size of the larger (GetSharedMemoryNumberOfByte), two with the v2/v3
//   pipelines (kernel_moe_gemm_2lds; v1's kernel_moe_gemm has one). AITER's
//   own kernel names carry the version (..._v1_..., AiterTileReading::
//   lds_buffers in kernel_config.h); where no name says (the short tile names of the
//   MI355X calibration file, scenarios), the model's pipeline_stages (2 on
//   the AMD machines) stands for v3. Either way one figure for the plan and
//   the simulated program: MI300X's 256x128x64x64 down tile takes 64 KiB as
//   v3 (one workgroup a CU), 32 KiB as v1 (two).
// - The C shuffle is fp32 (CShuffleDataType F32) with the 1 x waves layout of
//   the 16x16 XDL instances: gate/up shuffles 2 XDL rows of 16 by each wave's
//   16 columns a step (CShuffle MXdlPerWavePerShuffle 2, N 1), down all
//   block_m rows by each wave's 16 columns (MXdlPerWave, 1), except where that
//   does not fit the CU: AITER's earlier source shuffled down 2 XDL rows at a
//   time too (CShuffleMXDLPerWave 2), and its gfx942 instance lists
//   (gemm_moe_ck2stages_common.py, a16w16_gemm2_kernels_list and
//   a8w8_gemm2_kernels_list) build 256-row v3 down kernels, which compile for
//   MI300X's 64 KiB only with that shuffle (256 rows would take 2 x 64 KiB).
//   So down takes block_m rows where a tile's v3 instance holds them, else
//   2 XDL rows, for its v1 and v3 alike; every tile of the calibration rows
//   keeps block_m rows, the figure the fits used. (CK needs the shuffle's
//   XDL rows to divide the wave's, so a block_m of an odd count of 16 rows,
//   48 or 80, would shuffle 1 row at a time; where the A tile is the larger
//   part, as with the default tiles, the LDS figure is the same.)
// - Registers: CK's own estimate (device_moe_gemm.hpp estimated_reg_total,
//   from which it sets the kernel's minimum occupancy): A's block_m x K bytes
//   / threads / 4 x (1 + NWave), B's NPerBlock x K bytes / threads / 4 x 2
//   (double-buffered) x 2 for gate and up, C's block_m x NPerBlock fp32 /
//   threads / 4 x 2 for gate and up; NWave = the tile's waves (threads / 64);
//   NPerBlock = the tile name's N, half the model's gate/up N
//   (plan::named_gate_up_tile: a gate/up workgroup takes NPerBlock columns
//   of gate and as many of up). Bytes of packed 4-bit weights count as bytes
//   (CK's sizeof of a packed pair is 1 per pair). Rounded up to the
//   8-register allocation granule (AMD CDNA3 ISA, "VGPR allocation").
// FlyDSL's MoE kernels (aiter/ops/flydsl), the other 2-stage kernels of
// AITER's tables, load pre-shuffled weights the same way
// (kernels/mfma_preshuffle_pipeline load_b_pack_k32; token rows through LDS).
bool runs_aiter_kernels(const MachineSpec& machine, KernelCode source) {
  return source == KernelCode::aiter && machine.kernels.matrix_instructions == MatrixInstructions::isa;
}

std::uint32_t aiter_lds_buffers(const AiterKernelTraits& traits, bool gate_up, std::uint32_t stages) {
  const std::uint32_t named = gate_up ? traits.gate_up_lds_buffers : traits.down_lds_buffers;
  if (named != 0) return named;
  return stages >= 2 ? 2 : 1;
}

AiterGemmResources aiter_gemm_resources(DType activation, DType weight, std::uint32_t block_m,
                                        const KernelTile& tile, bool gate_up, std::uint32_t lds_buffers,
                                        std::uint64_t lds_per_cu) {
  constexpr std::uint64_t kWave = 64, kXdl = 16, kFp32 = 4;
  const std::uint64_t threads = std::max<std::uint64_t>(kWave, tile.threads);
  const std::uint64_t waves = threads / kWave;
  const std::uint64_t a_tile = std::uint64_t{block_m} * bytes_of(tile.k, activation);
  const std::uint64_t buffers = std::clamp<std::uint32_t>(lds_buffers, 1, 2);
  const auto c_shuffle_of = [&](std::uint64_t rows) { return rows * waves * kXdl * kFp32; };
  const std::uint64_t two_xdl_rows = std::min<std::uint64_t>(block_m, 2 * kXdl);
  // Down: block_m rows where the tile's v3 instance (two buffers) holds them,
  // else the earlier source's 2 XDL rows; the same for v1 and v3 of a tile,
  // as both are built from one source.
  std::uint64_t c_shuffle = c_shuffle_of(gate_up ? two_xdl_rows : block_m);
  if (!gate_up && 2 * std::max(a_tile, c_shuffle) > lds_per_cu) c_shuffle = c_shuffle_of(two_xdl_rows);
  const std::uint64_t halves = gate_up ? 2 : 1;
  const std::uint64_t n_per_block = tile.n / halves;
  const std::uint64_t b_tile = n_per_block * bytes_of(tile.k, weight);
  const std::uint64_t regs = a_tile / threads / 4 * (1 + waves) + b_tile / threads / 4 * 2 * halves +
                             std::uint64_t{block_m} * n_per_block * kFp32 / threads / 4 * halves;
  AiterGemmResources r;
  r.lds_bytes = static_cast<std::uint32_t>(std::min<std::uint64_t>(buffers * std::max(a_tile, c_shuffle), UINT32_MAX));
  // Not capped at the 512 registers a wave can address: a tile whose estimate
  // is beyond them is one no CU holds, and the fit check refuses it so.
  r.vgprs_per_thread = static_cast<std::uint32_t>(std::clamp<std::uint64_t>((regs + 7) / 8 * 8, 8, UINT32_MAX / 8 * 8));
  return r;
}

std::uint32_t aiter_one_stage_lds_bytes(DType activation, std::uint32_t block_m, const KernelTile& tile,
                                        std::uint32_t stages) {
  const std::uint64_t bytes = std::uint64_t{block_m} * bytes_of(tile.k, activation) * std::max(1u, stages);
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(bytes, UINT32_MAX));
}

// AITER's 1-stage fused MoE kernels (its assembly fmoe_* kernels, launched by
// csrc/py_itfs_cu/asm_fmoe.cu): a workgroup of 256 threads (bdx) takes
// subGU_m = block_m sorted rows and subGU_n columns of the intermediate: gate
// and up over all of H, the activation, then its subGU_n-wide slice through
// w_down into every H column, added atomically into the tokens' output rows.
// The grid is inter / subGU_n x sub_X_cnt, sub_X_cnt being the length of the
// sorted expert-id buffer (aiter/fused_moe.py moe_sorting: the padded maximum
// of blocks, rows + experts x block_m - top-k over block_m, the model's
// experts under expert parallelism: global_E). Among the
// format's kernels of subGU_m = block_m (get_heuristic_kernel requires it)
// whose width divides inter, get_heuristic_kernel (kernel lists) and
// get_heuristic_tile (fixed width lists) take the one with the fewest rounds
// of workgroups over the CUs, then the fewest idle CUs in the last round (a
// distinct pair for each width); the narrowest width where none divides
// (AITER refuses the layer). fmoe_g1u1_tkw1 (weights applied in stage 1)
// counts its rounds on ceil(rows / 32) blocks instead of sub_X_cnt. As the
// model's tile: 256 x block_m x 2 subGU_n (gate and up) x K of 128 bytes of
// operands; named_gate_up_tile shows it as AITER names it, N = subGU_n.
//
// subGU_m x subGU_n (workgroups a CU, tg_num_perCU), from ROCm/aiter:
// - fp8 per-token or per-tensor and int8 per-token (fmoe_g1u1, which picks
//   its kernels by the input's dtype; fmoe_g1u1_tkw1): 32 x 128 to 32 x 512
//   in steps of 64, one a CU (hsa/gfx942/fmoe/fmoe_bf16_pertokenFp8_g1u1_silu.csv
//   at efd21eb, hsa/gfx950/fmoe/silu/fmoe_bf16_pertokenFp8_g1u1_silu.csv and
//   ..._pertokenInt8_g1u1_silu.csv at 3486755 and 4100225: every kernel
//   "1tg"; asm_fmoe.cu's fixed lists {512, 448, ..., 128}).
// - fp8 128x128 block-scale (fmoe_fp8_blockscale_g1u1): gfx942 32 x 128,
//   32 x 256 and 64 x 256, one a CU
//   (hsa/gfx942/fmoe/silu/fmoe_bf16_blockscaleFp8_g1u1_silu.csv at 05ddabb);
//   gfx950 32 x 128 at two a CU and 32 x 256 at one
//   (hsa/gfx950/fmoe/silu/fmoe_bf16_blockscaleFp8_g1u1_silu.csv at 55b3314;
//   the list at 3486755 had 32 x 256 alone).
// - MXFP4 weights, gfx950 (fmoe_g1u1's fp4 branch, widths {512, 256}; bf16
//   activations only where a 1-stage run is forced: fused_moe.py keys the
//   kernel as fp4 x fp4, though it quantises bf16 X itself;
//   hsa/gfx950/fmoe/silu/fmoe_bf16_pertokenMXfp4_g1u1_silu.csv: 32 x 256
//   "2tg", 32 x 512 "1tg").
// Formats with no kernel list of their own take gfx950's block-scale one; a
// block_m no kernel of the format has takes the format's widths all the same.
namespace {

// Every 1-stage kernel of the layer's format on the GPU, of any subGU_m.
std::vector<AiterOneStageKernel> format_one_stage_kernels(IsaFamily isa, const LayerShape& shape) {
  const AiterFormat f{shape.dtype, shape.quant, shape.weight_dtype};
  const bool gfx9 = isa == IsaFamily::cdna3 || isa == IsaFamily::cdna4;
  const bool fp8 = aiter_fp8(f.dtype) && aiter_fp8(f.weight_dtype);
  const bool int8 = f.dtype == DType::int8 && f.weight_dtype == DType::int8;
  std::vector<AiterOneStageKernel> list;
  if (gfx9 && ((fp8 && (f.quant == Quant::per_token || f.quant == Quant::per_tensor)) ||
               (int8 && f.quant == Quant::per_token))) {
    list = {{32, 512, 1}, {32, 448, 1}, {32, 384, 1}, {32, 320, 1}, {32, 256, 1}, {32, 192, 1}, {32, 128, 1}};
  } else if (isa == IsaFamily::cdna3 && fp8 && f.quant == Quant::block_128) {
    list = {{32, 256, 1}, {64, 256, 1}, {32, 128, 1}};
  } else if (isa == IsaFamily::cdna4 && f.weight_dtype == DType::mxfp4 && f.quant == Quant::per_1x32 &&
             (f.dtype == DType::mxfp4 || f.dtype == DType::bf16)) {
    list = {{32, 512, 1}, {32, 256, 2}};
  } else {  // gfx950's block-scale list: its own, and the fallback
    list = {{32, 256, 1}, {32, 128, 2}};
  }
  return list;
}

}  // namespace

std::vector<AiterOneStageKernel> aiter_one_stage_kernels(IsaFamily isa, const LayerShape& shape,
                                                        std::uint32_t block_m) {
  const std::vector<AiterOneStageKernel> list = format_one_stage_kernels(isa, shape);
  std::vector<AiterOneStageKernel> at_m;
  for (const AiterOneStageKernel& k : list) {
    if (k.sub_gu_m == block_m) at_m.push_back(k);
  }
  return at_m.empty() ? list : at_m;
}

bool aiter_one_stage_takes_block_m(IsaFamily isa, const LayerShape& shape, std::uint32_t block_m) {
  const std::vector<AiterOneStageKernel> list = format_one_stage_kernels(isa, shape);
  return std::any_of(list.begin(), list.end(), [&](const AiterOneStageKernel& k) { return k.sub_gu_m == block_m; });
}

KernelTile aiter_one_stage_tile(IsaFamily isa, const LayerShape& shape, std::uint32_t block_m, std::uint32_t cus) {
  const std::uint64_t rows = std::uint64_t{shape.tokens} * shape.slots();
  // fused_moe.py fused_moe_1stage takes fmoe_g1u1_tkw1 for QuantType.per_Token
  // with doweight_stage1 alone (per-tensor runs fmoe_g1u1).
  const bool tkw1 = shape.weight_on_input && shape.quant == Quant::per_token;
  // Under expert parallelism the sort is sized on every expert of the model
  // (fused_moe.py: global_E = expert_mask.numel()), not the GPU's own. The
  // logical experts: redundant EPLB copies, which a serving engine's mask
  // also counts (vLLM adds one more entry), are left out.
  const std::uint64_t sorted_experts = std::uint64_t{shape.experts_total} + shape.shared;
  const std::uint64_t sub_x = tkw1 ? (rows + 31) / 32
                                   : (rows + sorted_experts * block_m - shape.slots() + block_m - 1) / block_m;
  const std::vector<AiterOneStageKernel> kernels = aiter_one_stage_kernels(isa, shape, block_m);
  std::uint32_t width = kernels.back().sub_gu_n;
  std::optional<std::pair<std::uint64_t, std::uint64_t>> best;
  for (const AiterOneStageKernel& kl : kernels) {
    if (shape.inter % kl.sub_gu_n != 0) continue;
    const std::uint64_t tgs = shape.inter / kl.sub_gu_n * sub_x;
    const std::uint64_t rounds = (tgs + cus - 1) / cus;
    const std::pair<std::uint64_t, std::uint64_t> key{rounds, rounds * cus - tgs};
    if (!best || key < *best) {
      best = key;
      width = kl.sub_gu_n;
    }
  }
  return {kAiterOneStageThreads, block_m, 2 * width, aiter_one_stage_k(shape.dtype)};
}

std::uint32_t aiter_one_stage_k(DType activation) {
  return std::max(32u, 128u * 8 / std::max(1u, dtype_bits(activation)));
}

std::uint32_t aiter_one_stage_workgroups_per_cu(IsaFamily isa, const LayerShape& shape, const KernelTile& tile) {
  for (const AiterOneStageKernel& kl : aiter_one_stage_kernels(isa, shape, tile.m)) {
    if (2 * kl.sub_gu_n == tile.n) return kl.workgroups_per_cu;
  }
  return 1;
}

bool aiter_one_stage_asm_tile(const KernelTile& tile) {
  return tile.threads == kAiterOneStageThreads && tile.n >= 2 * kAiterOneStageMinSubGuN;
}

}  // namespace tdmsim::plan
