// AITER's 2-stage MoE GEMMs on AMD machines (CK's GridwiseMoeGemm, read off
// its source: descriptors/plan/aiter_kernels.cpp aiter_gemm_resources): the
// pre-shuffled weights go from memory straight into registers, so LDS holds
// the A tile (and the C shuffle), and the workgroup's registers are CK's own
// estimate. Our NVIDIA kernels keep both operands in LDS.
#include <catch2/catch.hpp>

#include "descriptors/plan/aiter_kernels.h"
#include "descriptors/plan/moe_plan.h"
#include "sim/cu/compute_unit.h"
#include "sim/cu/lds.h"
#include "sim/platform/gpu.h"
#include "sim/programs/moe_kernels.h"
#include "tests/sim/shipped_inputs.h"

namespace {

using namespace tdmsim;
using tdmsim::test::source_scenario;

isa::TileProgram first_program(const sim::programs::MoeKernels& k, const char* stage) {
  for (std::size_t i = 0; i < k.stage.size(); ++i) {
    if (k.stage[i] == stage) return k.kernels[i].program(0);
  }
  throw std::runtime_error(std::string("no stage ") + stage);
}

// DeepSeek-V3 TP4 fp8 on MI300X at block_m 128 with K 256 B (A tile 32 KiB,
// as large as down's C shuffle).
config::ResolvedScenario block_m_128_layer() {
  auto sc = source_scenario("tests/data/aiter/two-stage-dsv3-tp4-mi300x.yaml");
  sc.scenario.spec.tokens = 512;
  sc.scenario.spec.kernel.block_m = 128;
  sc.scenario.spec.kernel.gate_up_tile = KernelTile{256, 128, 128, 256};
  sc.scenario.spec.kernel.down_tile = KernelTile{256, 128, 128, 256};
  return sc;
}

}  // namespace

TEST_CASE("AITER 2-stage kernels: the A tile in LDS, the weights in registers, CK's register estimate",
          "[moe][aiter]") {
  // DeepSeek-V3 TP4 on MI300X with the MI355X table's fp8 tile 256x16x128x256
  // (block_m 16, N 128, K 256 bytes), 2 LDS buffers (pipeline_stages 2: CK's
  // v3 pipeline, kernel_moe_gemm_2lds).
  const auto sc = source_scenario("tests/data/aiter/two-stage-dsv3-tp4-mi300x.yaml");
  const plan::MoePlan p = plan::build_plan(sc);
  REQUIRE(p.kernel.stages == 2);
  REQUIRE(p.kernel.pipeline_stages == 2);
  sim::AddressSpace as;
  const auto k = sim::programs::software_moe(as, p, sc.machine.spec);

  const isa::TileProgram up = first_program(k, "gate_up");
  // A: 16 rows x 256 B = 4 KiB; C shuffle: 16 rows (of at most 2 x 16) x 4
  // waves' 16 columns x 4 B = 4 KiB; 2 buffers of the larger. (With B in LDS
  // as well, (16 + 2 x 128 rows) x 256 B x 2 = 136 KiB: more than MI300X's 64 KiB.)
  CHECK(up.lds_bytes == 2 * 4096);
  // CK's estimate per thread: A 4096 / 256 / 4 x (1 + 4) = 20, B 128 x 256 /
  // 256 / 4 x 2 x 2 (gate and up) = 128, C 16 x 128 x 4 / 256 / 4 x 2 = 16:
  // 164, allocated in 8s: 168.
  CHECK(up.vgprs_per_thread == 168);
  const sim::Occupancy o = sim::occupancy(sc.machine.spec.compute, up);
  CHECK(o.workgroups == 3);  // 512 KiB / (256 threads x 168 x 4 B)
  CHECK(o.limiter == "registers");
  REQUIRE(up.loops.size() == 1);
  const isa::Loop& loop = up.loops[0];
  CHECK(loop.b_in_registers);
  REQUIRE(loop.loads.size() == 3);  // token rows, gate, up
  CHECK_FALSE(loop.loads[0].to_registers);
  CHECK(loop.loads[1].to_registers);
  CHECK(loop.loads[2].to_registers);
  // Through LDS per K step: the A rows written (the valid rows gathered,
  // 256 B each) and the A tile read (16 x 256 B); no weight byte.
  const double a_written = static_cast<double>(loop.loads[0].rows) * loop.loads[0].row_bytes;
  CHECK(sim::Lds::iteration_bytes(loop) == Approx(a_written + 16 * 256));

  const isa::TileProgram down = first_program(k, "down");
  // Down: K 256 B of the intermediate, block_m 16 rows x 64 columns x 4 B of C
  // shuffle = 4 KiB each: 2 x 4 KiB. Registers: A 20, B 128 x 256 / 256 / 4 x
  // 2 = 64, C 16 x 128 x 4 / 256 / 4 = 8: 92 -> 96.
  CHECK(down.lds_bytes == 2 * 4096);
  CHECK(down.vgprs_per_thread == 96);
  CHECK(down.loops[0].b_in_registers);
}

