// AITER's 1-stage assembly kernels on AMD machines (docs/moe-timing.md "AITER's
// 1-stage kernels and the combine"): the plan picks their tile by AITER's
// rule, the workgroups per CU follow their kernel lists' tg_num_perCU, and the
// combine adds one H-wide row per routed row and intermediate slice.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "descriptors/plan/aiter_kernels.h"
#include "descriptors/plan/moe_plan.h"
#include "sim/cu/compute_unit.h"
#include "sim/programs/moe_kernels.h"
#include "workloads/config/loader.h"
#include "tests/sim/shipped_inputs.h"

namespace {

using tdmsim::test::source_scenario;

using namespace tdmsim;
namespace fs = std::filesystem;

const isa::KernelLaunch& fused_of(const sim::programs::MoeKernels& k) {
  for (std::size_t i = 0; i < k.stage.size(); ++i) {
    if (k.stage[i] == "fused") return k.kernels[i];
  }
  throw std::runtime_error("no fused kernel");
}

}  // namespace

TEST_CASE("AITER 1-stage tile: subGU_n by fewest rounds over the CUs, 256 when it divides I", "[moe][aiter]") {
  // DeepSeek-V3 TP8 (I 256), 32 tokens, block_m 32: 256 divides I and needs
  // half the workgroups of 128, so 256 x 32 x (2 x 256) x 128 bytes of e4m3.
  const auto sc = source_scenario("tests/data/aiter/one-stage-dsv3-tp8-mi355x.yaml");
  const plan::MoePlan p = plan::build_plan(sc);
  REQUIRE(p.kernel.stages == 1);
  CHECK(p.kernel.gate_up_tile == KernelTile{256, 32, 512, 128});
  // One job per block and slice of 256: I / 256 = 1 slice.
  CHECK(p.stage1.size() == p.layout.block_expert.size());
}

TEST_CASE("AITER 1-stage tile: 128 where 256 does not divide I - K of 128 bytes", "[moe][aiter]") {
  // Qwen3-235B TP4 (I 384), bf16: 384 % 256 != 0, so 128 (3 slices), K 64 bf16.
  const auto sc = source_scenario("tests/data/aiter/one-stage-qwen3-tp4-mi355x.yaml");
  const plan::MoePlan p = plan::build_plan(sc);
  CHECK(p.kernel.gate_up_tile == KernelTile{256, 32, 256, 64});
  CHECK(p.stage1.size() == 3 * p.layout.block_expert.size());
}

TEST_CASE("our kernels' 1-stage layers keep the 2-stage default tile", "[moe][aiter]") {
  const auto sc = source_scenario("tests/data/aiter/one-stage-h200.yaml");
  const plan::MoePlan p = plan::build_plan(sc);
  CHECK(p.kernel.gate_up_tile.n == 64);
}

TEST_CASE("our kernels' 1-stage layers on MI355X keep our default tile (kernel.source tdmsim)", "[moe][aiter]") {
  auto sc = source_scenario("tests/data/aiter/one-stage-dsv3-tp8-mi355x.yaml");
  sc.scenario.spec.kernel.source = KernelCode::tdmsim;
  const plan::MoePlan p = plan::build_plan(sc);
  REQUIRE(p.kernel.stages == 1);
  CHECK(p.kernel.gate_up_tile == plan::default_tile(32, Quant::block_128));
}

TEST_CASE("AITER 1-stage kernels: tg_num_perCU workgroups per CU, the combine one row per slice", "[moe][aiter]") {
  for (const char* machine : {"mi355x", "mi300x"}) {
    for (const auto& [file, per_cu] : {std::pair{"tests/data/aiter/one-stage-dsv3-tp8-mi355x.yaml", 1u},
                                       std::pair{"tests/data/aiter/one-stage-qwen3-tp4-mi355x.yaml", 2u}}) {
      const auto sc = source_scenario(file, machine);
      const plan::MoePlan p = plan::build_plan(sc);
      sim::AddressSpace as;
      const auto k = sim::programs::software_moe(as, p, sc.machine.spec);
      const isa::KernelLaunch& fused = fused_of(k);
      const isa::TileProgram prog = fused.program(0);
      const sim::Occupancy o = sim::occupancy(sc.machine.spec.compute, prog);
      INFO(machine << " " << file);
      CHECK(o.workgroups == per_cu);
      CHECK(o.limiter == "registers");
      // The combine: every real row of the job's block adds a full H-wide bf16 row.
      REQUIRE(!prog.stores.empty());
      const auto& out = prog.stores.back();
      CHECK(out.atomic);
      CHECK(out.row_bytes == sc.model.spec.hidden_size * 2);
    }
  }
}

namespace {

plan::LayerShape aiter_shape(std::uint32_t tokens, std::uint32_t hidden, std::uint32_t inter, std::uint32_t experts,
                             std::uint32_t top_k, DType dtype, Quant quant, DType weight) {
  plan::LayerShape s;
  s.tokens = tokens;
  s.hidden = hidden;
  s.inter = inter;
  s.experts_total = s.experts_local = experts;
  s.top_k = top_k;
  s.dtype = dtype;
  s.quant = quant;
  s.weight_dtype = weight;
  return s;
}

}  // namespace

