// AITER's default kernel choice (fused_moe.py get_2stage_cfgs, default branch).
// Facts from ROCm/aiter aiter/fused_moe.py at commit 000621842c; the code is
// ours.
#include "descriptors/plan/aiter_heuristic.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <tuple>

#include <fmt/core.h>

namespace tdmsim::plan {

std::uint32_t aiter_block_size_m(std::uint32_t token, std::uint32_t topk, std::uint32_t expert,
                                 std::uint32_t inter_dim, std::uint32_t cu_num) {
  const std::uint64_t tg_n = (std::uint64_t{inter_dim} + 127) / 128;  // tileN 128
  const std::uint64_t cus = std::max(1u, cu_num);
  std::tuple<std::uint64_t, std::uint64_t, std::uint32_t> best{UINT64_MAX, UINT64_MAX, 0};
  for (const std::uint32_t m : std::array<std::uint32_t, 3>{32, 64, 128}) {
    // moe_sorting's allocation bound: token*topk + expert*M - topk rows.
    const std::uint64_t rows = std::uint64_t{token} * topk + std::uint64_t{expert} * m - topk;
    // Python's `tgN * (rows + el - 1) // el` is (tgN * (rows + el - 1)) // el.
    const std::uint64_t tg_num = tg_n * (rows + m - 1) / m;
    const std::uint64_t rounds = (tg_num + cus - 1) / cus;
    const std::uint64_t empty = cus - tg_num % cus;
    // sorted() on (rounds, empty) is stable: ties keep the smaller M.
    if (std::make_tuple(rounds, empty) < std::make_tuple(std::get<0>(best), std::get<1>(best))) {
      best = {rounds, empty, m};
    }
  }
  return std::get<2>(best);
}

std::uint32_t aiter_ksplit(std::uint32_t token, std::uint32_t topk, std::uint32_t expert, std::uint32_t inter_dim,
                           std::uint32_t model_dim, std::uint32_t cu_num) {
  const std::uint64_t rows = std::uint64_t{token} * topk;
  if (rows > expert) return 0;
  const std::uint64_t tg_num = (std::uint64_t{inter_dim} + 127) / 128 * rows;
  if (tg_num == 0 || tg_num >= cu_num) return 0;
  const std::uint64_t split_max = (cu_num + tg_num - 1) / tg_num;
  for (std::uint64_t i = split_max; i >= 2; --i) {
    if (model_dim % i == 0 && (model_dim / i) % 256 == 0) return static_cast<std::uint32_t>(i);
  }
  return 0;
}

bool aiter_fp8(DType d) { return d == DType::fp8_e4m3 || d == DType::fp8_e4m3_fnuz; }

namespace {

// Whether fused_moe_1stage_dict[gfx] has the layer's (activation, q_type,
// dtype bf16 out, q_dtype_a, q_dtype_w, use_g1u1 True, doweight_stage1): the
// entries for formats tdmsim expresses. bf16 and fp16 entries there are
// use_g1u1 False (tdmsim's layers are gated), so never.
bool in_1stage_dict(const AiterLayer& l) {
  const bool silu = l.activation == Activation::silu, gelu = l.activation == Activation::gelu;
  const bool int8 = l.format.dtype == DType::int8 && l.format.weight_dtype == DType::int8;
  // gfx942 lists INT8 per-token (SiLU and GELU, g1u1, not doweight_stage1), as
  // fmoe_g1u1; gfx950 does not.
  if (int8) return l.isa == IsaFamily::cdna3 && l.format.quant == Quant::per_token && (silu || gelu) && !l.doweight_stage1;
  // Both list fp4 x fp4 per_1x32 (SiLU, g1u1, not doweight_stage1), as fmoe_g1u1.
  if (l.format.quant == Quant::per_1x32 && l.format.dtype == DType::mxfp4 && l.format.weight_dtype == DType::mxfp4) {
    return (l.isa == IsaFamily::cdna3 || l.isa == IsaFamily::cdna4) && silu && !l.doweight_stage1;
  }
  if (!aiter_fp8(l.format.dtype) || !aiter_fp8(l.format.weight_dtype)) return false;
  switch (l.isa) {
    case IsaFamily::cdna3:  // gfx942
      if (l.format.quant == Quant::per_token) return (silu || gelu) && !l.doweight_stage1;
      if (l.format.quant == Quant::block_128) return silu && !l.doweight_stage1;
      return false;
    case IsaFamily::cdna4:  // gfx950
      if (l.format.quant == Quant::per_token) return silu && l.doweight_stage1;
      if (l.format.quant == Quant::block_128) return silu && !l.doweight_stage1;
      return false;
    case IsaFamily::gfx1250:
    case IsaFamily::hopper: return false;  // no entry: AITER has no 1-stage kernel there
  }
  return false;
}

}  // namespace

bool aiter_has_1stage_kernel(IsaFamily isa, const AiterFormat& f) {
  const bool same = f.dtype == f.weight_dtype || (aiter_fp8(f.dtype) && aiter_fp8(f.weight_dtype));
  const bool fp8 = aiter_fp8(f.dtype) && same;
  const bool int8 = f.dtype == DType::int8 && same;
  switch (isa) {
    case IsaFamily::cdna3:  // gfx942: hsa/gfx942/fmoe (fmoe_g1u1, fmoe_fp8_blockscale_g1u1, fmoe_int8_g1u0)
      return (fp8 && (f.quant == Quant::per_token || f.quant == Quant::block_128)) ||
             (int8 && f.quant == Quant::per_token);
    // gfx950: the same, and the MXFP4 kernels (pertokenMXfp4). Those take X
    // in bf16 and quantise it to MXFP4 inside (xbf16), but fused_moe.py keys
    // them as fp4 x fp4 (fused_moe_1stage_dict: q_dtype_a fp4x2): a layer of
    // bf16 activations and MXFP4 weights (a16w4) runs AITER's 2-stage kernels,
    // which widen the weights to bf16 for bf16 MFMA (CK's F16xMXF4 flatmm,
    // FlyDSL's a16w4 GEMMs).
    case IsaFamily::cdna4:
      return (fp8 && (f.quant == Quant::per_token || f.quant == Quant::block_128)) ||
             (int8 && f.quant == Quant::per_token) ||
             (f.quant == Quant::per_1x32 && f.weight_dtype == DType::mxfp4 && f.dtype == DType::mxfp4);
    case IsaFamily::gfx1250:
    case IsaFamily::hopper: return false;
  }
  return false;
}

AiterChoice aiter_default(const AiterLayer& l, std::uint32_t stages) {
  AiterChoice c;
  std::string stage_why;
  if (stages != 0) {
    c.run_1stage = stages == 1;
    stage_why = "kernel.stages of the scenario";
  } else if (in_1stage_dict(l)) {
    if (l.format.quant == Quant::per_1x32) {
      // (the rule's branches set run_1stage for other quant types only)
      stage_why = "fused_moe_1stage_dict lists the MXFP4 kernel, but get_2stage_cfgs never runs per_1x32 1-stage";
    } else if (l.format.quant == Quant::block_128) {
      c.run_1stage = l.token > 32 && l.inter_dim % 256 == 0;
      stage_why = fmt::format("fp8 block-scale: 1-stage when token > 32 and inter_dim % 256 == 0 (token {}, "
                              "inter_dim {})", l.token, l.inter_dim);
    } else if (l.format.dtype == DType::int8) {
      c.run_1stage = l.token > 32;
      stage_why = fmt::format("int8 per-token: 1-stage when token > 32 (token {})", l.token);
    } else {  // per-token fp8
      c.run_1stage = l.token > 16;
      stage_why = fmt::format("fp8 per-token: 1-stage when token > 16 (token {})", l.token);
    }
  } else {
    stage_why = "no 1-stage kernel in fused_moe_1stage_dict for this format, activation and GPU";
  }
  const bool block_scale = l.format.quant == Quant::block_128, mx = l.format.quant == Quant::per_1x32;
  std::string block_why;
  if (c.run_1stage) {
    c.block_m = 32;  // BLOCK_SIZE_M
    block_why = "BLOCK_SIZE_M of the 1-stage kernel";
  } else if (block_scale) {
    c.block_m = l.token > 32 ? 64 : 16;
    block_why = "fp8 block-scale: 64 when token > 32, else 16";
  } else {
    c.block_m = aiter_block_size_m(l.token, l.topk, l.expert, l.inter_dim, l.cu_num);
    block_why = "get_block_size_M over {32, 64, 128}";
  }
  // get_ksplit for the 2-stage per_1x128 and per_1x32 layers.
  if (!c.run_1stage && (block_scale || mx)) {
    c.ksplit = aiter_ksplit(l.token, l.topk, l.expert, l.inter_dim, l.model_dim, l.cu_num);
  }
  // The MX (per_1x32) layers that get_2stage_cfgs hands to CK-Tile's MoE
  // kernels take their block_m from the token count instead: SwiGLU layers
  // (get_block_m: 32 for fp8 activations), and fp4-weight layers that split K
  // (weights pre-shuffled, as AITER's tuner and serving stacks load them).
  if (!c.run_1stage && mx) {
    const std::uint32_t tiers = l.token < 2048 ? 16 : l.token < 16384 ? 32 : 64;
    if (l.activation == Activation::swiglu_oai) {
      c.block_m = aiter_fp8(l.format.dtype) ? 32 : tiers;
      block_why = "CK-Tile's MoE kernels for SwiGLU MX layers (get_block_m: 32 for fp8 activations, else 16 "
                  "below 2048 tokens, 32 below 16384, 64)";
    } else if (l.format.weight_dtype == DType::mxfp4 && c.ksplit > 1) {
      c.block_m = tiers;
      block_why = "CK-Tile's MoE kernels for split-K fp4-weight layers (16 below 2048 tokens, 32 below 16384, 64)";
    }
  }
  c.reason = fmt::format("AITER's default (fused_moe.py get_2stage_cfgs): {}-stage ({}); block_m {} ({}); ksplit {} ({})",
                         c.run_1stage ? 1 : 2, stage_why, c.block_m, block_why, c.ksplit,
                         (block_scale || mx) && !c.run_1stage
                             ? "get_ksplit"
                             : "get_ksplit applies to 2-stage per_1x128 and per_1x32 layers only");
  return c;
}

}  // namespace tdmsim::plan