TEST_CASE("AITER gate/up tiles are named by N per half: NPerBlock of gate and as many of up", "[moe][aiter]") {
  // AITER's stage-1 GEMM has N = inter_dim and each workgroup takes NPerBlock
  // columns of gate and the same of up (plan::named_gate_up_tile). DeepSeek-V3
  // TP4: I = 512, so 256x16x128x256 is 4 workgroups a block, 128 columns of
  // each; the same name on our own kernels (N counts both) is 8 of 64.
  auto sc = source_scenario("tests/data/aiter/two-stage-dsv3-tp4-mi300x.yaml");
  REQUIRE(sc.scenario.spec.kernel.source == KernelCode::aiter);
  const plan::MoePlan p = plan::build_plan(sc);
  CHECK(p.kernel.gate_up_tile == KernelTile{256, 16, 256, 256});  // the model's N: gate and up
  CHECK(plan::named_gate_up_tile(p.kernel) == KernelTile{256, 16, 128, 256});
  CHECK(p.kernel.down_tile == KernelTile{256, 16, 128, 256});      // down is named as the model has it
  CHECK(p.kernel.reason.find("tiles 256x16x128x256 / 256x16x128x256") != std::string::npos);
  const std::size_t blocks = p.layout.block_expert.size();
  REQUIRE(p.stage1.size() == blocks * 4);
  for (const plan::TileJob& j : p.stage1) {
    const plan::Range n = plan::job_n_range(p.shape, p.kernel, j);
    CHECK(n.end - n.begin == 128);
  }
  sim::AddressSpace as;
  const auto k = sim::programs::software_moe(as, p, sc.machine.spec);
  const isa::TileProgram up = first_program(k, "gate_up");
  CHECK(up.loops[0].n == 256);               // 128 of gate + 128 of up
  CHECK(up.loops[0].loads[1].rows == 128);   // gate's weight rows
  CHECK(up.loops[0].loads[2].rows == 128);   // up's

  sc.scenario.spec.kernel.source = KernelCode::tdmsim;
  const plan::MoePlan ours = plan::build_plan(sc);
  CHECK(ours.kernel.gate_up_tile == KernelTile{256, 16, 128, 256});
  CHECK(plan::named_gate_up_tile(ours.kernel) == ours.kernel.gate_up_tile);
  CHECK(ours.stage1.size() == ours.layout.block_expert.size() * 8);
}

TEST_CASE("AITER 2-stage kernels: a one-wave tile's LDS and registers", "[moe][aiter]") {
  // The MI355X table also names 64-thread tiles (64x32x32x128): one wave, so
  // the C shuffle is 16 columns wide and the registers are per 64 threads.
  auto sc = source_scenario("tests/data/aiter/two-stage-dsv3-tp4-mi300x.yaml");
  sc.scenario.spec.kernel.down_tile = KernelTile{64, 16, 32, 128};
  const plan::MoePlan p = plan::build_plan(sc);
  REQUIRE(p.kernel.down_tile == KernelTile{64, 16, 32, 128});
  sim::AddressSpace as;
  const auto k = sim::programs::software_moe(as, p, sc.machine.spec);
  const isa::TileProgram down = first_program(k, "down");
  // A 16 x 128 B = 2 KiB, C shuffle 16 x 16 x 4 B = 1 KiB: 2 x 2 KiB.
  CHECK(down.lds_bytes == 2 * 2048);
  // A 2048 / 64 / 4 x (1 + 1) = 16, B 32 x 128 / 64 / 4 x 2 = 32, C 16 x 32 x 4
  // / 64 / 4 = 8: 56.
  CHECK(down.vgprs_per_thread == 56);
}

