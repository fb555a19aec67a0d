// AITER's own choice of block size M, split-K and 1 vs 2 stages for a layer
// that its tuned table has no row for: the default branch of fused_moe.py
// get_2stage_cfgs with get_block_size_M and get_ksplit (ROCm/aiter,
// aiter/fused_moe.py, commit 000621842c). Scenario key kernel.heuristic: aiter
// selects it instead of the project's rule (kernel_heuristic.cpp); the two are
// compared in docs/moe-plan.md "AITER's heuristic".
#pragma once

#include <cstdint>
#include <string>

#include "descriptors/plan/aiter_names.h"

namespace tdmsim::plan {

struct AiterLayer {
  std::uint32_t token = 0;  // already padded (get_padded_M): AITER passes the padded count
  std::uint32_t model_dim = 0, inter_dim = 0;
  std::uint32_t expert = 0, topk = 0;  // fused: shared experts count as experts and picks
  std::uint32_t cu_num = 0;
  IsaFamily isa = IsaFamily::cdna3;  // cdna3 = gfx942, cdna4 = gfx950; others have no 1-stage entry
  AiterFormat format;
  Activation activation = Activation::silu;
  bool doweight_stage1 = false;
};

struct AiterChoice {
  std::uint32_t block_m = 32;
  std::uint32_t ksplit = 0;  // 0 = no split
  bool run_1stage = false;
  std::string reason;
};

// get_block_size_M: of M in {32, 64, 128}, the fewest rounds of
// ceil(inter_dim / 128) x ceil(max padded rows / M) workgroups over cu_num
// CUs, then the fewest idle CUs in the last round, then the smaller M.
std::uint32_t aiter_block_size_m(std::uint32_t token, std::uint32_t topk, std::uint32_t expert,
                                 std::uint32_t inter_dim, std::uint32_t cu_num);

// get_ksplit: 0 unless every routed row fits in its own expert (token x topk
// <= expert) and the decode grid ceil(inter_dim / 128) x token x topk leaves
// CUs idle; then the largest split in [2, ceil(cu_num / grid)] that divides
// model_dim into multiples of 256, else 0.
std::uint32_t aiter_ksplit(std::uint32_t token, std::uint32_t topk, std::uint32_t expert, std::uint32_t inter_dim,
                           std::uint32_t model_dim, std::uint32_t cu_num);

// AITER's choice for a layer: the stage count by its rule, then block_m and
// ksplit for that count. `stages` 1 or 2 (a scenario's kernel.stages): that
// count instead of the rule's, with the block_m and ksplit AITER takes for it
// (get_2stage_cfgs's branches after run_1stage is known).
AiterChoice aiter_default(const AiterLayer& l, std::uint32_t stages = 0);

// AITER's fp8 (its dtypes.fp8): e4m3 FNUZ on gfx942 (torch.float8_e4m3fnuz),
// OCP e4m3 on gfx950; a scenario of either flavour is its fp8 format.
bool aiter_fp8(DType d);

// Whether AITER ships a 1-stage (assembly fmoe_*) kernel for gated layers of
// this format on this GPU, whether or not its default dispatch runs it
// (ROCm/aiter csrc/py_itfs_cu/asm_fmoe.cu and the kernel lists under
// hsa/gfx942/fmoe and hsa/gfx950/fmoe): fp8 (FNUZ or OCP) per-token and
// 128x128 block-scale and int8 per-token on gfx942 and gfx950; MXFP4 on
// gfx950. None for bf16 (its fmoe is ungated only), fp8 per-tensor, MX fp8,
// fp8 x MXFP4, bf16 x MXFP4 (the MXFP4 kernel is keyed as fp4 x fp4),
// int4 with group scales (the fp8 x int4 fmoe is per-channel and GELU
// only), nor for other GPUs.
// The project's heuristic runs AITER's kernels 2-stage where there is none.
bool aiter_has_1stage_kernel(IsaFamily isa, const AiterFormat& f);

}  // namespace tdmsim::plan
