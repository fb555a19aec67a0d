#include "isa/matrix_table.h"

namespace tdmsim::isa {
namespace {

constexpr std::string_view kCalc =
    "ROCm/amd_matrix_instruction_calculator matrix_calculator.py (CDNA3), via shared/hardware.md 2.6";
constexpr std::string_view kCdna4 =
    "DERIVED from CDNA4 per-CU peaks (4096 FLOP/clk FP16, 8192 FP8; ISSCC 2026 / AMD), hardware.md 2.6";
constexpr std::string_view kCdna4F8f6f4 =
    "ROCm blog 'Matrix Core Programming on AMD CDNA3 and CDNA4' (rocm.blogs.amd.com, 2025): "
    "f8f6f4 32x32x64 takes 32 cycles with fp4/fp6 operands, 64 if either is fp8; A and B "
    "formats independent; the scaled form applies E8M0 scales per 32 of K";
constexpr std::string_view kFnuz =
    "same MFMA as the row above: CDNA3's fp8 operands are E4M3FNUZ (ROCm blog 'Matrix Core "
    "Programming on AMD CDNA3 and CDNA4'); OCP fp8_e4m3 scenarios on CDNA3 are timed at this rate";
constexpr std::string_view kGfx1250 =
    "HYPOTHETICAL: 2x CDNA4 per-CU rate, chosen so mi455x matches AMD's 20 PF FP8 press figure";
constexpr std::string_view kHopper =
    "DERIVED: 989.4 TF dense BF16 / (132 SMs x 1.83 GHz) = 4096 FLOP/clk/SM (NVIDIA datasheet)";

// CDNA3 (gfx942): cycles are issue cycles on one SIMD; 4 SIMDs per CU.
constexpr MatrixInstr kCdna3[] = {
    {"v_mfma_f32_32x32x8_bf16", 32, 32, 8, 1, DType::bf16, 32, kCalc},
    {"v_mfma_f32_16x16x16_bf16", 16, 16, 16, 1, DType::bf16, 16, kCalc},
    {"v_mfma_f32_32x32x8_f16", 32, 32, 8, 1, DType::fp16, 32, kCalc},
    {"v_mfma_f32_16x16x16_f16", 16, 16, 16, 1, DType::fp16, 16, kCalc},
    {"v_mfma_f32_32x32x16_fp8_fp8", 32, 32, 16, 1, DType::fp8_e4m3, 32, kCalc},
    {"v_mfma_f32_16x16x32_fp8_fp8", 16, 16, 32, 1, DType::fp8_e4m3, 16, kCalc},
    {"v_mfma_f32_32x32x16_fp8_fp8 (e4m3 FNUZ)", 32, 32, 16, 1, DType::fp8_e4m3_fnuz, 32, kFnuz},
    {"v_mfma_f32_16x16x32_fp8_fp8 (e4m3 FNUZ)", 16, 16, 32, 1, DType::fp8_e4m3_fnuz, 16, kFnuz},
    {"v_mfma_f32_32x32x16_bf8_bf8", 32, 32, 16, 1, DType::fp8_e5m2, 32, kCalc},
    {"v_mfma_i32_32x32x16_i8", 32, 32, 16, 1, DType::int8, 32, kCalc},
    {"v_mfma_f32_32x32x2_f32", 32, 32, 2, 1, DType::fp32, 64, kCalc},
};

// CDNA4 (gfx950): new double-rate shapes; cycle counts derived from peaks.
constexpr MatrixInstr kCdna4Table[] = {
    {"v_mfma_f32_32x32x16_bf16", 32, 32, 16, 1, DType::bf16, 32, kCdna4},
    {"v_mfma_f32_16x16x32_bf16", 16, 16, 32, 1, DType::bf16, 16, kCdna4},
    {"v_mfma_f32_32x32x16_f16", 32, 32, 16, 1, DType::fp16, 32, kCdna4},
    {"v_mfma_f32_32x32x64_f8f6f4 (fp8)", 32, 32, 64, 1, DType::fp8_e4m3, 64, kCdna4},
    {"v_mfma_f32_16x16x128_f8f6f4 (fp8)", 16, 16, 128, 1, DType::fp8_e4m3, 32, kCdna4},
    {"v_mfma_f32_32x32x64_f8f6f4 (bf8)", 32, 32, 64, 1, DType::fp8_e5m2, 64, kCdna4},
    {"v_mfma_f32_32x32x64_f8f6f4 (fp4)", 32, 32, 64, 1, DType::mxfp4, 32, kCdna4F8f6f4},
    {"v_mfma_f32_16x16x128_f8f6f4 (fp4)", 16, 16, 128, 1, DType::mxfp4, 16, kCdna4F8f6f4},
    {"v_mfma_i32_32x32x32_i8", 32, 32, 32, 1, DType::int8, 32, kCdna4},
};

constexpr MatrixInstr kGfx1250Table[] = {
    {"matrix bf16 (assumed)", 32, 32, 32, 1, DType::bf16, 32, kGfx1250},
    {"matrix fp16 (assumed)", 32, 32, 32, 1, DType::fp16, 32, kGfx1250},
    {"matrix fp8 (assumed)", 32, 32, 128, 1, DType::fp8_e4m3, 64, kGfx1250},
    {"matrix bf8 (assumed)", 32, 32, 128, 1, DType::fp8_e5m2, 64, kGfx1250},
    {"matrix fp4 (assumed)", 32, 32, 128, 1, DType::mxfp4, 32, kGfx1250},
};

// Hopper: one SM sub-partition's share of a wgmma m64nNk16 (per-SM 4096 dense
// bf16 FLOP/clk, 8192 fp8), expressed as 16x16x16 steps per sub-partition.
constexpr MatrixInstr kHopperTable[] = {
    {"wgmma bf16 (per sub-partition step)", 16, 16, 16, 1, DType::bf16, 8, kHopper},
    {"wgmma fp16 (per sub-partition step)", 16, 16, 16, 1, DType::fp16, 8, kHopper},
    {"wgmma e4m3 (per sub-partition step)", 16, 16, 32, 1, DType::fp8_e4m3, 8, kHopper},
    {"wgmma e5m2 (per sub-partition step)", 16, 16, 32, 1, DType::fp8_e5m2, 8, kHopper},
    {"wgmma s8 (per sub-partition step)", 16, 16, 32, 1, DType::int8, 8, kHopper},
};

// Hopper's warp-level mma.sync, which our HIP kernels use on NVIDIA (no
// wgmma): rates MEASURED on the H200 with kernels/microbench/core_bench.hip
// (validation/data/h200/microbench/core.csv, 2026-11-29: bf16 and f16
// m16n8k16 624 TFLOP/s, e4m3 m16n8k32 1600 TFLOP/s at 32 warps per SM),
// expressed per sub-partition at the 1980 MHz clock as steps whose cycle
// counts are whole: 16x16x64 in 55 cycles (623 TF), e4m3 16x16x128 in 43.
constexpr std::string_view kMmaSync =
    "MEASURED: H200 mma.sync throughput, kernels/microbench/core_bench.hip (core.csv)";
constexpr MatrixInstr kHopperMmaSync[] = {
    {"mma.sync m16n8k16 bf16 (per sub-partition, 16x16x64)", 16, 16, 64, 1, DType::bf16, 55, kMmaSync},
    {"mma.sync m16n8k16 f16 (per sub-partition, 16x16x64)", 16, 16, 64, 1, DType::fp16, 55, kMmaSync},
    {"mma.sync m16n8k32 e4m3 (per sub-partition, 16x16x128)", 16, 16, 128, 1, DType::fp8_e4m3, 43, kMmaSync},
    {"mma.sync m16n8k32 e5m2 (per sub-partition, 16x16x128)", 16, 16, 128, 1, DType::fp8_e5m2, 43, kMmaSync},
};

std::optional<MatrixInstr> fastest(std::span<const MatrixInstr> table, DType operand) {
  std::optional<MatrixInstr> best;
  for (const auto& i : table) {
    if (i.operand != operand) continue;
    const double rate = static_cast<double>(i.flops()) / i.cycles;
    if (!best || rate > static_cast<double>(best->flops()) / best->cycles) best = i;
  }
  return best;
}

}  // namespace

std::span<const MatrixInstr> kernel_matrix_instructions(const MachineSpec& m) {
  // wgmma machines: mma.sync is what the tiles that cannot take wgmma run.
  if (m.kernels.matrix_instructions != MatrixInstructions::isa && m.isa == IsaFamily::hopper) {
    return kHopperMmaSync;
  }
  return matrix_instructions(m.isa);
}

double kernel_matrix_flops_per_clock_per_simd(const MachineSpec& m, DType operand) {
  const auto best = fastest(kernel_matrix_instructions(m), operand);
  return best ? static_cast<double>(best->flops()) / best->cycles : 0.0;
}

std::span<const MatrixInstr> matrix_instructions(IsaFamily isa) {
  switch (isa) {
    case IsaFamily::cdna3: return kCdna3;
    case IsaFamily::cdna4: return kCdna4Table;
    case IsaFamily::gfx1250: return kGfx1250Table;
    case IsaFamily::hopper: return kHopperTable;
  }
  return {};
}

std::optional<MatrixInstr> best_matrix_instr(IsaFamily isa, DType operand) {
  return fastest(matrix_instructions(isa), operand);
}

double matrix_flops_per_clock_per_cu(IsaFamily isa, DType operand, std::uint32_t simds_per_cu) {
  const auto best = best_matrix_instr(isa, operand);
  if (!best) return 0.0;
  return static_cast<double>(best->flops()) / best->cycles * simds_per_cu;
}

double peak_matrix_flops(const MachineSpec& m, DType operand) {
  return matrix_flops_per_clock_per_cu(m.isa, operand, m.compute.simds_per_cu) *
         m.compute.total_cus() * static_cast<double>(m.compute.clock.hz);
}

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

DType matrix_dtype(const MachineSpec& m, DType t) {
  return widened(t, [&](DType c) { return matrix_flops_per_clock_per_cu(m.isa, c, 1) > 0; });
}

DType kernel_matrix_dtype(const MachineSpec& m, DType t) {
  if (dtype_bits(t) == 8 && m.kernels.fp8_operands == Fp8Operands::f16) t = DType::fp16;
  return widened(t, [&](DType c) { return kernel_matrix_flops_per_clock_per_simd(m, c) > 0; });
}

}  // namespace tdmsim::isa