TEST_CASE("AITER 2-stage kernels: the plan's pipeline depth and the program's LDS are one figure",
          "[moe][aiter]") {
  // block_m 128 with K 256 B on MI300X (64 KiB of LDS): the A tile is 32 KiB.
  // The weights go to registers and CK's LDS (2 buffers of max(A, C shuffle))
  // does not grow with the depth, so a machine whose kernels run 4 stages
  // keeps them (counting A x depth would have lowered it to 2), and the
  // program charges exactly what the plan checked.
  auto sc = block_m_128_layer();
  sc.machine.spec.kernels.pipeline_stages = 4;
  const plan::MoePlan p = plan::build_plan(sc);
  CHECK(p.kernel.pipeline_stages == 4);
  sim::AddressSpace as;
  const auto k = sim::programs::software_moe(as, p, sc.machine.spec);
  const std::uint64_t lds = sc.machine.spec.compute.lds_per_cu.bytes;
  for (const char* stage : {"gate_up", "down"}) {
    INFO(stage);
    const bool gate_up = std::string(stage) == "gate_up";
    const isa::TileProgram prog = first_program(k, stage);
    const KernelTile& tile = gate_up ? p.kernel.gate_up_tile : p.kernel.down_tile;
    CHECK(prog.lds_bytes == plan::aiter_gemm_resources(DType::fp8_e4m3_fnuz, DType::fp8_e4m3_fnuz, 128, tile,
                                                        gate_up, 2, lds).lds_bytes);
    CHECK(prog.lds_bytes <= lds);
  }
  // Down's C shuffle: 128 rows x 4 waves' 16 columns x 4 B = 32 KiB, as A:
  // 2 x 32 KiB, the whole of MI300X's LDS.
  CHECK(first_program(k, "down").lds_bytes == 65536);
}

TEST_CASE("AITER 2-stage kernels: a v1 CK pipeline (from a table's kernel name) takes one LDS buffer",
          "[moe][aiter]") {
  // The block_m 128 layer above: 2 x 32 KiB with the v3 pipeline the model
  // takes where no name says, 32 KiB for a v1 name (kernel_moe_gemm).
  auto sc = block_m_128_layer();
  plan::MoePlan p = plan::build_plan(sc);
  REQUIRE(p.kernel.aiter_traits == plan::AiterKernelTraits{});
  sim::AddressSpace as;
  CHECK(first_program(sim::programs::software_moe(as, p, sc.machine.spec), "down").lds_bytes == 65536);
  p.kernel.aiter_traits = {2, 1};  // gate/up v3, down v1
  sim::AddressSpace as1;
  const auto k = sim::programs::software_moe(as1, p, sc.machine.spec);
  CHECK(first_program(k, "down").lds_bytes == 32768);
  CHECK(first_program(k, "gate_up").lds_bytes == 65536);  // A 128 x 256 B = 32 KiB, twice
}

TEST_CASE("AITER 2-stage kernels: a table row's CK names reach the plan and the programs", "[moe][aiter]") {
  // The row names gate/up v1 and down v3: one LDS buffer for gate/up, two
  // for down, said on the kernel: line. Our kernels take nothing from it.
  auto sc = source_scenario("tests/data/aiter/ck-v1-dsv3-tp4-mi300x.yaml");
  const plan::MoePlan p = plan::build_plan(sc);
  REQUIRE(p.kernel.source.config_line == 2);
  CHECK(p.kernel.aiter_traits == plan::AiterKernelTraits{1, 2});
  CHECK(p.kernel.reason.find("CK pipelines: gate/up v1 (1 LDS buffer), down v2/v3 (2 LDS buffers)") !=
        std::string::npos);
  sim::AddressSpace as;
  const auto k = sim::programs::software_moe(as, p, sc.machine.spec);
  // A 16 x 256 B = 4 KiB = the C shuffle (16 rows x 4 waves' 16 columns x 4 B):
  // once for v1, twice for v3.
  CHECK(first_program(k, "gate_up").lds_bytes == 4096);
  CHECK(first_program(k, "down").lds_bytes == 2 * 4096);
  sc.scenario.spec.kernel.source = KernelCode::tdmsim;
  CHECK(plan::build_plan(sc).kernel.aiter_traits == plan::AiterKernelTraits{});
}