TEST_CASE("AITER 1-stage widths follow each format's kernel list", "[moe][aiter]") {
  using D = DType;
  using Q = Quant;
  const auto widths = [](IsaFamily isa, const plan::LayerShape& s, std::uint32_t block_m = 32) {
    std::vector<std::pair<std::uint32_t, std::uint32_t>> w;
    for (const auto& k : plan::aiter_one_stage_kernels(isa, s, block_m)) w.emplace_back(k.sub_gu_n, k.workgroups_per_cu);
    return w;
  };
  using W = std::vector<std::pair<std::uint32_t, std::uint32_t>>;
  const W per_token{{512, 1}, {448, 1}, {384, 1}, {320, 1}, {256, 1}, {192, 1}, {128, 1}};
  // fp8 and int8 per-token (fmoe_g1u1): 128-512 in steps of 64, one a CU, on both GPUs.
  CHECK(widths(IsaFamily::cdna3, aiter_shape(1, 4096, 384, 128, 8, D::fp8_e4m3_fnuz, Q::per_token, D::fp8_e4m3_fnuz)) ==
        per_token);
  CHECK(widths(IsaFamily::cdna4, aiter_shape(1, 4096, 384, 128, 8, D::int8, Q::per_token, D::int8)) == per_token);
  // fp8 block-scale: gfx942 lists 32x128 at one workgroup a CU, gfx950 at two.
  const auto block = aiter_shape(1, 7168, 256, 256, 8, D::fp8_e4m3, Q::block_128, D::fp8_e4m3);
  CHECK(widths(IsaFamily::cdna3, block) == W{{256, 1}, {128, 1}});
  CHECK(widths(IsaFamily::cdna4, block) == W{{256, 1}, {128, 2}});
  // gfx942 has a 64-row block-scale kernel, 64x256, alone at block_m 64.
  CHECK(widths(IsaFamily::cdna3, block, 64) == W{{256, 1}});
  // A block_m no kernel of the format has: all of its widths (AITER has none).
  CHECK(widths(IsaFamily::cdna4, block, 64) == W{{256, 1}, {128, 2}});
  // MXFP4 weights on gfx950: 32x512 at one a CU, 32x256 at two.
  CHECK(widths(IsaFamily::cdna4, aiter_shape(1, 2880, 2880, 128, 4, D::bf16, Q::per_1x32, D::mxfp4)) ==
        W{{512, 1}, {256, 2}});
  // No kernel list of its own (bf16): gfx950's block-scale list.
  CHECK(widths(IsaFamily::cdna3, aiter_shape(1, 4096, 384, 128, 8, D::bf16, Q::none, D::bf16)) ==
        W{{256, 1}, {128, 2}});
}

