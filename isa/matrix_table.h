// Matrix-core instruction shapes and issue costs per instruction-set family,
// each with its source. The timing model (sim/) charges these per tile; the
// derived per-CU rates reproduce datasheet peaks (tested).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "workloads/specs/machine_spec.h"

namespace tdmsim::isa {

struct MatrixInstr {
  std::string_view name;
  std::uint32_t m, n, k;   // shape of one block
  std::uint32_t blocks;    // independent blocks per instruction
  DType operand;           // A/B operand dtype
  std::uint32_t cycles;    // issue cycles on one SIMD (sub-partition)
  std::string_view source; // where the cost comes from
  // FLOPs one instruction performs.
  constexpr std::uint64_t flops() const { return 2ull * m * n * k * blocks; }
};

std::span<const MatrixInstr> matrix_instructions(IsaFamily isa);

// The fastest dense instruction for an operand dtype, if the family has one.
std::optional<MatrixInstr> best_matrix_instr(IsaFamily isa, DType operand);

// Dense matrix FLOP per clock per CU (all SIMDs issuing the best instruction).
double matrix_flops_per_clock_per_cu(IsaFamily isa, DType operand, std::uint32_t simds_per_cu);

// Dense matrix peak of a whole machine in FLOP/s (0 when unsupported).
double peak_matrix_flops(const MachineSpec& m, DType operand);

// The instructions the machine's software kernels use (`kernels.matrix_instructions`):
// the ISA's table, or Hopper's mma.sync at measured rates (with `wgmma`, what
// the tiles without wgmma run; the wgmma loops are charged at the ISA's
// table). The timing model charges these; the physical floor keeps the ISA's peak.
std::span<const MatrixInstr> kernel_matrix_instructions(const MachineSpec& m);

// FLOP per clock of one SIMD (sub-partition) issuing the kernels' fastest
// instruction for `operand` (0 when none).
double kernel_matrix_flops_per_clock_per_simd(const MachineSpec& m, DType operand);

// The dtype the matrix pipes run for operands of `t` on this machine: `t`
// where the ISA has an instruction for it, else the operands are widened in
// registers (fp4 -> fp8 -> bf16), as kernels for such parts do.
DType matrix_dtype(const MachineSpec& m, DType t);

// The same for the machine's software kernels (`kernels:`): their matrix
// instructions, and fp8 converted to f16 where `kernels.fp8_operands` says so.
DType kernel_matrix_dtype(const MachineSpec& m, DType t);

}  // namespace tdmsim::isa