TEST_CASE("AITER 2-stage kernels: a scenario's lds_buffers keys run what the table's names say", "[moe][aiter]") {
  // The table row of ck-v1-dsv3-tp4-mi300x.csv as scenario values: block_m,
  // tiles, split_k, stages and the names' pipelines (gate/up v1, down v3).
  auto by_table = source_scenario("tests/data/aiter/ck-v1-dsv3-tp4-mi300x.yaml");
  auto by_keys = by_table;
  KernelSpec& k = by_keys.scenario.spec.kernel;
  k.config.clear();
  k.block_m = 16;
  k.gate_up_tile = KernelTile{256, 16, 128, 256};
  k.down_tile = KernelTile{256, 16, 128, 256};
  k.split_k = 1;
  k.stages = 2;
  k.gate_up_lds_buffers = 1;
  k.down_lds_buffers = 2;
  const plan::MoePlan a = plan::build_plan(by_table);
  const plan::MoePlan b = plan::build_plan(by_keys);
  CHECK(b.kernel.aiter_traits == plan::AiterKernelTraits{1, 2});
  CHECK(b.kernel.aiter_traits == a.kernel.aiter_traits);
  CHECK(b.kernel.gate_up_tile == a.kernel.gate_up_tile);
  CHECK(b.kernel.down_tile == a.kernel.down_tile);
  CHECK(b.kernel.pipeline_stages == a.kernel.pipeline_stages);
  CHECK(b.kernel.reason.find("CK pipelines: gate/up v1 (1 LDS buffer), down v2/v3 (2 LDS buffers)") !=
        std::string::npos);
  sim::AddressSpace as_a, as_b;
  const auto ka = sim::programs::software_moe(as_a, a, by_table.machine.spec);
  const auto kb = sim::programs::software_moe(as_b, b, by_keys.machine.spec);
  for (const char* stage : {"gate_up", "down"}) {
    INFO(stage);
    CHECK(first_program(kb, stage).lds_bytes == first_program(ka, stage).lds_bytes);
    CHECK(first_program(kb, stage).vgprs_per_thread == first_program(ka, stage).vgprs_per_thread);
  }
  CHECK(first_program(kb, "gate_up").lds_bytes == 4096);
  CHECK(first_program(kb, "down").lds_bytes == 2 * 4096);
  // Left at 0, both stages take two buffers (pipeline depth 2): down's LDS
  // stays, gate/up's doubles.
  k.gate_up_lds_buffers = k.down_lds_buffers = 0;
  const plan::MoePlan c = plan::build_plan(by_keys);
  CHECK(c.kernel.aiter_traits == plan::AiterKernelTraits{});
  sim::AddressSpace as_c;
  CHECK(first_program(sim::programs::software_moe(as_c, c, by_keys.machine.spec), "gate_up").lds_bytes == 2 * 4096);
}

// DeepSeek-V3 TP4 fp8 on MI300X at 4096 tokens, block_m 256, the default tiles.
static config::ResolvedScenario block_m_256_default_tiles() {
  auto sc = source_scenario("tests/data/aiter/two-stage-dsv3-tp4-mi300x.yaml");
  sc.scenario.spec.tokens = 4096;
  sc.scenario.spec.kernel.block_m = 256;
  sc.scenario.spec.kernel.gate_up_tile = KernelTile{};
  sc.scenario.spec.kernel.down_tile = KernelTile{};
  return sc;
}