TEST_CASE("AITER 1-stage tile: the per-token kernels' widths by fewest rounds, then fewest idle CUs", "[moe][aiter]") {
  const auto fp8 = [](std::uint32_t tokens, std::uint32_t hidden, std::uint32_t inter, std::uint32_t experts,
                      std::uint32_t top_k) {
    return aiter_shape(tokens, hidden, inter, experts, top_k, DType::fp8_e4m3_fnuz, Quant::per_token,
                       DType::fp8_e4m3_fnuz);
  };
  // Qwen3-235B TP4 (I 384, 128 experts top-8) on MI300X's 304 CUs, block_m 32.
  // 1024 tokens: sub_X_cnt = (8192 + 128 x 32 - 8 + 31) / 32 = 384 blocks;
  // 384 -> 384 workgroups, 2 rounds; 192 -> 768, 3; 128 -> 1152, 4.
  CHECK(plan::aiter_one_stage_tile(IsaFamily::cdna3, fp8(1024, 4096, 384, 128, 8), 32, 304) ==
        KernelTile{256, 32, 768, 128});
  // 1 token: 128 blocks; 384 and 192 both one round (128 and 256 workgroups):
  // 192 leaves 48 CUs idle against 176 (128: 384 workgroups, two rounds).
  CHECK(plan::aiter_one_stage_tile(IsaFamily::cdna3, fp8(1, 4096, 384, 128, 8), 32, 304) ==
        KernelTile{256, 32, 384, 128});
  // Mixtral-8x7B TP8 (I 1792, 8 experts top-2), 4096 tokens: 264 blocks;
  // of 448 (4 slices), 256 (7) and 128 (14), 448 takes 4 rounds against 7 and 13.
  CHECK(plan::aiter_one_stage_tile(IsaFamily::cdna3, fp8(4096, 4096, 1792, 8, 2), 32, 304) ==
        KernelTile{256, 32, 896, 128});
  // Weights applied in stage 1 (fmoe_g1u1_tkw1): the rounds counted on
  // ceil(rows / 32) blocks. Llama-4-Maverick-like TP8 (H 5120, I 1024, 128
  // experts top-1), 64 tokens on MI355X's 256 CUs: 2 blocks, so 512, 256 and
  // 128 all take one round and 128 leaves the fewest CUs idle; counted on the
  // sort's 130 blocks, 512 (2 rounds against 3 and 5).
  auto maverick = fp8(64, 5120, 1024, 128, 1);
  maverick.dtype = maverick.weight_dtype = DType::fp8_e4m3;
  CHECK(plan::aiter_one_stage_tile(IsaFamily::cdna4, maverick, 32, 256).n == 2 * 512);
  maverick.weight_on_input = true;
  CHECK(plan::aiter_one_stage_tile(IsaFamily::cdna4, maverick, 32, 256).n == 2 * 128);
  // Per-tensor takes fmoe_g1u1 whatever doweight_stage1 (fused_moe_1stage: tkw1
  // for per_Token alone): the sort's blocks, 512.
  maverick.quant = Quant::per_tensor;
  CHECK(plan::aiter_one_stage_tile(IsaFamily::cdna4, maverick, 32, 256).n == 2 * 512);
  // MXFP4 on MI355X: DeepSeek-V3 TP4 (I 512) at 1 token, 256 blocks: 512 fills
  // the 256 CUs in one round (256 at two rounds), one workgroup a CU; TP8 (I
  // 256) takes 256, two a CU.
  const auto fp4 = [](std::uint32_t inter) {
    return aiter_shape(1, 7168, inter, 256, 8, DType::mxfp4, Quant::per_1x32, DType::mxfp4);
  };
  const KernelTile tp4 = plan::aiter_one_stage_tile(IsaFamily::cdna4, fp4(512), 32, 256);
  CHECK(tp4.n == 2 * 512);
  CHECK(plan::aiter_one_stage_workgroups_per_cu(IsaFamily::cdna4, fp4(512), tp4) == 1);
  const KernelTile tp8 = plan::aiter_one_stage_tile(IsaFamily::cdna4, fp4(256), 32, 256);
  CHECK(tp8.n == 2 * 256);
  CHECK(plan::aiter_one_stage_workgroups_per_cu(IsaFamily::cdna4, fp4(256), tp8) == 2);
  // Expert parallelism: AITER sizes the sort on the model's experts
  // (global_E). Qwen3-30B-A3B's shape (H 2048, I 768, 128 experts top-8) at
  // EP4, 16 tokens, fp8 per-token on MI355X: 132 blocks, so 256 (396
  // workgroups, 2 rounds, 116 idle) over 384 (264, 2 rounds, 248 idle); on the
  // GPU's 32 experts alone it would be 36 blocks and 128 (216 workgroups, one round).
  auto ep = fp8(16, 2048, 768, 128, 8);
  ep.dtype = ep.weight_dtype = DType::fp8_e4m3;
  ep.experts_local = 32;
  CHECK(plan::aiter_one_stage_tile(IsaFamily::cdna4, ep, 32, 256).n == 2 * 256);
  ep.experts_total = 32;
  CHECK(plan::aiter_one_stage_tile(IsaFamily::cdna4, ep, 32, 256).n == 2 * 128);
  // A width no list has (a scenario's own tile): one workgroup a CU.
  CHECK(plan::aiter_one_stage_workgroups_per_cu(IsaFamily::cdna4, fp4(256), KernelTile{256, 32, 2 * 320, 128}) == 1);
  // Where no width divides I, the narrowest (AITER refuses such a layer).
  CHECK(plan::aiter_one_stage_tile(IsaFamily::cdna3, fp8(16, 4096, 200, 8, 2), 32, 304).n == 256);
}

TEST_CASE("AITER 1-stage kernels: MI300X's block-scale 32x128 and the per-token kernels hold one workgroup a CU",
          "[moe][aiter]") {
  // Qwen3-235B TP4 (I 384) at 16 tokens: fp8 per-token takes 192 (one
  // workgroup a CU); block-scale 128 on mi300x (one a CU, gfx942's list)
  // and on mi355x (two a CU, gfx950's).
  struct Case {
    const char* machine;
    Quant quant;
    std::uint32_t n, per_cu;
  };
  for (const Case& c : {Case{"mi300x", Quant::per_token, 384, 1}, Case{"mi300x", Quant::block_128, 256, 1},
                        Case{"mi355x", Quant::block_128, 256, 2}}) {
    auto sc = source_scenario("tests/data/aiter/one-stage-qwen3-tp4-mi355x.yaml", c.machine);
    const DType fp8 = std::string(c.machine) == "mi300x" ? DType::fp8_e4m3_fnuz : DType::fp8_e4m3;
    sc.scenario.spec.dtype = fp8;
    sc.scenario.spec.quant = c.quant;
    const plan::MoePlan p = plan::build_plan(sc);
    INFO(c.machine << " quant " << static_cast<int>(c.quant));
    REQUIRE(p.kernel.stages == 1);
    CHECK(p.kernel.gate_up_tile.n == c.n);
    sim::AddressSpace as;
    const auto k = sim::programs::software_moe(as, p, sc.machine.spec);
    const sim::Occupancy o = sim::occupancy(sc.machine.spec.compute, fused_of(k).program(0));
    CHECK(o.workgroups == c.per_cu);
    CHECK(o.limiter == "registers");
  }
}
