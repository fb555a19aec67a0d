// The main-loop instruction mix of our AMD CDNA GEMM kernels (kernels/moe/
// fused_moe.hip gemm_core, compiled by hipcc for gfx90a and gfx940), per
// wavefront and K tile, as the disassembly of their code objects counts it
// (scripts/amd-kernel-summary.py -> validation/data/amd/kernels-<target>.csv;
// the table is generated from those files at build time by
// scripts/gen-cdna-loop-mix.py), and the rule that maps a plan's tile onto a
// compiled instantiation (docs/moe-timing.md "CDNA main-loop issue").
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "workloads/specs/enums.h"

namespace tdmsim::plan {

// The code-object targets a summary is committed for.
enum class CdnaTarget { gfx90a, gfx940 };
std::string_view target_name(CdnaTarget t);

// Which of our GEMM kernels a loop is the main loop of.
enum class LoopKernel { gate_up, down, fused };

// Instructions one wavefront issues per main-loop iteration (one K tile),
// counted statically over the loop body (every path once), by category as
// amd-kernel-summary.py sorts them: MFMA, LDS reads and writes, vector-memory
// loads, other VALU, scalar (s_*: SALU, branches, s_waitcnt, s_nop), barriers;
// `instructions` is all of them.
struct LoopMix {
  std::uint32_t mfma = 0, ds_read = 0, ds_write = 0, vmem_load = 0, valu = 0, salu = 0, barrier = 0,
                instructions = 0;
  bool operator==(const LoopMix&) const = default;
};

// One compiled instantiation: kernel<T, BM, BN, BK, block_scaled, threads>.
struct CompiledLoop {
  CdnaTarget target;
  LoopKernel kernel;
  bool fp8;           // T = e4m3 (else bf16)
  std::uint32_t m, n, k;
  bool block_scaled;  // 128x128 block scales (block_128)
  std::uint32_t threads;
  bool fp8_mfma;      // its main loop multiplies e4m3 as it is (else bf16 MFMAs)
  LoopMix mix;
  std::uint32_t lds_static;  // its static LDS (__shared__ arrays), bytes
  std::string_view name;  // as the summary names it
};

// Whether a layer of this quantisation runs our block-scaled main loops (on
// AMD and NVIDIA): scales per K group (128x128 blocks, MX 1x32), applied to
// each group's partial products (`block_scaled` of CompiledLoop).
constexpr bool block_scaled(Quant q) { return q == Quant::block_128 || q == Quant::per_1x32; }

// Every 256-thread GEMM instantiation of every committed summary.
std::span<const CompiledLoop> compiled_loops();

// The summary our kernels on a machine of `isa` are charged from: cdna3
// (gfx942) -> gfx940, the MI300 instruction set LLVM 15 compiles; cdna4
// (gfx950, which LLVM 15 cannot compile) -> gfx940 as a stand-in; none for
// other families (gfx1250, Hopper: no code objects of ours are summarised).
std::optional<CdnaTarget> mix_target(IsaFamily isa);

// MFMAs one wavefront of our kernel issues per K tile of an m x n x k tile
// (amd-kernel-summary.py gemm_expectation: the 4 wavefronts' grid of
// plan::rules::warp_grid, 2 MFMAs per 16 x 16 fragment pair and 64 bytes of
// K; e4m3 multiplied as it is on gfx940 when k is a multiple of 64, else as
// bf16 after conversion).
std::uint32_t tile_mfmas(CdnaTarget t, bool fp8, std::uint32_t m, std::uint32_t n, std::uint32_t k);

// The mix charged for a plan tile: the compiled instantiation of the same
// target, kernel, operand type, block scaling and tile when there is one;
// otherwise the one of the same target, kernel, operand type and block
// scaling whose MFMA count per K tile is nearest (ratio), ties to the nearest
// tile shape, with every count scaled by the tile's MFMAs over its own
// (rounded). `from` is the instantiation used, `exact` whether it is the tile's.
struct MixChoice {
  LoopMix mix;
  const CompiledLoop* from = nullptr;
  bool exact = false;
};
std::optional<MixChoice> loop_mix(CdnaTarget t, LoopKernel kernel, bool fp8, bool block_scaled, std::uint32_t m,
                                  std::uint32_t n, std::uint32_t k);

// Whether `kernel` is compiled for this operand type, block scaling and tile
// (the tiles kernels/moe/fused_moe.hip with_tile instantiates).
bool compiled_tile(LoopKernel kernel, bool fp8, bool block_scaled, std::uint32_t m, std::uint32_t n, std::uint32_t k);

// LDS bytes one workgroup of our AMD kernel allocates: its static LDS (the
// compiled instantiation's, or the nearest one's as loop_mix picks it) plus
// the dynamic LDS its host code asks for (plan::rules::amd_gemm_lds_bytes;
// the fused kernel: the larger of its two phases).
std::uint32_t amd_kernel_lds_bytes(CdnaTarget t, LoopKernel kernel, bool fp8, bool block_scaled, std::uint32_t m,
                                   std::uint32_t n, std::uint32_t k, std::uint32_t stages);

}  // namespace tdmsim::plan