TEST_CASE("AITER 2-stage kernels: a 256-row down tile shuffles 2 XDL rows where 256 do not fit its v3 instance",
          "[moe][aiter]") {
  // block_m 256 on MI300X: a down C shuffle of all 256 rows (x 4 waves' 16
  // columns x 4 B = 64 KiB) would take 128 KiB with CK's v3 pipeline, yet
  // AITER's gfx942 lists build 256-row v3 down kernels; they fit MI300X's 64
  // KiB with the earlier source's 2 XDL rows a shuffle, which the model then
  // takes, for v1 and v3 alike (plan::aiter_gemm_resources).
  auto sc = block_m_256_default_tiles();
  const plan::MoePlan p = plan::build_plan(sc);
  CHECK(p.kernel.aiter_traits == plan::AiterKernelTraits{});
  const KernelTile down = p.kernel.down_tile;
  const std::uint64_t a_tile = 256 * std::uint64_t{down.k};  // fp8: a byte an element
  const std::uint64_t lds = sc.machine.spec.compute.lds_per_cu.bytes;
  for (std::uint32_t buffers : {1u, 2u}) {
    INFO(buffers);
    CHECK(plan::aiter_gemm_resources(DType::fp8_e4m3_fnuz, DType::fp8_e4m3_fnuz, 256, down, false, buffers, lds)
              .lds_bytes == buffers * std::max<std::uint64_t>(a_tile, 32 * 4 * 16 * 4));
  }
  // Where 256 rows fit the v3 instance (MI355X's 160 KiB), they are taken.
  CHECK(plan::aiter_gemm_resources(DType::fp8_e4m3_fnuz, DType::fp8_e4m3_fnuz, 256, down, false, 2, 160 * 1024)
            .lds_bytes == 2 * 65536);
  sim::AddressSpace as;
  const auto k = sim::programs::software_moe(as, p, sc.machine.spec);
  CHECK(first_program(k, "down").lds_bytes == 2 * std::max<std::uint64_t>(a_tile, 32 * 4 * 16 * 4));
  CHECK(sim::fit_problem(sc.machine.spec.compute, first_program(k, "down")).empty());
  // The same tile named, as AITER's 256-row v3 instance: it fits the CU too
  // (a named tile is not changed by the plan; the run checks it so).
  sc.scenario.spec.kernel.down_tile = down;
  const plan::MoePlan named = plan::build_plan(sc);
  CHECK(named.kernel.aiter_traits == plan::AiterKernelTraits{});
  sim::AddressSpace as2;
  const auto kn = sim::programs::software_moe(as2, named, sc.machine.spec);
  CHECK(sim::fit_problem(sc.machine.spec.compute, first_program(kn, "down")).empty());
}

TEST_CASE("AITER 2-stage kernels: a default tile too large for two LDS buffers runs CK's v1 pipeline",
          "[moe][aiter]") {
  // On a CU of 16 KiB of LDS (a what-if copy of MI300X), block_m 256's
  // default tiles hold an A tile of 256 rows x their K bytes, twice that
  // with two buffers, more than the CU has; CK's v1 pipeline holds one,
  // which fits. A named tile is not changed (the run refuses it).
  auto sc = block_m_256_default_tiles();
  sc.machine.spec.compute.lds_per_cu.bytes = 16 * 1024;
  const plan::MoePlan p = plan::build_plan(sc);
  REQUIRE(256 * p.kernel.down_tile.k == 16 * 1024);  // fp8: the A tile alone fills the CU
  CHECK(p.kernel.aiter_traits == plan::AiterKernelTraits{1, 1});
  CHECK(p.kernel.reason.find("down tile: CK's v1 pipeline, one LDS buffer (16 KiB; two would take 32 KiB > 16 "
                             "KiB)") != std::string::npos);
  sim::AddressSpace as;
  const auto k = sim::programs::software_moe(as, p, sc.machine.spec);
  CHECK(first_program(k, "down").lds_bytes == 16 * 1024);
  sc.scenario.spec.kernel.down_tile = p.kernel.down_tile;  // the same tile, named
  CHECK(plan::build_plan(sc).kernel.aiter_traits.down_lds_buffers == 0);
}

