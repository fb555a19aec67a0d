// The on-chip resources of AITER's MoE GEMM kernels, as their sources size
// them: one function read by the plan (whether a tile fits a CU, which
// pipeline depth to run) and by the simulator's tile programs (LDS and
// registers a workgroup holds, hence occupancy), so the two cannot disagree.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "workloads/specs/enums.h"
#include "workloads/specs/scenario_spec.h"
#include "descriptors/plan/moe_plan.h"

namespace tdmsim::plan {

// Whether a layer runs AITER's kernels as the simulator models them:
// kernel.source aiter on a machine whose kernels are AITER-like (ISA-table
// matrix instructions, the CDNA machines). Elsewhere kernel.source aiter
// runs our kernels (the simulator's Layer::mma_sync machines).
bool runs_aiter_kernels(const MachineSpec& machine, KernelCode source);

struct AiterGemmResources {
  std::uint32_t lds_bytes = 0;         // a workgroup's LDS
  std::uint32_t vgprs_per_thread = 0;  // CK's own register estimate, in 8-register granules
};

// AITER's 2-stage GEMM (CK's DeviceMoeGemm on GridwiseMoeGemm; FlyDSL's
// pre-shuffled kernels load B the same way). `tile` is the model's tile: a
// gate/up tile's N counts gate and up together (plan::model_gate_up_tile).
// `lds_buffers`: 1 (CK pipeline v1) or 2 (v2/v3); see aiter_lds_buffers.
// `lds_per_cu`: the machine's LDS per CU (compute.lds_per_cu), which picks the
// down kernel's C shuffle where AITER's sources differ (aiter_kernels.cpp).
AiterGemmResources aiter_gemm_resources(DType activation, DType weight, std::uint32_t block_m,
                                        const KernelTile& tile, bool gate_up, std::uint32_t lds_buffers,
                                        std::uint64_t lds_per_cu);

// The LDS buffers of a stage's AITER GEMM: what the table's kernel name says
// (`traits`), else 2 while the pipeline depth `stages` is 2 or more (the v3
// pipeline the model's depth stands for), 1 below. More stages never add LDS:
// the weights are double-buffered in registers whatever the depth.
std::uint32_t aiter_lds_buffers(const AiterKernelTraits& traits, bool gate_up, std::uint32_t stages);

// The LDS a workgroup of AITER's gate/up kernel holds when `per_cu` of them
// share a CU of `lds_per_cu` bytes (an assembly stage-1 kernel's _<N>tg,
// AiterKernelTraits::gate_up_workgroups_per_cu): CK's figure for the tile,
// at most the CU's share; CK's figure alone where per_cu is 0. The plan's
// depth check and the simulated program both take it.
inline std::uint64_t aiter_gate_up_lds_share(std::uint64_t ck_lds, std::uint64_t lds_per_cu, std::uint32_t per_cu) {
  return per_cu != 0 ? std::min(ck_lds, lds_per_cu / per_cu) : ck_lds;
}

// Threads of AITER's 1-stage assembly kernels (asm_fmoe.cu: bdx = 256), and
// the narrowest slice of the intermediate they take (subGU_n).
inline constexpr std::uint32_t kAiterOneStageThreads = 256;
inline constexpr std::uint32_t kAiterOneStageMinSubGuN = 128;

// One of AITER's 1-stage assembly kernels, as its kernel list gives it.
struct AiterOneStageKernel {
  std::uint32_t sub_gu_m = 32;          // sorted rows a workgroup takes (the layer's block_m)
  std::uint32_t sub_gu_n = 0;           // columns of the intermediate a workgroup takes
  std::uint32_t workgroups_per_cu = 1;  // tg_num_perCU: workgroups sharing a CU's registers
};

// The kernels AITER's 1-stage path has for a layer's format at block_m on a
// GPU, widest first (aiter_kernels.cpp gives the kernel lists they come
// from); where none is of subGU_m = block_m, all of the format's. Formats
// with no 1-stage kernel of their own there (bf16, ...; a tuned row may
// still say run_1stage) take the gfx950 fp8 block-scale list's.
std::vector<AiterOneStageKernel> aiter_one_stage_kernels(IsaFamily isa, const LayerShape& shape,
                                                        std::uint32_t block_m);

// Whether the format's 1-stage kernels include one of subGU_m = block_m (the
// per-token and MXFP4 kernels are all of 32 rows: "fmoe sorting kernel and
// fmoe kernel only support 32", asm_fmoe.cu). The project's heuristic runs
// AITER's kernels 2-stage at a block_m they have no 1-stage kernel for.
bool aiter_one_stage_takes_block_m(IsaFamily isa, const LayerShape& shape, std::uint32_t block_m);

// K of the model's tile for AITER's 1-stage assembly kernels: 128 bytes of
// activations a step (our choice: the assembly's K step is not published).
std::uint32_t aiter_one_stage_k(DType activation);

// The tile of AITER's 1-stage assembly kernel for a layer at block_m on a
// machine of `cus` CUs, as the model's tile (gate/up N counting both halves;
// aiter_kernels.cpp says how AITER picks it).
KernelTile aiter_one_stage_tile(IsaFamily isa, const LayerShape& shape, std::uint32_t block_m, std::uint32_t cus);

// Workgroups a CU holds of the 1-stage assembly kernel of `tile` (its kernel
// list's tg_num_perCU for that block_m and width; 1 for a width no list has).
std::uint32_t aiter_one_stage_workgroups_per_cu(IsaFamily isa, const LayerShape& shape, const KernelTile& tile);

// Whether a 1-stage tile is one of the assembly kernels' (256 threads,
// subGU_n of 128 or more), whose weights go to registers; other 1-stage tiles
// under kernel.source aiter run the generic fused program.
bool aiter_one_stage_asm_tile(const KernelTile& tile);

// AITER's 1-stage assembly kernels (256 x block_m x subGU_n x K): LDS for the
// token rows' K tiles alone, `stages` of them (the weights go to registers).
std::uint32_t aiter_one_stage_lds_bytes(DType activation, std::uint32_t block_m, const KernelTile& tile,
                                        std::uint32_t stages);

}  // namespace tdmsim::plan
