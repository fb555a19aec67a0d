// Tuned kernel tables in AITER's CSV columns (aiter/configs/*fmoe*.csv:
// cu_num, token, model_dim, inter_dim, expert, topk, act_type, [dtype],
// q_dtype_a, q_dtype_w, q_type, [use_g1u1], [doweight_stage1], block_m,
// ksplit, kernelName1/kernelName2 or tile1/tile2, [run_1stage]; other columns
// such as us1, us2 are ignored), and AITER's lookup of a layer's row: the
// token count padded as fused_moe.py get_padded_M pads it, then an exact match
// of every key column (docs/moe-plan.md "Tuned kernel tables").
//
// A table is user input: a missing column, a bad number, a short row, two rows
// of one key with different values, or a file that cannot be read is a
// config::ConfigError naming the file, line and column.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "descriptors/plan/aiter_names.h"
#include "workloads/specs/scenario_spec.h"

namespace tdmsim::plan {

struct KernelConfigRow {
  int line = 0;  // 1-based line of the file
  std::uint32_t cu_num = 0, token = 0, model_dim = 0, inter_dim = 0, expert = 0, topk = 0;
  std::string act_type, dtype, q_dtype_a, q_dtype_w, q_type;  // dtype empty when the column is absent
  std::optional<bool> use_g1u1, doweight_stage1;               // absent columns: any
  std::uint32_t block_m = 0;
  std::uint32_t ksplit = 0;  // 0 = no split (AITER's value)
  std::string tile1, tile2;  // empty = AITER's default kernel for block_m
  int block_m_column = 0, tile1_column = 0, tile2_column = 0;
  bool run_1stage = false;
};

struct KernelConfigTable {
  std::string file;  // as given, for messages and outputs
  std::string tile1_name, tile2_name;  // the tile columns' names: tile1/tile2 or kernelName1/kernelName2
  std::vector<KernelConfigRow> rows;
};

// Parses `text` (the file's contents; `file` names it in messages).
KernelConfigTable parse_kernel_config(const std::string& text, const std::string& file);
// Reads `path` through util::read_input_file (InputKind::kernel_config).
KernelConfigTable read_kernel_config(const std::filesystem::path& path);

// fused_moe.py get_padded_M, the token count a tuned table is looked up with,
// as AITER's current fused_moe.py pads it (_PADDED_M_TIERS = [32768, 131072]):
// below 32768 the next power of two, 32768..131071 -> 32768, then 131072. The
// tuned tables' token counts (powers of two up to 32768) are these; older
// versions (ROCm/aiter 000621842c: 1024..2047 -> 1024, 2048..16383 -> 2048,
// then 16384) are documented in docs/moe-plan.md.
std::uint32_t aiter_padded_m(std::uint32_t tokens);

// The key a layer is looked up with, as fused_moe.py builds it.
struct KernelConfigQuery {
  std::uint32_t cu_num = 0;
  std::uint32_t tokens = 0;  // before padding
  std::uint32_t model_dim = 0, inter_dim = 0, expert = 0, topk = 0;
  std::string act_type, dtype;
  AiterFormat format;
  bool doweight_stage1 = false;
};

struct KernelConfigLookup {
  const KernelConfigRow* row = nullptr;  // the matching row, or none
  std::uint32_t padded_token = 0;
  // AITER skips its table for this layer (fused_moe.py get_2stage_cfgs use_cfg:
  // fp8 block-scale, SiLU, token * topk <= 128).
  bool bypassed = false;
  std::string detail;  // the key searched and why rows did not match (for --verbose and outputs)
  // The line of a matching row of block_m 0 (AITER's tuner found no kernel),
  // which is never used: tdmsim's choice (AITER would run block_m 0); 0: none.
  int no_kernel_line = 0;
};

KernelConfigLookup lookup_kernel_config(const KernelConfigTable& table, const KernelConfigQuery& q);

// A tile name of a table row as a tdmsim tile (docs/moe-plan.md "Tuned kernel tables"):
// "" -> auto (the heuristic's tile for block_m); THREADSxMxNxK as CK names its
// tiles (256x32x64x128, also inside moe_ck2stages_gemm1_256x32x64x128_... kernel
// names); MxN (assembly kernels, e.g. 16x128) and AITER's assembly stage-1
// kernels' names in the stage-1 column (fmoe_stage1_bf16_pertokenFp8_g1u1_64x128_2tg_pf3:
// tile_m x tile_n) -> 256 threads, that M and N, and the K of tdmsim's
// default tile for M in the row's format; FlyDSL's MoE kernels
// (flydsl_moe1_abf16_wfp4_bf16_t32x256x256, flydsl_moe2_..._t64x128x256_reduce:
// aiter/ops/flydsl, flydsl_kernel_name) in the column of their stage -> 256
// threads x tile_m x tile_n x tile_k, and a stage-2 kernel's combine mode;
// other kernel names (AITER's other assembly kernels) -> auto. `error` says
// why a name is none of these, or its M differs from block_m (tile empty then).
inline constexpr std::uint32_t kMaxTgPerCu = 16;  // the largest _<N>tg read (workgroups_per_cu)
struct AiterTileReading {
  KernelTile tile;      // auto for the default tile
  std::string reading;  // how the name was read (for `tdmsim config aiter-tile`)
  std::string error;    // non-empty: refused, and why
  bool assembly_stage1 = false;  // an assembly stage-1 kernel (aiter_asm_stage1_name)
  // The workgroups a CU holds of an assembly stage-1 kernel, as its name's
  // `_<N>tg` field says (AITER's kernel lists call it tg_num_perCU:
  // hsa/gfx942/fmoe/silu/fmoe_bf16_blockscaleFp8_g1u1_silu.csv gives it beside
  // names of the same field): 3 for fmoe_stage1_bf16_pertokenInt8_g1u1_32x128_3tg_pf3.
  // 0 for any other name, or one with no such field of 1 to kMaxTgPerCu.
  std::uint32_t workgroups_per_cu = 0;
  // The LDS buffers of the CK pipeline a CK kernel name gives: 1 for v1
  // (moe_ck2stages_gemm1_..._v1_...: composable_kernel's kernel_moe_gemm, one
  // LDS buffer), 2 for v2/v3 (kernel_moe_gemm_2lds); 0 for a name that says
  // none (THREADSxMxNxK, MxN, assembly, FlyDSL, empty, another version).
  std::uint32_t lds_buffers = 0;
  // How the down kernel a stage-2 name gives combines: a FlyDSL stage-2
  // kernel (flydsl_moe2_...) says it by its mode field: `reduce` (its rows
  // stored to a [tokens x top-k, H] buffer, then summed and copied:
  // aiter/ops/flydsl moe_kernels.py, accumulate = mode != "reduce") or
  // `atomic` (added into the output, as a name without a mode too: accumulate
  // defaults to True); machine (the machine's kernels.combine) for any other
  // name.
  DownCombine combine = DownCombine::machine;
};
// Whether a stage-1 name is one of AITER's assembly stage-1 kernels
// (fmoe_stage1_..., plain or mangled). fused_moe.py runs them unsplit: its
// asm_stage1 gets no ksplit (default 0), and AITER's tuner times them with 0,
// whatever the row's ksplit column holds (which is CK's split).
bool aiter_asm_stage1_name(std::string_view name);
AiterTileReading read_aiter_tile(std::string_view name, std::uint32_t block_m,
                                 const std::optional<AiterFormat>& format, bool second);

// A 1-stage row's kernel name (tile1 / kernelName1 with run_1stage 1): AITER's
// 1-stage assembly kernels (fused_moe.py fused_moe_1stage hands kernelName1 to
// fmoe_g1u1, fmoe_fp8_blockscale_g1u1, ...), named fmoe_<types>_g1u1_..._MxN
// (plain or mangled, e.g. fmoe_bf16_pertokenFp8_g1u1_vs_silu_1tg_ps_32x512):
// subGU_m x subGU_n -> the model's tile 256 threads x M x N (named N, as
// AITER names it) x aiter_one_stage_k. "" or a name with no such field ->
// auto (AITER's heuristic kernel, plan::aiter_one_stage_tile); M other than
// block_m -> error (AITER runs a kernel of subGU_m = block_m only).
bool aiter_one_stage_name(std::string_view name);
AiterTileReading read_aiter_one_stage_kernel(std::string_view name, std::uint32_t block_m,
                                             const std::optional<AiterFormat>& format);

// read_aiter_one_stage_kernel on a 1-stage row's stage-1 column; a refusal is a
// config::ConfigError at that column.
AiterTileReading aiter_one_stage_kernel_tile(const KernelConfigTable& table, const KernelConfigRow& row);

// read_aiter_tile on a table row's tile column (second: the stage-2 column):
// the tile and every trait its name gives; a refusal is a config::ConfigError
// at the row's tile column.
AiterTileReading read_row_tile(const KernelConfigTable& table, const KernelConfigRow& row, bool second);

// A row's block_m for kernels of `source` (valid_block_m: AITER's take any
// multiple of 16 the table holds, ours 16..256 in powers of two); otherwise a
// config::ConfigError at the row's block_m column.
void require_block_m_for(const KernelConfigTable& table, const KernelConfigRow& row, KernelCode source);

}  // namespace tdmsim::plan