TEST_CASE("AITER 2-stage kernels: split-K splits stage 1 only", "[moe][aiter]") {
  // fused_moe.py passes ksplit to its stage-1 call alone: gate/up jobs are
  // split (and reduced), down jobs cover all of I; our kernels split both.
  auto sc = source_scenario("tests/data/aiter/two-stage-dsv3-tp4-mi300x.yaml");
  sc.scenario.spec.kernel.split_k = 2;
  const plan::MoePlan a = plan::build_plan(sc);
  REQUIRE(a.kernel.split_k == 2);
  const std::size_t blocks = a.layout.block_expert.size();
  // N tiles: gate/up I / 128 per half = 4 (the model's N 256), down H / 128 = 56.
  CHECK(a.stage1.size() == blocks * 4 * 2);
  CHECK(a.stage2.size() == blocks * 56);
  for (const auto& j : a.stage2) {
    CHECK(j.k_split == 0);
    CHECK(plan::job_k_range(a.shape, a.kernel, j).end == a.shape.inter);
  }
  // Every split adds into one fp32 buffer atomically (AITER's ksplit), and
  // the reduction reads that one plane.
  sim::AddressSpace as;
  const auto k = sim::programs::software_moe(as, a, sc.machine.spec);
  std::size_t gate_up = 0, reduce = 0;
  for (std::size_t i = 0; i < k.stage.size(); ++i) {
    if (k.stage[i] == "gate_up") gate_up = i;
    if (k.stage[i] == "reduce") reduce = i;
  }
  REQUIRE(reduce > gate_up);
  // Jobs 0 and 1 of block 0, n tile 0 are its two K splits (rules::job_at).
  REQUIRE(a.stage1[0].k_split != a.stage1[1].k_split);
  const isa::TileProgram s0 = k.kernels[gate_up].program(0), s1 = k.kernels[gate_up].program(1);
  REQUIRE(s0.stores.size() == 1);
  CHECK(s0.stores[0].atomic);
  CHECK(s0.stores[0].addr == s1.stores[0].addr);
  CHECK(k.kernels[reduce].program(0).prologue_loads.size() == 1);
  sc.scenario.spec.kernel.source = KernelCode::tdmsim;
  const plan::MoePlan o = plan::build_plan(sc);
  CHECK(o.stage2.size() == blocks * 56 * 2);
  sim::AddressSpace as2;
  const auto ko = sim::programs::software_moe(as2, o, sc.machine.spec);
  const isa::TileProgram o0 = ko.kernels[gate_up].program(0), o1 = ko.kernels[gate_up].program(1);
  CHECK_FALSE(o0.stores[0].atomic);
  CHECK(o0.stores[0].addr != o1.stores[0].addr);  // a plane a split
  CHECK(ko.kernels[reduce].program(0).prologue_loads.size() == 2);
}

TEST_CASE("our own kernels keep their weights in LDS on the AMD machines", "[moe][aiter]") {
  // kernel.source tdmsim: our code objects on CDNA (mi300x), and on gfx1250
  // (mi500x-tdm), where no code object of ours is compiled, both operands in LDS.
  for (const char* file : {"workloads/scenarios/mixtral-8x7b-64tok-bf16-mi300x.yaml",
                           "workloads/scenarios/qwen3-30b-a3b-decode-mi500x-tdm.yaml"}) {
    const auto sc = source_scenario(file);
    REQUIRE(sc.scenario.spec.kernel.source == KernelCode::tdmsim);
    const plan::MoePlan p = plan::build_plan(sc);
    sim::AddressSpace as;
    const auto k = sim::programs::software_moe(as, p, sc.machine.spec);
    for (const char* stage : {"gate_up", "down"}) {
      const isa::TileProgram prog = first_program(k, stage);
      INFO(file << " " << stage);
      REQUIRE(!prog.loops.empty());
      CHECK_FALSE(prog.loops[0].b_in_registers);
      for (const auto& r : prog.loops[0].loads) CHECK_FALSE(r.to_registers);
    }
  }
}

TEST_CASE("our NVIDIA kernels keep both operands in LDS", "[moe][aiter]") {
  const auto sc = source_scenario("workloads/scenarios/qwen3-30b-decode-h200.yaml");
  REQUIRE(plan::build_plan(sc).kernel.stages == 2);
  const plan::MoePlan p = plan::build_plan(sc);
  sim::AddressSpace as;
  const auto k = sim::programs::software_moe(as, p, sc.machine.spec);
  const isa::TileProgram up = first_program(k, "gate_up");
  REQUIRE(!up.loops.empty());
  CHECK_FALSE(up.loops[0].b_in_registers);
  for (const auto& r : up.loops[0].loads) CHECK_FALSE(r.to_registers);
}

