// Our AMD kernels' LDS in the plan (docs/moe-plan.md "Kernel heuristic", item LDS on AMD): the
// heuristic picks only tiles and buffer counts that fit a workgroup's LDS
// on the machine; AITER's kernels keep the generic rule.
#include <catch2/catch.hpp>

#include "descriptors/plan/amd_kernels.h"
#include "descriptors/plan/kernel_rules.h"
#include "descriptors/plan/moe_plan.h"
#include "plan_test_util.h"

using namespace tdmsim;
using namespace tdmsim::plan;
using namespace tdmsim::plan::test;

namespace {

// Mixtral-8x7B-like prefill (8 experts, H 4096, I 14336), bf16: block_m 128.
LayerShape prefill() {
  LayerShape s;
  s.tokens = 8192;
  s.hidden = 4096;
  s.inter = 14336;
  s.experts_total = s.experts_local = 8;
  s.top_k = 2;
  return s;
}

std::uint32_t lds(const LayerShape& s, const KernelTile& t, LoopKernel kind, std::uint32_t depth) {
  return amd_kernel_lds_bytes(CdnaTarget::gfx940, kind, dtype_bits(s.dtype) <= 8, s.quant == Quant::block_128, t.m,
                              t.n, t.k, depth);
}

}  // namespace

TEST_CASE("our AMD kernels' LDS: padded rows, C tile, conversion buffer, static LDS", "[kernel][amd]") {
  // bf16 128x128x64, 3 buffers: 256 rows of 128 + 16 bytes x 3 = 110592 (the
  // C tile, 128 x 136 x 4 = 69632, fits in them), plus the code object's
  // 4416 bytes of static LDS (down_kernel<bf16, 128, 128, 64, ...>: 6208).
  CHECK(rules::amd_gemm_lds_bytes(128, 128, 64, 2, 3, false) == 110592);
  CHECK(rules::amd_gemm_lds_bytes(128, 128, 64, 2, 2, false) == 73728);
  CHECK(rules::amd_gemm_lds_bytes(128, 64, 64, 2, 1, false) == 128 * 72 * 4);  // the C tile
  // e4m3 32-byte K tiles are converted to bf16 even on gfx940: (m + n) rows of K + 8.
  CHECK(rules::amd_converts_fp8(1, 32, true));
  CHECK_FALSE(rules::amd_converts_fp8(1, 64, true));
  CHECK(rules::amd_converts_fp8(1, 64, false));
  CHECK(rules::amd_gemm_lds_bytes(32, 64, 32, 1, 2, true) == 2 * 96 * 48 + 96 * 40 * 2);
  CHECK(amd_kernel_lds_bytes(CdnaTarget::gfx940, LoopKernel::down, false, false, 128, 128, 64, 3) ==
        110592 + 6208);
}

TEST_CASE("on MI300X our kernels' heuristic tiles fit 64 KiB - AITER's keep theirs", "[kernel][amd]") {
  const LayerShape s = prefill();
  const MachineSpec m = shipped_machine("mi300x");
  KernelSpec ours = config::defaults<KernelSpec>();
  const KernelChoice k = choose_kernel(s, ours, m, round_robin(s));
  INFO(k.reason);
  REQUIRE(k.block_m == 128);
  CHECK(k.code == KernelCode::tdmsim);
  // 128x128x64 needs 73728 + 4416 bytes at 2 buffers (more than its C tile):
  // N halved to 64, compiled, 2 x 192 x 144 + its static LDS.
  CHECK(k.gate_up_tile == KernelTile{256, 128, 64, 64});
  CHECK(k.down_tile == KernelTile{256, 128, 64, 64});
  CHECK(k.pipeline_stages == 2);
  CHECK(lds(s, k.gate_up_tile, LoopKernel::gate_up, k.pipeline_stages) <= 65536);
  CHECK(lds(s, k.down_tile, LoopKernel::down, k.pipeline_stages) <= 65536);
  CHECK(k.reason.find("our AMD kernel's") != std::string::npos);

  KernelSpec aiter = ours;
  aiter.source = KernelCode::aiter;
  const KernelChoice a = choose_kernel(s, aiter, m, round_robin(s));
  CHECK(a.code == KernelCode::aiter);
  // AITER's default 256x128x128x64 names N per half: 128 of gate and 128 of up.
  CHECK(named_gate_up_tile(a) == KernelTile{256, 128, 128, 64});
  CHECK(a.gate_up_tile == KernelTile{256, 128, 256, 64});
  CHECK(a.down_tile == KernelTile{256, 128, 128, 64});
  CHECK(a.reason.find("our AMD kernel's") == std::string::npos);
}

TEST_CASE("our AMD kernels drop buffers before shrinking tiles, and keep a scenario's own", "[kernel][amd]") {
  const LayerShape s = prefill();
  // On MI355X (160 KiB) the default tile fits with 2 buffers.
  const MachineSpec m355 = shipped_machine("mi355x");
  const KernelChoice big = choose_kernel(s, config::defaults<KernelSpec>(), m355, round_robin(s));
  CHECK(big.gate_up_tile == KernelTile{256, 128, 128, 64});
  CHECK(lds(s, big.gate_up_tile, LoopKernel::gate_up, big.pipeline_stages) <= 160 * 1024);
  // A scenario's tile and depth are kept even when they do not fit (the run refuses them).
  KernelSpec fixed = config::defaults<KernelSpec>();
  fixed.gate_up_tile = fixed.down_tile = KernelTile{256, 128, 128, 64};
  fixed.pipeline_stages = 3;
  const KernelChoice f = choose_kernel(s, fixed, shipped_machine("mi300x"), round_robin(s));
  CHECK(f.gate_up_tile == KernelTile{256, 128, 128, 64});
  CHECK(f.pipeline_stages == 3);
  // A scenario's tile with the depth left open: the depth goes down to 2 first.
  KernelSpec tile_only = config::defaults<KernelSpec>();
  tile_only.gate_up_tile = tile_only.down_tile = KernelTile{256, 64, 128, 64};
  MachineSpec deep = shipped_machine("mi300x");
  deep.kernels.pipeline_stages = 4;
  const KernelChoice d = choose_kernel(s, tile_only, deep, round_robin(s));
  CHECK(d.gate_up_tile == KernelTile{256, 64, 128, 64});
  CHECK(d.pipeline_stages == 2);  // 192 x 144 x 3 + static > 64 KiB; x 2 fits
  CHECK(lds(s, d.gate_up_tile, LoopKernel::gate_up, 2) <= 65536);
  CHECK(lds(s, d.gate_up_tile, LoopKernel::gate_up, 3) > 65536);
}
