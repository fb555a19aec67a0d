// AITER's 1-stage assembly kernels on AMD machines (docs/moe-timing.md "AITER's
// 1-stage kernels and the combine"): the plan picks their tile by AITER's
// rule, the workgroups per CU follow their kernel lists' tg_num_perCU, and the
// combine adds one H-wide row per routed row and intermediate slice.
#include <catch2/catch.hpp>

#include <filesystem>

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