TEST_CASE("AITER 2-stage kernels: an assembly stage-1 kernel holds the workgroups a CU its name says",
          "[moe][aiter]") {
  // fmoe_stage1_bf16_pertokenInt8_g1u1_32x128_3tg_pf3 (mangled in the table):
  // three workgroups a CU (its _3tg, AITER's tg_num_perCU), where CK's
  // register estimate for the nearest CK tile (256x32x128x128) allows two.
  auto sc = source_scenario("tests/data/aiter/asm-stage1-int8-mixtral-tp8-mi300x.yaml");
  const ComputeSpec& cu = sc.machine.spec.compute;
  const plan::MoePlan p = plan::build_plan(sc);
  REQUIRE(p.kernel.source.config_line == 2);
  CHECK(p.kernel.aiter_traits == plan::AiterKernelTraits{0, 0, 3});
  CHECK(p.kernel.split_k == 1);  // the row's ksplit 2 is not used: assembly stage 1 runs unsplit
  CHECK(p.kernel.reason.find("gate/up: 3 workgroups a CU (the assembly kernel's _3tg)") != std::string::npos);
  sim::AddressSpace as;
  const auto k = sim::programs::software_moe(as, p, sc.machine.spec);
  const auto named = sim::occupancy(cu, first_program(k, "gate_up"));
  CHECK(named.workgroups == 3);
  CHECK(named.limiter == "registers");
  const auto down = sim::occupancy(cu, first_program(k, "down"));

  // The same kernel as scenario keys: the same programs.
  auto by_keys = sc;
  KernelSpec& ks = by_keys.scenario.spec.kernel;
  ks.config.clear();
  ks.block_m = 32;
  ks.gate_up_tile = plan::named_gate_up_tile(p.kernel);  // AITER's N: of gate alone
  ks.split_k = 1;
  ks.stages = 2;
  ks.gate_up_workgroups_per_cu = 3;
  const plan::MoePlan b = plan::build_plan(by_keys);
  CHECK(b.kernel.aiter_traits == p.kernel.aiter_traits);
  CHECK(b.kernel.gate_up_tile == p.kernel.gate_up_tile);
  CHECK(b.kernel.reason.find("gate/up: 3 workgroups a CU (kernel.gate_up_workgroups_per_cu)") != std::string::npos);
  sim::AddressSpace as_b;
  const auto kb = sim::programs::software_moe(as_b, b, by_keys.machine.spec);
  CHECK(first_program(kb, "gate_up").vgprs_per_thread == first_program(k, "gate_up").vgprs_per_thread);
  CHECK(first_program(kb, "gate_up").lds_bytes == first_program(k, "gate_up").lds_bytes);

  // Left at 0: CK's estimate of the tile, two a CU; down is not touched.
  ks.gate_up_workgroups_per_cu = 0;
  const plan::MoePlan c = plan::build_plan(by_keys);
  sim::AddressSpace as_c;
  const auto kc = sim::programs::software_moe(as_c, c, by_keys.machine.spec);
  const auto estimated = sim::occupancy(cu, first_program(kc, "gate_up"));
  CHECK(estimated.workgroups == 2);
  CHECK(estimated.limiter == "registers");
  CHECK(sim::occupancy(cu, first_program(kc, "down")).workgroups == down.workgroups);

  // Eight a CU (MI300X's wave slots hold 10 of 4 waves): the LDS share is
  // an eighth of the CU's, so LDS, which CK's estimate of this tile would
  // let hold fewer, holds eight.
  ks.gate_up_workgroups_per_cu = 8;
  const plan::MoePlan e = plan::build_plan(by_keys);
  sim::AddressSpace as_e;
  const auto ke = sim::programs::software_moe(as_e, e, by_keys.machine.spec);
  const isa::TileProgram eight = first_program(ke, "gate_up");
  CHECK(eight.lds_bytes <= cu.lds_per_cu.bytes / 8);
  CHECK(sim::occupancy(cu, eight).workgroups == 8);

  // Our kernels take nothing from the name.
  sc.scenario.spec.kernel.source = KernelCode::tdmsim;
  CHECK(plan::build_plan(sc).kernel.aiter_traits == plan::AiterKernelTraits{});
}

TEST_CASE("AITER 2-stage kernels: a FlyDSL stage-2 name's reduce mode runs the reduce combine", "[moe][aiter]") {
  // The row names FlyDSL's stage-1 kernel t64x256x256 and stage-2 kernel
  // t64x256x256_reduce (DeepSeek-V3 MXFP4 TP8 on MI355X, 4096 tokens): both
  // tiles, and the down stage stores every (token, slot) row, then a sum and
  // a copy follow, where mi355x's own combine is atomic.
  auto sc = source_scenario("tests/data/aiter/flydsl-reduce-dsv3-tp8-mi355x.yaml");
  REQUIRE(sc.machine.spec.kernels.combine == CombineType::bf16);
  const plan::MoePlan p = plan::build_plan(sc);
  REQUIRE(p.kernel.source.config_line == 2);
  CHECK(p.kernel.aiter_traits.down_combine == DownCombine::reduce);
  CHECK(plan::named_gate_up_tile(p.kernel) == KernelTile{256, 64, 256, 256});
  CHECK(p.kernel.down_tile == KernelTile{256, 64, 256, 256});
  CHECK(p.kernel.reason.find("down combine: reduce, plain stores then a sum and a copy (the FlyDSL kernel's mode)") !=
        std::string::npos);
  sim::AddressSpace as;
  const auto k = sim::programs::software_moe(as, p, sc.machine.spec);
  REQUIRE(k.stage.size() >= 2);
  CHECK(std::vector<std::string>(k.stage.end() - 2, k.stage.end()) == std::vector<std::string>{"combine", "combine"});
  const auto down_stores = first_program(k, "down").stores;
  REQUIRE(!down_stores.empty());
  for (const auto& st : down_stores) CHECK_FALSE(st.atomic);

  // The same layer told atomic by the scenario (no table): CK-like atomic adds,
  // even on a machine whose own combine is reduce.
  auto keyed = sc;
  KernelSpec& ks = keyed.scenario.spec.kernel;
  ks.config.clear();
  ks.block_m = 64;
  ks.stages = 2;
  ks.split_k = 1;
  ks.gate_up_tile = KernelTile{256, 64, 256, 256};
  ks.down_tile = KernelTile{256, 64, 256, 256};
  ks.down_combine = DownCombine::atomic;
  keyed.machine.spec.kernels.combine = CombineType::reduce;
  const plan::MoePlan pa = plan::build_plan(keyed);
  CHECK(pa.kernel.aiter_traits.down_combine == DownCombine::atomic);
  CHECK(pa.kernel.reason.find("down combine: atomic adds (kernel.down_combine)") != std::string::npos);
  sim::AddressSpace as2;
  const auto ka = sim::programs::software_moe(as2, pa, keyed.machine.spec);
  CHECK(ka.stage.back() == "down");
  bool atomic = false;
  for (const auto& st : first_program(ka, "down").stores) atomic = atomic || st.atomic;
  CHECK(atomic);
  // And left to the machine: its reduce combine.
  ks.down_combine = DownCombine::machine;
  sim::AddressSpace as3;
  CHECK(sim::programs::software_moe(as3, plan::build_plan(keyed), keyed.machine.spec).stage.back() == "combine");
  // atomic on a machine whose combine is fp32: bf16 adds, no clearing kernel.
  keyed.machine.spec.kernels.combine = CombineType::fp32;
  ks.down_combine = DownCombine::atomic;
  sim::AddressSpace as4;
  const auto kf = sim::programs::software_moe(as4, plan::build_plan(keyed), keyed.machine.spec);
  CHECK(std::find(kf.stage.begin(), kf.stage.end(), "zero_out") == kf.stage.end());
  bool bf16_adds = false;
  for (const auto& st : first_program(kf, "down").stores) bf16_adds = bf16_adds || (st.atomic && st.row_bytes % 2 == 0);
  CHECK(bf16_adds);
  // A 1-stage layer has no down kernel: the key is not used (said), the
  // machine's combine runs (fp32: its clearing kernel).
  ks.stages = 1;
  ks.block_m = 32;
  ks.gate_up_tile = ks.down_tile = KernelTile{};
  const plan::MoePlan p1 = plan::build_plan(keyed);
  REQUIRE(p1.kernel.stages == 1);
  CHECK(p1.kernel.reason.find("kernel.down_combine not used") != std::string::npos);
  sim::AddressSpace as5;
  const auto k1 = sim::programs::software_moe(as5, p1, keyed.machine.spec);
  CHECK(std::find(k1.stage.begin(), k1.stage.end(), "zero_out") != k1.stage.end());
  // Our kernels take nothing from the name, and the kernel: line says so.
  sc.scenario.spec.kernel.source = KernelCode::tdmsim;
  const plan::MoePlan ours = plan::build_plan(sc);
  CHECK(ours.kernel.aiter_traits == plan::AiterKernelTraits{});
  CHECK(ours.kernel.reason.find("kernelName2's FlyDSL mode not used") != std::string::npos);
}
