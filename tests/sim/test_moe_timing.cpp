// The MoE software path on a machine small enough to time by hand: one CU,
// one expert, one tile. The predicted layer time must equal the analytic sum
// of launch, dispatch, memory latencies, matrix and vector work.
#include <algorithm>
#include <catch2/catch.hpp>

#include <filesystem>

#include "descriptors/plan/moe_plan.h"
#include "isa/matrix_table.h"
#include "sim/platform/gpu.h"
#include "sim/platform/tdm_scheduler.h"
#include "sim/programs/moe_kernels.h"
#include "tests/sim/fork_run.h"
#include "workloads/config/loader.h"
#include "tests/sim/shipped_inputs.h"

namespace {

using tdmsim::test::kernel_of;
using tdmsim::test::source_scenario;

using namespace tdmsim;
namespace fs = std::filesystem;

double ps(units::Duration d) { return static_cast<double>(d.ps); }

// One workgroup of `threads` running a loop without loads or matrix work
// whose iterations each carry `instructions` of one warp.
isa::KernelLaunch issue_loop(std::uint32_t threads, std::uint32_t iterations, std::uint32_t instructions) {
  isa::KernelLaunch k;
  k.name = "loop";
  k.workgroups = 1;
  k.program = [threads, iterations, instructions](std::uint32_t) {
    isa::TileProgram p;
    p.threads = threads;
    p.vgprs_per_thread = 16;
    isa::Loop loop;
    loop.iterations = iterations;
    loop.issue_instructions = instructions;
    p.loops.push_back(loop);
    return p;
  };
  return k;
}

// The knobs at their defaults (AITER-style kernels) with the costs every
// family shares (workloads/kernel-profiles/common.yaml), and our NVIDIA
// kernels' counts from `m`'s profile, for the tests that switch to them.
KernelsSpec aiter_style_kernels(const MachineSpec& m) {
  const fs::path root = fs::path(TDMSIM_SOURCE_DIR);
  const config::Loader loader({root / "workloads"});
  KernelsSpec k = loader.kernel_profile(root / "workloads/kernel-profiles/common.yaml").spec.kernels;
  k.nvidia = m.kernels.nvidia;
  return k;
}

// h200 cut down to one CU with pure latencies: bandwidths so high that
// transfers take about nothing, no refresh, no row misses, no turnaround,
// and MSHRs so many that misses never queue for one.
config::ResolvedScenario tiny_scenario() {
  auto sc = source_scenario("workloads/scenarios/qwen3-30b-decode-h200.yaml");
  auto& m = sc.machine.spec;
  m.compute.cus_per_die = 1;
  m.memory.l2.bytes_per_clock_per_channel = 1u << 20;
  m.memory.l2.mshrs_per_channel = 1u << 20;
  m.memory.hbm.bandwidth = units::Bandwidth{std::uint64_t{1} << 60};
  m.memory.fabric.bandwidth = units::Bandwidth{std::uint64_t{1} << 60};
  m.memory.fabric.latency = units::Duration{20'000};  // 20 ns, to see it counted
  m.memory.hbm.refresh_time = units::Duration{0};
  m.memory.hbm.row_miss_penalty = units::Duration{0};
  m.memory.hbm.turnaround = units::Duration{0};
  // An LDS that never binds: the analytic sums below count the matrix pipes
  // (the LDS bandwidth's own test sets it back).
  m.compute.lds_bytes_per_clock = 1u << 20;
  m.compute.lds_banks = 1u << 18;
  m.kernels = aiter_style_kernels(m);  // AITER-style kernels (the h200 file describes ours)
  auto& model = sc.model.spec;
  model.experts = 1;
  model.top_k = 1;
  model.hidden_size = 64;        // one K step of the tile below
  model.intermediate_size = 32;  // one N/2 slice of it
  auto& k = sc.scenario.spec.kernel;
  k.stages = 1;
  k.block_m = 16;
  k.gate_up_tile = {256, 16, 64, 64};
  k.down_tile = {256, 16, 64, 64};
  k.split_k = 1;
  // The fused-MoE kernels alone, timed by hand below: the router's output is
  // given (its kernels: tests/sim/test_moe_router.cpp).
  sc.scenario.spec.routing.router_stage = RouterStage::given;
  return sc;
}

// Analytic times of the tiny layer's sort and fused kernels, as derived in
// the first test case, with `per_pipe` FLOP/clock per matrix pipe (`down_pipe`
// for the fused kernel's down phase, when it differs) and blocks of `rows`.
// `ours`: our NVIDIA kernel (kernels.matrix_instructions not isa), whose down
// phase scans the whole product after it (12 operations an element and the 17
// of the product the profile adds, +10 per element of the one real row)
// instead of the epilogue's combine (2 an element), plus `chunk_ops` per
// thread for the rest of its one chunk (copies, barriers, wmma;
// moe_fused_program.cpp fused_chunk_ops), and whose phase-1 epilogue is counted (57
// an element of the real row's 32 columns, 12 of a padding row's) instead of
// SwiGLU's 8 an element.
struct TinyTimes {
  double sort, fused;
};
TinyTimes tiny_analytic(const MachineSpec& m, double per_pipe, double down_pipe = 0, double rows = 16,
                        bool ours = false, double chunk_ops = 0) {
  if (down_pipe <= 0) down_pipe = per_pipe;
  const double hit = ps(m.memory.l2.hit_latency);
  const double miss = hit + ps(m.memory.fabric.latency) + ps(m.memory.hbm.latency);
  const double flush = ps(m.memory.fabric.latency) + ps(m.memory.hbm.latency);
  const double launch = ps(m.launch.kernel_launch) + ps(m.launch.workgroup_dispatch);
  const double clock_ps = 1e12 / static_cast<double>(m.compute.clock.hz);
  const double lanes = m.compute.simds_per_cu * (m.compute.wave_size == 64 ? 16.0 : 32.0);
  const double pipes = std::min<double>(256 / m.compute.wave_size, m.compute.simds_per_cu);
  const double mma = (2.0 * rows * 64 * 64 / per_pipe + 2.0 * rows * 64 * 32 / down_pipe) / pipes * clock_ps;
  const double down_vec = ours ? 64 * (rows * (12 + 17) + 1 * 10) + 256 * chunk_ops : rows * 64 * 2;
  const double act = ours ? 32 * (1 * 57 + (rows - 1) * 12) : rows * 32 * 8;
  const double vec = (act + down_vec) / lanes * clock_ps;
  const double atomic = 128.0 / m.memory.l2.atomic_bytes_per_clock_per_channel * clock_ps;
  return {launch + miss + (1.0 * 8 + 1) / lanes * clock_ps + hit + flush,
          launch + miss + mma + vec + miss + atomic + flush};
}


}  // namespace

TEST_CASE("one CU, one expert, one tile: the layer time is the analytic sum", "[moe]") {
  const auto sc = tiny_scenario();
  const MachineSpec& m = sc.machine.spec;
  const plan::MoePlan p = plan::build_plan(sc);
  REQUIRE(p.kernel.stages == 1);
  REQUIRE(p.stage1.size() == 1);  // one block x one slice of I

  sim::Gpu gpu(m);
  sim::AddressSpace as;
  const auto k = sim::programs::software_moe(as, p, m);
  REQUIRE(k.kernels.size() == 2);  // sort, fused
  const auto t = gpu.run(k.kernels);

  // Memory: a store lands in L2 (write-allocate): the L2 hit latency. A cold
  // load misses: L2, fabric, HBM latencies. Kernel end writes the dirty lines
  // back: fabric and HBM latencies. Sort: load the ids, histogram/prefix/
  // scatter (8 ops a row, plus one per expert), store. Fused: every load is
  // issued at start (prologue, and the first iteration of both loops), so
  // they overlap: one miss. Then gate/up (16 x 64 x 64) and down (16 x 64 x
  // 32) on the matrix pipes of 8 warps' worth of SIMDs, then SwiGLU (8 ops) on
  // 16 x 32 and combine (2 ops) on 16 x 64, then the atomic add of the
  // token's output row: its line is fetched (a miss), then the L2 atomic unit
  // works through the row's 128 bytes. tiny_analytic spells it out.
  const TinyTimes want =
      tiny_analytic(m, isa::matrix_flops_per_clock_per_cu(m.isa, DType::bf16, 1) * m.compute.matrix_efficiency);
  const double sort = want.sort, fused = want.fused;

  const double sort_sim = static_cast<double>(t[0].end - t[0].launch);
  const double fused_sim = static_cast<double>(t[1].end - t[1].launch);
  INFO("sort: simulated " << sort_sim << " ps, analytic " << sort);
  INFO("fused: simulated " << fused_sim << " ps, analytic " << fused);
  // Rounding: each duration is rounded up to a whole picosecond, transfers at
  // the huge bandwidths take a few ps each.
  CHECK(sort_sim == Approx(sort).margin(100));
  CHECK(fused_sim == Approx(fused).margin(100));
  CHECK(static_cast<double>(t[1].end - t[0].launch) == Approx(sort + fused).margin(200));
}

namespace {
// The tiny layer run 2-stage (its down kernel adds each block's rows after its
// one K step: an epilogue's adds), with atomic units of 1 B a clock on one
// channel and `sharing`; returns the down kernel's time (launch included).
// (One machine per process: in a child, tests/sim/fork_run.h.)
double tiny_down_time(std::uint32_t tokens, AtomicSharing sharing) {
  return tdmsim::test::in_child<double>([=] {
    auto sc = tiny_scenario();
    sc.scenario.spec.kernel.stages = 2;
    sc.scenario.spec.tokens = tokens;
    sc.machine.spec.memory.l2.atomic_bytes_per_clock_per_channel = 1;
    sc.machine.spec.memory.l2.channels_per_die = 1;  // every row's line on the one unit
    sc.machine.spec.memory.l2.atomic_sharing = sharing;
    const plan::MoePlan p = plan::build_plan(sc);
    sim::Gpu gpu(sc.machine.spec);
    sim::AddressSpace as;
    const auto k = sim::programs::software_moe(as, p, sc.machine.spec);
    const auto t = gpu.run(k.kernels);
    for (std::size_t i = 0; i < k.kernels.size(); ++i) {
      if (k.kernels[i].name == "moe_down") return static_cast<double>(t[i].end - t[i].launch);
    }
    return -1.0;
  });
}

// Workgroups of the tiny layer's down kernel a CU holds.
std::uint32_t tiny_down_slots() {
  auto sc = tiny_scenario();
  sc.scenario.spec.kernel.stages = 2;
  const plan::MoePlan p = plan::build_plan(sc);
  sim::AddressSpace as;
  for (const auto& k : sim::programs::software_moe(as, p, sc.machine.spec).kernels) {
    if (k.name == "moe_down") return sim::occupancy(sc.machine.spec.compute, k.program(0)).workgroups;
  }
  return 0;
}
}  // namespace

TEST_CASE("round-robin atomic units: a second wave's matrix work no longer hides behind the first's adds",
          "[moe][atomic]") {
  // Two waves of down workgroups on the tiny layer's one CU (tokens for 2 x
  // the slots' blocks of 16 rows), the adds dominating. In arrival order
  // (fifo) the first wave's workgroups finish their adds one after another,
  // and each next workgroup's work runs while the others' adds drain; shared
  // round robin (memory.l2.atomic_sharing workgroups) every workgroup of a
  // wave finishes its adds with the last, so the second wave's work before
  // its epilogue adds to the time: no less than its matrix work, and less
  // than a lone workgroup's kernel (launch aside; a share twice too small
  // would add a whole wave of adds, more than that). A last, partial wave
  // shares the units among its own workgroups: one more workgroup than a
  // full wave costs round robin no more than it does in arrival order, give
  // or take a quarter of a wave's adds (with the full wave's share it would
  // cost half a wave's adds more).
  const std::uint32_t slots = tiny_down_slots();
  REQUIRE(slots >= 1);
  const auto base = tiny_scenario();
  const MachineSpec& m = base.machine.spec;
  const double clock_ps = 1e12 / static_cast<double>(m.compute.clock.hz);
  const double per_pipe = isa::matrix_flops_per_clock_per_cu(m.isa, DType::bf16, 1) * m.compute.matrix_efficiency;
  const double pipes = std::min<double>(256 / m.compute.wave_size, m.compute.simds_per_cu);
  const double wave_mma = slots * 2.0 * 16 * 64 * 32 / per_pipe / pipes * clock_ps;  // down: 16 x 64 x 32
  const double wave_adds = slots * 16.0 * 64 * 2 / (1.0 * m.compute.dies * static_cast<double>(m.compute.clock.hz)) * 1e12;
  const double launch = ps(m.launch.kernel_launch) + ps(m.launch.workgroup_dispatch);
  const double lone = tiny_down_time(16, AtomicSharing::fifo) - launch;
  const double fifo = tiny_down_time(2 * 16 * slots, AtomicSharing::fifo);
  const double shared = tiny_down_time(2 * 16 * slots, AtomicSharing::workgroups);
  const double fifo_more = tiny_down_time(16 * (slots + 1), AtomicSharing::fifo);
  const double shared_more = tiny_down_time(16 * (slots + 1), AtomicSharing::workgroups);
  INFO(slots << " slots; down kernel fifo " << fifo << " ps, round robin " << shared << " ps; a wave's matrix work "
             << wave_mma << " ps, a wave's adds " << wave_adds << " ps, a lone workgroup " << lone
             << " ps; one wave and one workgroup: fifo " << fifo_more << " ps, round robin " << shared_more << " ps");
  REQUIRE(lone > 0);
  REQUIRE(wave_adds > 4 * wave_mma);  // the adds dominate, as intended
  CHECK(shared - fifo >= wave_mma);
  CHECK(shared - fifo < lone);
  if (slots > 1) CHECK(shared_more - fifo_more <= shared - fifo + wave_adds / 4);
}

TEST_CASE("round-robin atomic units: a lone workgroup takes them all", "[moe][atomic]") {
  // Resident workgroups are the grid's when it is smaller than the slots: one
  // token's one down workgroup gets every unit's rate, so its line's adds
  // (128 B on the one channel) take what they take in arrival order. Shared
  // by all the CU's slots, they would take slots / dies times longer.
  REQUIRE(tiny_down_slots() > tiny_scenario().machine.spec.compute.dies);
  CHECK(tiny_down_time(1, AtomicSharing::workgroups) == Approx(tiny_down_time(1, AtomicSharing::fifo)).margin(2));
}

TEST_CASE("the LDS bandwidth bounds the tiny layer's main loops", "[moe][lds]") {
  // The same layer with an LDS of 8 bytes a clock: each main-loop iteration
  // moves its A and B operands out of the LDS (gate/up 16 + 64 rows of 64
  // bf16, down 16 + 64 rows of 32) and its tiles in, so the fused kernel
  // grows by at least the operands' LDS time less the matrix time it hides
  // behind, and by at most operands and tiles together (sim/cu/lds.h).
  // (One machine per process: each run in a child, tests/sim/fork_run.h.)
  auto fused_time = [](std::uint32_t lds_bytes_per_clock) {
    return tdmsim::test::in_child<double>([=] {
      auto sc = tiny_scenario();
      if (lds_bytes_per_clock != 0) {
        sc.machine.spec.compute.lds_bytes_per_clock = lds_bytes_per_clock;
        sc.machine.spec.compute.lds_banks = 32;
      }
      const plan::MoePlan p = plan::build_plan(sc);
      sim::Gpu gpu(sc.machine.spec);
      sim::AddressSpace as;
      const auto t = gpu.run(sim::programs::software_moe(as, p, sc.machine.spec).kernels);
      return static_cast<double>(t[1].end - t[1].launch);
    });
  };
  const auto sc = tiny_scenario();
  const MachineSpec& m = sc.machine.spec;
  const double clock_ps = 1e12 / static_cast<double>(m.compute.clock.hz);
  const double operands = (16.0 + 64) * 64 * 2 + (16.0 + 64) * 32 * 2;  // bytes
  const double per_pipe = isa::matrix_flops_per_clock_per_cu(m.isa, DType::bf16, 1) * m.compute.matrix_efficiency;
  const double pipes = std::min<double>(256 / m.compute.wave_size, m.compute.simds_per_cu);
  const double mma = (2.0 * 16 * 64 * 64 + 2.0 * 16 * 64 * 32) / per_pipe / pipes * clock_ps;
  const double wide = fused_time(0), narrow = fused_time(8);
  INFO("fused kernel: LDS unbound " << wide << " ps, 8 B a clock " << narrow << " ps, matrix " << mma << " ps");
  CHECK(narrow - wide >= operands / 8 * clock_ps - mma);
  CHECK(narrow - wide <= 2 * operands / 8 * clock_ps);
}

TEST_CASE("one CU, one expert, one tile on the TDM path: descriptor fetch and decode replace the launch", "[moe][tdm]") {
  auto sc = tiny_scenario();
  MachineSpec& m = sc.machine.spec;
  TdmSpec tdm;
  tdm.descriptor_fetch_latency = units::Duration{1'000'000};  // 1 us: longer than the memory read
  tdm.decode_latency = units::Duration{50'000};
  tdm.slots = 16;
  tdm.slot_length = units::Duration{4'000'000};
  tdm.queue_depth = 4;
  tdm.dispatch_latency = units::Duration{100'000};
  tdm.movers_per_cu = 1;
  tdm.mover_bytes_per_clock = 128;
  tdm.default_policy = TdmPolicy::load_balance;
  m.tdm = tdm;
  const plan::MoePlan p = plan::build_plan(sc);
  sim::Gpu gpu(m);
  sim::AddressSpace as;
  const auto k = sim::programs::tdm_moe(as, p, m);
  REQUIRE(k.kernels.size() == 2);
  REQUIRE(k.kernels[1].hardware != nullptr);
  const auto t = gpu.run(k.kernels);

  const double hit = ps(m.memory.l2.hit_latency);
  const double miss = hit + ps(m.memory.fabric.latency) + ps(m.memory.hbm.latency);
  const double flush = ps(m.memory.fabric.latency) + ps(m.memory.hbm.latency);
  const double clock_ps = 1e12 / static_cast<double>(m.compute.clock.hz);
  const double lanes = m.compute.simds_per_cu * (m.compute.wave_size == 64 ? 16.0 : 32.0);
  const double pipes = std::min<double>(256 / m.compute.wave_size, m.compute.simds_per_cu);
  const double per_pipe = isa::matrix_flops_per_clock_per_cu(m.isa, DType::bf16, 1) * m.compute.matrix_efficiency;
  const double mma = (2.0 * 16 * 64 * 64 + 2.0 * 16 * 64 * 32) / (per_pipe * pipes) * clock_ps;
  const double vec = (16.0 * 32 * 8 + 16.0 * 64 * 2) / lanes * clock_ps;
  // The token row (128 B) reaches LDS through the mover in 128 B / (128 B/clk)
  // = one clock, well inside the miss: the miss decides.
  const double unit = ps(tdm.descriptor_fetch_latency) + ps(tdm.decode_latency) + ps(tdm.dispatch_latency);
  const double atomic = 128.0 / m.memory.l2.atomic_bytes_per_clock_per_channel * clock_ps;
  const double fused = unit + miss + mma + vec + miss + atomic + flush;
  const double sim = static_cast<double>(t[1].end - t[1].launch);
  INFO("tdm fused: simulated " << sim << " ps, analytic " << fused);
  CHECK(t[1].launch == t[0].end);  // the doorbell rings when the sort is done
  CHECK(sim == Approx(fused).margin(100));
}

TEST_CASE("the TDM policies order jobs as documented", "[tdm]") {
  const fs::path root = fs::path(TDMSIM_SOURCE_DIR) / "workloads";
  const config::Loader loader({root});
  const auto m = loader.machine(root / "machines/mi500x-tdm.yaml").spec;
  sim::StatRegistry stats;
  sim::Dispatcher d("dispatcher", 0, 0, 1, 1, WorkgroupOrder::index, stats);
  sim::TdmScheduler unit("tdm", m, d, stats, nullptr);
  // Expert 0: 1 block x 2 N tiles; expert 1: 2 blocks x 2 N tiles (block-major).
  isa::KernelLaunch k;
  k.workgroups = 6;
  auto hw = std::make_shared<isa::HardwareDispatch>();
  hw->block = {0, 0, 1, 1, 2, 2};
  hw->n_tile = {0, 1, 0, 1, 0, 1};
  k.hardware = hw;
  // The decoded descriptor: one slot record per block, in block order.
  format::MoeDescriptor desc;
  for (std::uint32_t b = 0; b < 3; ++b) {
    format::TimeSlot s;
    s.expert = b == 0 ? 0 : 1;
    s.block = b;
    s.valid_rows = 1;
    s.length = static_cast<std::uint32_t>(m.tdm->slot_length.ps / 1000);
    desc.slots.push_back(s);
  }
  auto order = [&](TdmPolicy policy) {
    desc.layer.policy = policy;
    return unit.place(k, &desc, 2).order;
  };
  using V = std::vector<std::uint32_t>;
  CHECK(order(TdmPolicy::custom) == V{0, 1, 2, 3, 4, 5});
  // Busiest expert first, N tile by N tile across its blocks.
  CHECK(order(TdmPolicy::capacity_first) == V{2, 4, 3, 5, 0, 1});
  CHECK(order(TdmPolicy::load_balance) == V{2, 0, 4, 1, 3, 5});
  CHECK(order(TdmPolicy::low_latency) == V{0, 1, 2, 4, 3, 5});
  // Two jobs per slot: releases step by slot_length; low_latency releases all at once.
  desc.layer.policy = TdmPolicy::capacity_first;
  const auto plan = unit.place(k, &desc, 2);
  CHECK(plan.release[1] == 0);
  CHECK(plan.release[2] == m.tdm->slot_length.ps);
  CHECK(plan.release[5] == 2 * m.tdm->slot_length.ps);
  desc.layer.policy = TdmPolicy::low_latency;
  CHECK(unit.place(k, &desc, 2).release[5] == 0);
}

TEST_CASE("no shipped scenario's software path beats its physical floor (small ones here)", "[moe]") {
  // The CLI test moe.floor.* runs every shipped scenario; this one checks the
  // floor arithmetic on a layer computed by hand: 1 token, 8 experts of
  // qwen3-30b (H 2048, I 768, bf16) on h200.
  const auto sc = source_scenario("workloads/scenarios/qwen3-30b-decode-h200.yaml");
  const plan::MoePlan p = plan::build_plan(sc);
  const auto f = sim::programs::moe_floor(p, sc.machine.spec);
  const double weights = 8.0 * 3 * 2048 * 768 * 2;
  CHECK(f.weight_bytes == Approx(weights));
  CHECK(f.flops == Approx(6.0 * 8 * 2048 * 768));
  CHECK(f.memory_s == Approx((weights + 2048.0 * (2 + 2)) / 4.8e12));
  sim::Gpu gpu(sc.machine.spec);
  sim::AddressSpace as;
  const auto t = gpu.run(sim::programs::software_moe(as, p, sc.machine.spec).kernels);
  CHECK(static_cast<double>(t.back().end - t.front().launch) * 1e-12 > f.seconds());
}

TEST_CASE("kernels.sort_overhead adds exactly its time to the sort", "[moe]") {
  // The AITER-like sort (matrix_instructions isa): one kernel, as computed by hand.
  auto sc = tiny_scenario();
  MachineSpec& m = sc.machine.spec;
  m.kernels.sort_overhead = units::Duration{5'000'000};
  const plan::MoePlan p = plan::build_plan(sc);
  sim::Gpu gpu(m);
  sim::AddressSpace as;
  const auto k = sim::programs::software_moe(as, p, m);
  REQUIRE(k.stage == std::vector<std::string>{"sort", "fused"});
  const auto t = gpu.run(k.kernels);
  const TinyTimes want =
      tiny_analytic(m, isa::matrix_flops_per_clock_per_cu(m.isa, DType::bf16, 1) * m.compute.matrix_efficiency);
  CHECK(static_cast<double>(t[0].end - t[0].launch) == Approx(want.sort + 5e6).margin(100));
}

TEST_CASE("our sort's overhead sits on its single workgroup, mma_sync charges the measured rate", "[moe]") {
  // Our kernels: a layer of a few rows sorts in kernels/moe/sort.hip's one
  // kernel (one workgroup), which carries the one-kernel path's own overhead
  // (kernels.sort_one_overhead), not the four kernels' (sort_overhead); with
  // more rows than one chunk, the four kernels' scan workgroup carries
  // sort_overhead (the test below).
  auto sc = tiny_scenario();
  MachineSpec& m = sc.machine.spec;
  m.kernels.sort_overhead = units::Duration{7'000'000};
  m.kernels.sort_one_overhead = units::Duration{5'000'000};
  m.kernels.matrix_instructions = MatrixInstructions::mma_sync;
  const double mma_rate = 2.0 * 16 * 16 * 64 / 55;  // isa/matrix_table.cpp, measured
  CHECK(isa::kernel_matrix_flops_per_clock_per_simd(m, DType::bf16) == Approx(mma_rate));
  const plan::MoePlan p = plan::build_plan(sc);
  sim::Gpu gpu(m);
  sim::AddressSpace as;
  const auto k = sim::programs::software_moe(as, p, m);
  REQUIRE(k.stage == std::vector<std::string>{"sort", "fused"});
  CHECK(k.kernels[0].name == "moe_sort_one");
  CHECK(k.kernels[0].workgroups == 1);
  CHECK(k.kernels[0].program(0).extra_time_ps == 5'000'000);
  const auto t = gpu.run(k.kernels);
  REQUIRE(p.stage1.at(0).valid_rows == 1);
  CHECK(static_cast<double>(t[0].end - t[0].start) > 5e6);
  // The down chunk's other instructions: a copy (21), the loop (8), two wmma
  // K steps of a 1 x 1 fragment warp (2 x (2 x 10 + 2)), zero and store (18).
  const TinyTimes want = tiny_analytic(m, mma_rate * m.compute.matrix_efficiency, 0, 16, true, 21 + 8 + 44 + 18);
  CHECK(static_cast<double>(t[1].end - t[1].launch) == Approx(want.fused).margin(100));
}

TEST_CASE("our sort (sort.hip) grows with the rows: a serial scan over chunks of 1024, warps placing in turn", "[moe]") {
  // h200 runs our kernels: the sort stage's time rises with the routed rows
  // (more chunks for scan_kernel's chain of round trips), the scan kernel is
  // one workgroup walking ceil(E / 256) x chunks counts, and place_kernel's
  // workgroups wait one L2 round trip per warp with a row.
  auto sc = source_scenario("workloads/scenarios/qwen3-30b-decode-h200.yaml");
  const MachineSpec& m = sc.machine.spec;
  REQUIRE(m.kernels.matrix_instructions != MatrixInstructions::isa);
  sim::Gpu gpu(m);  // one simulation per process: the layers run one after another
  double last = 0;
  for (std::uint32_t tokens : {16u, 512u, 4096u, 16384u}) {
    sc.scenario.spec.tokens = tokens;
    const plan::MoePlan p = plan::build_plan(sc);
    sim::AddressSpace as;
    const auto all = sim::programs::software_moe(as, p, m);
    const std::size_t s = kernel_of(all, "sort");
    if (tokens == 16) {  // 128 rows: the one-kernel sort (the test below)
      REQUIRE(all.kernels[s].name == "moe_sort_one");
      const auto t = gpu.run({all.kernels[s]});
      last = static_cast<double>(t[0].end - t[0].launch);
      continue;
    }
    REQUIRE(all.kernels[s + 2].name == "moe_sort_scan");
    CHECK(all.kernels[s + 2].program(0).extra_time_ps == m.kernels.sort_overhead.ps);
    for (std::size_t i : {0u, 1u, 3u}) CHECK(all.kernels[s + i].program(0).extra_time_ps == 0);
    const std::uint64_t rows = std::uint64_t{tokens} * p.shape.slots();
    const std::uint64_t chunks = (rows + 1023) / 1024;
    CHECK(all.kernels[s + 1].workgroups == chunks);  // count
    CHECK(all.kernels[s + 3].workgroups == chunks);  // place
    CHECK(all.kernels[s + 2].workgroups == 1);
    CHECK(all.kernels[s + 2].program(0).iterations() == chunks * ((p.shape.experts_fused() + 255) / 256));
    CHECK(all.kernels[s + 2].program(0).pipeline_depth == 1);
    const auto place = all.kernels[s + 3].program(0);
    REQUIRE(place.loops.size() == 1);
    CHECK(place.loops[0].iterations == std::min<std::uint64_t>(32, (rows + 31) / 32));
    CHECK(place.loops[0].wait_ps == m.memory.l2.hit_latency.ps);
    const std::vector<isa::KernelLaunch> sort(all.kernels.begin() + static_cast<std::ptrdiff_t>(s),
                                              all.kernels.begin() + static_cast<std::ptrdiff_t>(s) + 4);
    const auto t = gpu.run(sort);
    const double took = static_cast<double>(t[3].end - t[0].launch);
    CHECK(took > last);
    last = took;
  }
}

TEST_CASE("our sort is one kernel up to 1024 rows and four beyond, the one kernel's instructions", "[moe]") {
  // sort.hip launch_sort: rows (tokens x slots) that fit one chunk of 1024 sort
  // in one workgroup (sort_one_kernel), more in fuse, count, scan and place.
  auto sc = source_scenario("workloads/scenarios/qwen3-30b-decode-h200.yaml");
  const MachineSpec& m = sc.machine.spec;
  REQUIRE(m.kernels.matrix_instructions != MatrixInstructions::isa);
  CHECK(sim::programs::sort_one_kernel(1024, 128));
  CHECK_FALSE(sim::programs::sort_one_kernel(1025, 128));
  CHECK_FALSE(sim::programs::sort_one_kernel(8, 1025));
  for (std::uint32_t tokens : {1u, 128u, 129u, 4096u}) {
    sc.scenario.spec.tokens = tokens;
    const plan::MoePlan p = plan::build_plan(sc);
    const std::uint64_t rows = std::uint64_t{tokens} * p.shape.slots();  // 8 slots: 8 .. 32768
    sim::AddressSpace as;
    const auto k = sim::programs::software_moe(as, p, m);
    const auto sorts = std::count(k.stage.begin(), k.stage.end(), std::string("sort"));
    INFO("tokens " << tokens << ", rows " << rows);
    if (rows <= 1024) {
      REQUIRE(sorts == 1);
      const auto& one = k.kernels[kernel_of(k, "sort")];
      CHECK(one.name == "moe_sort_one");
      CHECK(one.workgroups == 1);
      const auto prog = one.program(0);
      // A thread per row and per expert, >= capacity / 8, a multiple of 32, <= 1024.
      const std::uint64_t want_threads = std::min<std::uint64_t>(
          1024, (std::max<std::uint64_t>({rows, p.shape.experts_fused(), (p.layout.capacity + 7) / 8}) + 31) / 32 * 32);
      CHECK(prog.threads == want_threads);
      CHECK(prog.epilogue_issue_bound);
      CHECK(prog.extra_time_ps == m.kernels.sort_one_overhead.ps);  // its own, not the four kernels'
      CHECK(m.kernels.sort_one_overhead.ps != m.kernels.sort_overhead.ps);
      CHECK(prog.loops.empty());  // no turn waits for a load
      CHECK(prog.epilogue_vector_ops % prog.threads == 0);
      // The phases' instructions per thread: fixed ones plus the fill passes
      // and the turns (sim/programs/moe_program_common.h kSortOne*).
      const std::uint64_t per_thread = prog.epilogue_vector_ops / prog.threads;
      const std::uint64_t passes = (p.layout.capacity + prog.threads - 1) / prog.threads, turns = (rows + 31) / 32;
      CHECK(per_thread >= 30 + 8 * passes + 8 + 140 + 4 + 128 + 5 * turns + 18);
    } else {
      REQUIRE(sorts == 4);
      const std::size_t s = kernel_of(k, "sort");
      CHECK(k.kernels[s].name == "moe_sort_fuse");
      CHECK(k.kernels[s + 3].name == "moe_sort_place");
      CHECK(k.kernels[s + 1].workgroups == (rows + 1023) / 1024);
    }
  }
}

TEST_CASE("kernels: fp8 through f16 on mma_sync, the floor keeps the ISA's fp8 peak", "[moe]") {
  auto sc = tiny_scenario();
  MachineSpec& m = sc.machine.spec;
  m.kernels.matrix_instructions = MatrixInstructions::mma_sync;
  CHECK(isa::kernel_matrix_flops_per_clock_per_simd(m, DType::fp8_e4m3) == Approx(2.0 * 16 * 16 * 128 / 43));
  CHECK(isa::kernel_matrix_dtype(m, DType::fp8_e4m3) == DType::fp8_e4m3);
  m.kernels.fp8_operands = Fp8Operands::f16;
  CHECK(isa::kernel_matrix_dtype(m, DType::fp8_e4m3) == DType::fp16);
  CHECK(isa::kernel_matrix_dtype(m, DType::bf16) == DType::bf16);
  CHECK(isa::matrix_dtype(m, DType::fp8_e4m3) == DType::fp8_e4m3);
}

TEST_CASE("kernels.combine fp32: a clearing kernel first, 4-byte output elements", "[moe]") {
  auto sc = tiny_scenario();
  MachineSpec& m = sc.machine.spec;
  m.kernels.combine = CombineType::fp32;
  const plan::MoePlan p = plan::build_plan(sc);
  sim::AddressSpace as;
  const auto k = sim::programs::software_moe(as, p, m);
  REQUIRE(k.stage == std::vector<std::string>{"zero_out", "sort", "fused"});
  std::uint64_t cleared = 0;
  for (std::uint32_t wg = 0; wg < k.kernels[0].workgroups; ++wg) {
    for (const auto& st : k.kernels[0].program(wg).stores) cleared += st.bytes();
  }
  CHECK(cleared == std::uint64_t{sc.scenario.spec.tokens} * 64 * 4);
  const auto fused = k.kernels[2].program(0);
  REQUIRE(fused.stores.size() == 1);
  CHECK(fused.stores[0].atomic);
  CHECK(fused.stores[0].row_bytes == 64 * 4);
}

TEST_CASE("kernels.combine reduce: down stores every (token, slot) row, a sum and a copy follow", "[moe]") {
  auto sc = tiny_scenario();
  MachineSpec& m = sc.machine.spec;
  m.kernels.combine = CombineType::reduce;
  sc.scenario.spec.kernel.stages = 2;
  const plan::MoePlan p = plan::build_plan(sc);
  sim::AddressSpace as;
  const auto k = sim::programs::software_moe(as, p, m);
  REQUIRE(k.stage == std::vector<std::string>{"sort", "gate_up", "down", "combine", "combine"});
  const std::uint64_t hidden = sc.model.spec.hidden_size;
  const std::uint64_t rows = std::uint64_t{sc.scenario.spec.tokens} * p.shape.slots();
  // The down kernel: plain stores, one per routed row, no atomics.
  std::uint64_t stored = 0;
  for (std::uint32_t wg = 0; wg < k.kernels[2].workgroups; ++wg) {
    for (const auto& st : k.kernels[2].program(wg).stores) {
      CHECK_FALSE(st.atomic);
      stored += st.bytes();
    }
  }
  CHECK(stored == rows * hidden * 2);
  // The sum reads them all once and writes one row per token; the copy moves those rows.
  const auto moved = [&](std::size_t i) {
    std::uint64_t in = 0, out = 0;
    for (std::uint32_t wg = 0; wg < k.kernels[i].workgroups; ++wg) {
      const auto prog = k.kernels[i].program(wg);
      for (const auto& ld : prog.prologue_loads) in += ld.bytes();
      for (const auto& st : prog.stores) out += st.bytes();
    }
    return std::pair{in, out};
  };
  CHECK(moved(3) == std::pair{rows * hidden * 2, std::uint64_t{sc.scenario.spec.tokens} * hidden * 2});
  CHECK(moved(4) == std::pair{std::uint64_t{sc.scenario.spec.tokens} * hidden * 2,
                              std::uint64_t{sc.scenario.spec.tokens} * hidden * 2});
  // A 1-stage layer keeps its atomic combine.
  sc.scenario.spec.kernel.stages = 1;
  const auto k1 = sim::programs::software_moe(as, plan::build_plan(sc), m);
  REQUIRE(k1.stage == std::vector<std::string>{"sort", "fused"});
  CHECK(k1.kernels[1].program(0).stores.back().atomic);
}

TEST_CASE("kernels.fp8_intermediate kernel: gate/up stores bf16, one workgroup per padded row between the stages", "[moe]") {
  auto sc = tiny_scenario();
  MachineSpec& m = sc.machine.spec;
  sc.model.spec.intermediate_size = 256;
  sc.scenario.spec.dtype = DType::fp8_e4m3;
  sc.scenario.spec.quant = Quant::per_token;
  sc.scenario.spec.kernel.stages = 2;
  m.kernels.fp8_intermediate = Fp8Intermediate::kernel;
  const plan::MoePlan p = plan::build_plan(sc);
  sim::AddressSpace as;
  const auto k = sim::programs::software_moe(as, p, m);
  REQUIRE(k.stage == std::vector<std::string>{"sort", "gate_up", "quant_inter", "down"});
  CHECK(k.kernels[2].workgroups == p.layout.padded_rows);
  const auto real = k.kernels[2].program(0);  // row 0 is the token's
  REQUIRE(real.prologue_loads.size() == 1);  // its id
  // per_token: one scale group, two dependent passes over it, each a round
  // trip carrying half the bf16 row.
  REQUIRE(real.loops.size() == 1);
  CHECK(real.loops[0].iterations == 2);
  CHECK(real.pipeline_depth == 1);
  CHECK(real.loops[0].loads.at(0).row_bytes * real.loops[0].iterations == 256 * 2);  // bf16 in
  CHECK(real.loops[0].vector_ops == (256 * (8 + 43) + 256 * 50) / 2);
  CHECK(real.stores.at(0).row_bytes == 256);  // e4m3 out
  CHECK(k.kernels[2].program(p.layout.padded_rows - 1).stores.empty());  // a padding row
  const auto gate_up = k.kernels[1].program(0);
  CHECK(gate_up.stores.at(0).row_bytes == gate_up.loops.at(0).n / 2 * 2);  // bf16 columns
  // Without the kernel the epilogue quantises: gate/up stores e4m3, no kernel between.
  m.kernels.fp8_intermediate = Fp8Intermediate::epilogue;
  sim::AddressSpace as2;
  const auto k2 = sim::programs::software_moe(as2, p, m);
  CHECK(k2.stage == std::vector<std::string>{"sort", "gate_up", "down"});
  CHECK(k2.kernels[1].program(0).stores.at(0).row_bytes == gate_up.loops.at(0).n / 2);
}

TEST_CASE("kernels.matrix_instructions wgmma: 64-row tiles run wgmma at the ISA's rate times wgmma_efficiency", "[moe]") {
  auto sc = tiny_scenario();
  MachineSpec& m = sc.machine.spec;
  m.kernels.matrix_instructions = MatrixInstructions::wgmma;
  auto& k = sc.scenario.spec.kernel;
  k.block_m = 64;
  k.gate_up_tile = {256, 64, 64, 64};  // bf16 K 64: 128-byte rows; 32 columns per warpgroup
  k.down_tile = {256, 64, 64, 64};
  const plan::MoePlan p = plan::build_plan(sc);
  REQUIRE(plan::wgmma_tile(m, p.kernel.gate_up_tile, DType::bf16));
  CHECK(p.kernel.pipeline_stages >= plan::kWgmmaMinStages);
  m.kernels.wgmma_efficiency = 0.5;
  sim::Gpu gpu(m);
  sim::AddressSpace as0;
  const auto kernels = sim::programs::software_moe(as0, p, m);
  REQUIRE(kernels.stage == std::vector<std::string>{"sort", "fused"});  // one-kernel sort
  const auto prog0 = kernels.kernels[1].program(0);
  REQUIRE(prog0.loops.size() == 2);
  CHECK(prog0.loops[0].wgmma);        // gate/up: the 64-row tile
  CHECK_FALSE(prog0.loops[1].wgmma);  // the fused kernel's own down loop: mma.sync
  const auto t = gpu.run(kernels.kernels);
  // Gate/up on the ISA's wgmma rate (1024 FLOP per clock per sub-partition,
  // isa/matrix_table.cpp) times wgmma_efficiency, down on the measured
  // mma.sync rate times matrix_efficiency; 64 rows.
  const double wgmma_rate = isa::matrix_flops_per_clock_per_cu(m.isa, DType::bf16, 1);
  CHECK(wgmma_rate == Approx(1024));
  const double ce = m.compute.matrix_efficiency;
  // The down chunk (64 rows: 2 x 1 fragments a warp): a copy, the loop, two
  // wmma K steps (2 x (3 x 10 + 4)), zero and store (2 x 18).
  const TinyTimes want = tiny_analytic(m, wgmma_rate * 0.5 * ce,
                                       2.0 * 16 * 16 * 64 / 55 * m.kernels.matrix_efficiency * ce, 64, true,
                                       21 + 8 + 68 + 36);
  CHECK(static_cast<double>(t[1].end - t[1].launch) == Approx(want.fused).margin(100));
  // 8-bit layers: the wgmma loop multiplies e4m3 as it is, the mma.sync loop through f16.
  m.kernels.fp8_operands = Fp8Operands::f16;
  sc.scenario.spec.dtype = DType::fp8_e4m3;
  sc.scenario.spec.quant = Quant::per_token;
  k.gate_up_tile = k.down_tile = {256, 64, 64, 128};  // 128-byte rows of e4m3
  const plan::MoePlan p8 = plan::build_plan(sc);
  sim::AddressSpace as;
  const auto k8 = sim::programs::software_moe(as, p8, m);
  const auto prog = k8.kernels[kernel_of(k8, "fused")].program(0);
  CHECK(prog.loops[0].wgmma);
  CHECK(prog.loops[0].dtype == DType::fp8_e4m3);
  CHECK(prog.loops[1].dtype == DType::fp16);
  // The 8-bit wgmma loop waits kernels.wgmma_fp8_tile_wait per K tile; the
  // down phase (mma.sync) and bf16 wgmma loops do not.
  CHECK(prog.loops[0].wait_ps == 0);
  m.kernels.wgmma_fp8_tile_wait = units::Duration{250'000};
  sim::AddressSpace as3;
  const auto k3 = sim::programs::software_moe(as3, p8, m);
  const auto prog3 = k3.kernels[kernel_of(k3, "fused")].program(0);
  CHECK(prog3.loops[0].wait_ps == 250'000);
  CHECK(prog3.loops[1].wait_ps == 0);
  sim::AddressSpace as4;
  const auto k4 = sim::programs::software_moe(as4, p, m);
  CHECK(k4.kernels[kernel_of(k4, "fused")].program(0).loops[0].wait_ps == 0);
}

TEST_CASE("kernels.warp_specialized: 384-thread tiles run wgmma at wgmma_ws_efficiency, the others at wgmma_efficiency", "[moe]") {
  auto sc = tiny_scenario();
  MachineSpec& m = sc.machine.spec;
  m.kernels.matrix_instructions = MatrixInstructions::wgmma;
  m.kernels.warp_specialized = true;
  m.kernels.wgmma_efficiency = 0.5;
  m.kernels.wgmma_ws_efficiency = 1.0;
  sc.model.spec.intermediate_size = 64;  // one N tile of 128 (64 gate + 64 up columns)
  auto& k = sc.scenario.spec.kernel;
  k.stages = 2;
  k.block_m = 128;
  const KernelTile ws{384, 128, 128, 64}, plain{256, 128, 128, 64};
  REQUIRE(plan::ws_tile(m, ws, DType::bf16));
  REQUIRE(plan::wgmma_tile(m, ws, DType::bf16));
  REQUIRE_FALSE(plan::ws_tile(m, plain, DType::bf16));
  // The same layer twice in one run (one simulation a process), once on each
  // tile, at distinct addresses so that both start cold.
  sim::AddressSpace as;
  std::vector<sim::programs::MoeKernels> layers;
  for (const KernelTile& tile : {ws, plain}) {
    k.gate_up_tile = k.down_tile = tile;
    layers.push_back(sim::programs::software_moe(as, plan::build_plan(sc), m));
    // Our sort (kernels.matrix_instructions not isa), one kernel at these rows.
    REQUIRE(layers.back().stage == std::vector<std::string>{"sort", "gate_up", "down"});
  }
  const std::size_t gu0 = kernel_of(layers[0], "gate_up"), gu1 = layers[0].kernels.size() + kernel_of(layers[1], "gate_up");
  const auto prog_ws = layers[0].kernels[gu0].program(0), prog_plain = layers[1].kernels[kernel_of(layers[1], "gate_up")].program(0);
  CHECK(prog_ws.loops[0].wgmma);
  CHECK(prog_ws.loops[0].ws);
  CHECK(prog_plain.loops[0].wgmma);
  CHECK_FALSE(prog_plain.loops[0].ws);
  CHECK(prog_ws.threads == 384);
  CHECK(prog_ws.vgprs_per_thread == 168);  // __launch_bounds__(384, 1): one workgroup an SM
  std::vector<isa::KernelLaunch> all;
  for (const auto& l : layers) all.insert(all.end(), l.kernels.begin(), l.kernels.end());
  sim::Gpu gpu(m);
  const auto t = gpu.run(all);
  // Gate/up is one K tile (load, then multiply), then the epilogue: the two
  // kernels differ by their matrix time, 128 x 128 x 64 at the wgmma rate
  // times 1.0 and times 0.5 on the CU's 4 matrix pipes, and by their
  // epilogues (the persistent kernel's on every row, 19 instructions an
  // element; gate_up_kernel's on the real rows, 67), on the vector pipe
  // here (warp_issue_cycles 0: issue not modelled).
  REQUIRE(m.kernels.warp_issue_cycles == 0);
  const double gu_ws = static_cast<double>(t[gu0].end - t[gu0].launch);
  const double gu_plain = static_cast<double>(t[gu1].end - t[gu1].launch);
  const double rate = isa::matrix_flops_per_clock_per_cu(m.isa, DType::bf16, 1) * m.compute.matrix_efficiency;
  const double clock_ps = 1e12 / static_cast<double>(m.compute.clock.hz);
  const double one = 2.0 * 128 * 128 * 64 / rate / m.compute.simds_per_cu * clock_ps;
  CHECK(prog_ws.epilogue_vector_ops == 128u * 64 * 19);
  CHECK(prog_ws.epilogue_threads == 256);
  const double epilogues = (static_cast<double>(prog_plain.epilogue_vector_ops) -
                            static_cast<double>(prog_ws.epilogue_vector_ops)) /
                           m.compute.vector_lanes() * clock_ps;
  INFO("gate/up: warp-specialized " << gu_ws << " ps, 256 threads " << gu_plain << " ps");
  CHECK(gu_plain - gu_ws == Approx(2 * one - one + epilogues).margin(8));
  // Without kernels.warp_specialized a 384-thread tile is no wgmma tile.
  m.kernels.warp_specialized = false;
  CHECK_FALSE(plan::wgmma_tile(m, ws, DType::bf16));
}

TEST_CASE("kernels.fp8_conversions_per_clock: fp8 mma.sync loops put their f16 conversions on the vector pipe", "[moe]") {
  auto sc = tiny_scenario();
  MachineSpec& m = sc.machine.spec;
  m.kernels.matrix_instructions = MatrixInstructions::mma_sync;
  m.kernels.fp8_operands = Fp8Operands::f16;
  m.kernels.fp8_conversions_per_clock = 32;
  sc.scenario.spec.dtype = DType::fp8_e4m3;
  sc.scenario.spec.quant = Quant::per_token;
  auto& k = sc.scenario.spec.kernel;
  k.gate_up_tile = k.down_tile = {256, 16, 64, 128};
  sc.model.spec.hidden_size = 128;
  const plan::MoePlan p = plan::build_plan(sc);
  // 16x64 tile: one fragment row, four columns -> a 1 x 4 warp grid; each warp
  // converts its 16 A rows and 16 B rows of the 128-deep K tile, in pairs:
  // A 16 x 4 warps + B 64 x 1 = 128 rows x 64 pairs = 8192 conversions, at
  // 32 per clock on 128 vector lanes = 4 lane operations each.
  const double lanes = m.compute.simds_per_cu * (m.compute.wave_size == 64 ? 16.0 : 32.0);
  sim::AddressSpace as;
  const auto kf = sim::programs::software_moe(as, p, m);
  const auto prog = kf.kernels[kernel_of(kf, "fused")].program(0);
  REQUIRE(prog.loops.size() == 2);
  CHECK(prog.loops[0].vector_ops == static_cast<std::uint64_t>(8192 * lanes / 32));
  // The conversions are a unit's throughput, beside the matrix work; the down
  // phase's and the epilogue's are the warps' own instructions (issue-bound).
  CHECK_FALSE(prog.loops[0].vector_issue_bound);
  CHECK(prog.loops[1].vector_issue_bound);
  CHECK(prog.epilogue_issue_bound);
  // The 1-stage kernel's down phase converts in LDS (17 operations an element of
  // its 64 x 32 down rows) and scans its 16 x 64 product (12 an element and the
  // 17 the Nsight Compute count adds, +10 for the real row's), after the product.
  // Plus per thread the chunk's copy, loop, wmma and store (21 + 8 + 44 + 18).
  CHECK(prog.loops[1].vector_ops == 64 * (32 * 17 + 16 * (12 + 17) + 1 * 10) + 256 * (21 + 8 + 44 + 18));
  CHECK(prog.loops[1].vector_after_matrix);
  // Not modelled when the rate is 0 (the default), nor for bf16.
  m.kernels.fp8_conversions_per_clock = 0;
  sim::AddressSpace as2;
  const auto k2 = sim::programs::software_moe(as2, p, m);
  CHECK(k2.kernels[kernel_of(k2, "fused")].program(0).loops[0].vector_ops == 0);
}

TEST_CASE("kernels.warp_issue_cycles: a workgroup's own vector instructions take at least that many cycles each per warp", "[moe]") {
  // One workgroup with 256 000 element operations of epilogue: at the pipe's
  // rate (128 lanes) 2000 cycles. Issue-bound at 16 cycles per instruction:
  // 256 threads do 1000 instructions each, 16 000 cycles; 1024 threads 250
  // each, 4000 cycles; 1024 threads of which 512 issue the epilogue
  // (epilogue_threads, a warp-specialized kernel's consumers) 500 each, 8000
  // cycles. Work not marked as the workgroup's own: the pipe's.
  auto sc = tiny_scenario();
  MachineSpec& m = sc.machine.spec;
  m.kernels.warp_issue_cycles = 16;
  sim::Gpu gpu(m);
  const auto kernel = [](std::uint32_t threads, bool bound, std::uint32_t issuing = 0) {
    isa::KernelLaunch k;
    k.name = "epilogue";
    k.workgroups = 1;
    k.program = [threads, bound, issuing](std::uint32_t) {
      isa::TileProgram p;
      p.threads = threads;
      p.vgprs_per_thread = 16;
      p.epilogue_vector_ops = 256'000;
      p.epilogue_issue_bound = bound;
      p.epilogue_threads = issuing;
      return p;
    };
    return k;
  };
  const double lanes = m.compute.simds_per_cu * (m.compute.wave_size == 64 ? 16.0 : 32.0);
  REQUIRE(lanes == 128);
  const auto t = gpu.run({kernel(256, false), kernel(256, true), kernel(1024, true), kernel(1024, true, 512)});
  const auto took = [&](std::size_t i) { return static_cast<double>(t[i].end - t[i].start); };
  const double cycle_ps = 1e12 / static_cast<double>(m.compute.clock.hz);
  CHECK(took(1) - took(0) == Approx((16000 - 2000) * cycle_ps).margin(2));
  CHECK(took(2) - took(0) == Approx((4000 - 2000) * cycle_ps).margin(2));
  CHECK(took(3) - took(0) == Approx((8000 - 2000) * cycle_ps).margin(2));
}

TEST_CASE("our NVIDIA main loops keep stages - 2 K tiles in flight (warp-specialized: stages - 1)", "[moe]") {
  // kernels/moe/fused_moe.hip: gemm_core_mma issues tile t + stages - 1 after
  // tile t's products, gemm_core_wgmma issues tile t + stages - 2 at tile t's
  // start, the warp-specialized producer (WsPipe) refills a buffer once it is released.
  auto sc = tiny_scenario();
  MachineSpec& m = sc.machine.spec;
  m.kernels.matrix_instructions = MatrixInstructions::wgmma;
  m.kernels.warp_specialized = true;
  sc.model.spec.intermediate_size = 64;
  auto& k = sc.scenario.spec.kernel;
  k.stages = 2;
  const auto depths = [&](std::uint32_t block_m, const KernelTile& tile, std::uint32_t stages) {
    k.block_m = block_m;
    k.gate_up_tile = k.down_tile = tile;
    k.pipeline_stages = stages;
    const plan::MoePlan p = plan::build_plan(sc);
    sim::AddressSpace as;
    const auto ks = sim::programs::software_moe(as, p, m);
    const auto gu = ks.kernels[kernel_of(ks, "gate_up")].program(0).pipeline_depth;
    CHECK(ks.kernels[kernel_of(ks, "down")].program(0).pipeline_depth == gu);
    return gu;
  };
  const KernelTile mma{256, 16, 64, 64}, wgmma{256, 64, 64, 64}, ws{384, 128, 128, 64};
  REQUIRE_FALSE(plan::wgmma_tile(m, mma, DType::bf16));
  REQUIRE(plan::wgmma_tile(m, wgmma, DType::bf16));
  REQUIRE(plan::ws_tile(m, ws, DType::bf16));
  CHECK(depths(16, mma, 2) == 1);  // none in flight in the kernel; the model's minimum
  CHECK(depths(16, mma, 3) == 1);
  CHECK(depths(16, mma, 4) == 2);
  CHECK(depths(64, wgmma, 3) == 1);
  CHECK(depths(64, wgmma, 4) == 2);
  CHECK(depths(128, ws, 4) == 3);
  // Other kernels (kernels.matrix_instructions isa): one per buffer, as before.
  m.kernels = aiter_style_kernels(m);
  CHECK(depths(16, mma, 3) == 3);
}

TEST_CASE("a latency-bound mma.sync main loop with 3 buffers waits one round trip per K tile", "[moe]") {
  // 8 K tiles of gate/up, each tile's weight lines new (an HBM miss), almost
  // no math: with one tile in flight (3 buffers on mma.sync) each waits a
  // whole round trip after the previous tile's start; with 5 buffers (3 in
  // flight) three round trips overlap.
  auto sc = tiny_scenario();
  MachineSpec& m = sc.machine.spec;
  m.kernels.matrix_instructions = MatrixInstructions::mma_sync;
  m.kernels.matrix_efficiency = 1.0;
  sc.model.spec.hidden_size = 8 * 64;
  auto& k = sc.scenario.spec.kernel;
  k.stages = 2;
  sim::AddressSpace as;
  std::vector<sim::programs::MoeKernels> layers;
  std::vector<std::uint32_t> depth;
  for (const std::uint32_t stages : {3u, 5u}) {
    k.pipeline_stages = stages;
    layers.push_back(sim::programs::software_moe(as, plan::build_plan(sc), m));
    const auto& l = layers.back();
    const auto prog = l.kernels[kernel_of(l, "gate_up")].program(0);
    REQUIRE(prog.loops.at(0).iterations == 8);
    depth.push_back(prog.pipeline_depth);
  }
  CHECK(depth == std::vector<std::uint32_t>{1, 3});
  std::vector<isa::KernelLaunch> all;
  std::vector<std::size_t> gate_up;
  for (const auto& l : layers) {
    gate_up.push_back(all.size() + kernel_of(l, "gate_up"));
    all.insert(all.end(), l.kernels.begin(), l.kernels.end());
  }
  sim::Gpu gpu(m);
  const auto t = gpu.run(all);
  const double miss = ps(m.memory.l2.hit_latency) + ps(m.memory.fabric.latency) + ps(m.memory.hbm.latency);
  const double one = static_cast<double>(t[gate_up[0]].end - t[gate_up[0]].launch);
  const double three = static_cast<double>(t[gate_up[1]].end - t[gate_up[1]].launch);
  // Depth 1: the 8 tiles' round trips in series (the first with the
  // prologue's); depth 3: ceil(8 / 3) of them.
  CHECK(one > 8 * miss);
  CHECK(one - three == Approx((8 - 3) * miss).epsilon(0.05));
}

TEST_CASE("Loop::issue_instructions: each K tile takes at least its warp's instructions x warp_issue_cycles", "[moe]") {
  // One workgroup, a loop without loads or matrix work whose iterations each
  // carry 100 instructions of one warp: at 16 cycles each, 1600 cycles per
  // iteration, so 8 iterations take 4 x 1600 cycles more than 4.
  auto sc = tiny_scenario();
  MachineSpec& m = sc.machine.spec;
  m.kernels.warp_issue_cycles = 16;
  const auto kernel = [](std::uint32_t iterations, std::uint32_t instructions) {
    return issue_loop(isa::TileProgram{}.threads, iterations, instructions);
  };
  const double cycle_ps = 1e12 / static_cast<double>(m.compute.clock.hz);
  sim::Gpu gpu(m);
  const auto t = gpu.run({kernel(4, 0), kernel(4, 100), kernel(8, 100)});
  const auto took = [&](std::size_t i) { return static_cast<double>(t[i].end - t[i].start); };
  CHECK(took(1) - took(0) == Approx(4 * 1600 * cycle_ps).margin(4));
  CHECK(took(2) - took(1) == Approx(4 * 1600 * cycle_ps).margin(4));
}

TEST_CASE("kernels.warp_issue_cycles_per_warp: the cycles between a warp's instructions grow with the warps per scheduler", "[moe]") {
  // warp_issue_cycles 4 + 2 per warp resident on a scheduler (4 SIMDs). One
  // workgroup of 256 threads: 2 warps per scheduler, 8 cycles per
  // instruction; of 1024 threads: 8 warps, 20 cycles. 4 iterations of 100
  // instructions: 3200 and 8000 cycles more than none.
  auto sc = tiny_scenario();
  MachineSpec& m = sc.machine.spec;
  REQUIRE(m.compute.simds_per_cu == 4);
  m.kernels.warp_issue_cycles = 4;
  m.kernels.warp_issue_cycles_per_warp = 2;
  const auto kernel = [](std::uint32_t threads, std::uint32_t instructions) {
    return issue_loop(threads, 4, instructions);
  };
  const double cycle_ps = 1e12 / static_cast<double>(m.compute.clock.hz);
  sim::Gpu gpu(m);
  const auto t = gpu.run({kernel(256, 0), kernel(256, 100), kernel(1024, 0), kernel(1024, 100)});
  const auto took = [&](std::size_t i) { return static_cast<double>(t[i].end - t[i].start); };
  CHECK(took(1) - took(0) == Approx(4 * 100 * 8 * cycle_ps).margin(4));
  CHECK(took(3) - took(2) == Approx(4 * 100 * 20 * cycle_ps).margin(4));
}

TEST_CASE("h200's issue rate: the measured line through Nsight Compute's cycles per issued instruction", "[moe]") {
  // 5.65 cycles at 2 warps per scheduler ... 8.96 at 5.95 (docs/calibration.md):
  // the line stays within 0.45 cycles of each profile.
  const auto sc = source_scenario("workloads/scenarios/qwen3-30b-decode-h200.yaml");
  const auto& k = sc.machine.spec.kernels;
  const auto cpi = [&](double warps) { return k.warp_issue_cycles + k.warp_issue_cycles_per_warp * warps; };
  CHECK(cpi(2.0) == Approx(5.65).margin(0.45));
  CHECK(cpi(2.995) == Approx(5.91).margin(0.45));
  CHECK(cpi(3.85) == Approx(7.51).margin(0.45));
  CHECK(cpi(5.955) == Approx(8.96).margin(0.45));
}

TEST_CASE("the main loops' instructions per K tile are counted from the kernel (warp-specialized: not charged)", "[moe]") {
  // h200's kernels: a 16x64x128 e4m3 block_128 tile (4 multiplying warps of
  // one fragment pair, 3 copies a thread, 4 K steps through f16) issues 316
  // instructions per warp and K tile, as Nsight Compute counted
  // (ws-2026-11-30/ncu); a bf16 32x64x128 tile (6 copies, 8 K steps) 269.
  // gemm_core_wgmma: bf16 64x128x64 176 (loop, divisions, 6 copies) + 4 K
  // steps x 7 + 4 = 208; e4m3 block_128 128x128x128 214 + 28 + 4 and 64
  // accumulators promoted (64 FFMA), their scales loaded (2 activation
  // scales and one weight scale per 16-column fragment, 8: 10 loads of 7)
  // and multiplied once per distinct pair (16 FMUL) = 396; per_token 310
  // (64 adds); e4m3 block_128 64x128x128: 176 + 28 + 4 + 32 + 8 + 6 x 7 = 290.
  auto sc = source_scenario("workloads/scenarios/qwen3-30b-decode-h200.yaml");
  const MachineSpec& m = sc.machine.spec;
  REQUIRE(m.kernels.matrix_instructions == MatrixInstructions::wgmma);
  auto& k = sc.scenario.spec.kernel;
  k.stages = 2;
  k.split_k = 1;
  k.pipeline_stages = 3;
  const auto loops = [&](std::uint32_t block_m, const KernelTile& tile) {
    k.block_m = block_m;
    k.gate_up_tile = k.down_tile = tile;
    sim::AddressSpace as;
    const auto ks = sim::programs::software_moe(as, plan::build_plan(sc), m);
    const auto gu = ks.kernels[kernel_of(ks, "gate_up")].program(0).loops.at(0);
    CHECK(ks.kernels[kernel_of(ks, "down")].program(0).loops.at(0).issue_instructions == gu.issue_instructions);
    return gu;
  };
  sc.scenario.spec.dtype = DType::bf16;
  sc.scenario.spec.quant = Quant::none;
  CHECK(loops(32, {256, 32, 64, 128}).issue_instructions == 269);
  const auto wg = loops(64, {256, 64, 128, 64});
  CHECK(wg.wgmma);
  CHECK(wg.issue_instructions == 208);
  const auto ws = loops(128, {384, 128, 128, 64});
  CHECK(ws.ws);
  CHECK(ws.issue_instructions == 0);
  sc.scenario.spec.dtype = DType::fp8_e4m3;
  sc.scenario.spec.quant = Quant::block_128;
  CHECK(loops(16, {256, 16, 64, 128}).issue_instructions == 316);
  const auto fp8 = loops(128, {256, 128, 128, 128});
  CHECK(fp8.wgmma);
  CHECK(fp8.issue_instructions == 396);
  CHECK(loops(64, {256, 64, 128, 128}).issue_instructions == 290);
  sc.scenario.spec.quant = Quant::per_token;
  CHECK(loops(128, {256, 128, 128, 128}).issue_instructions == 310);
}

namespace {
// Warp instructions the 1-stage kernel's programs charge at the issue rate
// over the whole grid: per workgroup, phase 1's K tiles (one warp's
// issue_instructions each), the down phase's and the epilogue's own
// instructions (element operations / threads, the same for every warp).
double fused_warp_instructions(const sim::programs::MoeKernels& k) {
  const auto& fused = k.kernels[kernel_of(k, "fused")];
  double total = 0;
  for (std::uint32_t wg = 0; wg < fused.workgroups; ++wg) {
    const isa::TileProgram p = fused.program(wg);
    REQUIRE(p.loops.size() == 2);
    REQUIRE(p.loops[1].vector_issue_bound);
    REQUIRE(p.epilogue_issue_bound);
    const double warps = p.threads / 32.0;
    const double per_warp = double(p.loops[0].issue_instructions) * p.loops[0].iterations +
                            double(p.loops[1].vector_ops) / p.threads * p.loops[1].iterations +
                            double(p.epilogue_vector_ops) / p.threads;
    total += per_warp * warps;
  }
  return total;
}

// A validation scenario (validation/gpu/scenarios/NAME.yaml) resolved, with
// its block_m fixed when `block_m` is not 0 (the counts below were worked out
// for the tiles the scenario was profiled or measured with).
config::ResolvedScenario validation_scenario(const std::string& name, std::uint32_t block_m = 0) {
  auto sc = source_scenario("validation/gpu/scenarios/" + name + ".yaml");
  if (block_m != 0) sc.scenario.spec.kernel.block_m = block_m;
  return sc;
}
}  // namespace

TEST_CASE("the 1-stage kernel's instructions add up to Nsight Compute's count of the calibration profile", "[moe]") {
  // validation/data/h200/moe/ncu-2026-11-30/dsv3-fp8-4tok-1stage-pt.txt:
  // 931,696,289 warp instructions issued by fused_kernel (1024 workgroups of
  // 8 warps). The counts per construct (moe_program_common.h kFused*, the wgmma K
  // tile, the phase-1 epilogue) with kFusedProductOps, which was derived from
  // this very count, give it within 1%. Without kFusedProductOps (17 a thread
  // per element of each chunk's 64 x 128 product) the counts were 27% short.
  const auto sc = validation_scenario("dsv3-fp8-4tok-1stage-pt");
  const MachineSpec& m = sc.machine.spec;
  const plan::MoePlan p = plan::build_plan(sc);
  REQUIRE(p.kernel.stages == 1);
  REQUIRE(p.stage1.size() == 1024);
  sim::AddressSpace as;
  const auto k = sim::programs::software_moe(as, p, m);
  const double counted = fused_warp_instructions(k);
  CHECK(counted == Approx(931'696'289.0).epsilon(0.01));
  // The product term: 17 per element of 64 x 128 per chunk, 56 chunks (H 7168
  // in N of 128), over 256 threads, for each of the 8192 warps.
  const double product = 17.0 * 64 * 128 / 256 * 56 * 1024 * 8;
  CHECK(counted - product == Approx(0.73 * 931'696'289.0).epsilon(0.02));
}

TEST_CASE("the 1-stage kernel's issue costs follow its counted instructions", "[moe]") {
  // The held-out bf16 1-stage layer (qwen3-30b-8tok-1stage: 32 x 64 tiles,
  // mma.sync phase 1, no conversion): its down phase charges, per chunk and
  // thread, the scan and product terms per element of the 32 x 64 product
  // (8 a thread), a copy, the loop, two wmma K steps of one fragment pair
  // and its zero and store; and the workgroup's time grows with exactly those
  // instructions x the issue rate. block_m 32 as measured in v13 (the h200
  // heuristic has picked 16 since session 9).
  const auto sc = validation_scenario("qwen3-30b-8tok-1stage", 32);
  const MachineSpec& m = sc.machine.spec;
  const plan::MoePlan p = plan::build_plan(sc);
  REQUIRE(p.kernel.stages == 1);
  sim::AddressSpace as;
  const auto k = sim::programs::software_moe(as, p, m);
  const isa::TileProgram prog = k.kernels[kernel_of(k, "fused")].program(0);
  const std::uint64_t v = p.stage1[0].valid_rows;
  const std::uint64_t per_chunk = 64 * (32 * (12 + 17) + v * 10) + 256 * (21 + 8 + 2 * (2 * 10 + 2) + 18);
  CHECK(prog.loops[1].vector_ops == per_chunk);
  CHECK(prog.loops[1].iterations == 2048 / 64);
  // Phase-1 epilogue: 57 per element of a real row's 32 columns, 12 of a padding row's.
  CHECK(prog.epilogue_vector_ops == 32 * (v * 57 + (32 - v) * 12));
  // One workgroup alone on a CU: once its chunks are bound by their own
  // instructions (not by the down rows' loads), its time moves by the down
  // phase's added instructions x the issue rate at one workgroup of 8 warps
  // (2 per scheduler).
  const auto& fused = k.kernels[kernel_of(k, "fused")];
  const auto with = [&](std::uint64_t extra) {
    isa::KernelLaunch one = fused;
    one.workgroups = 1;
    // Both at compute.clock: the grid's matrix work in one workgroup's time
    // would have the clock governor (h200's power:) throttle them unequally.
    one.matrix_flops = 0;
    const auto base = fused.program;
    one.program = [base, extra](std::uint32_t wg) {
      isa::TileProgram q = base(wg);
      q.loops[1].vector_ops += 256 * extra;  // `extra` more instructions a thread per chunk
      return q;
    };
    one.program_into = nullptr;  // (it builds the original program: the CU would use it)
    return one;
  };
  sim::Gpu gpu(m);
  const auto t = gpu.run({with(1000), with(2000)});
  const double cycle_ps = 1e12 / static_cast<double>(m.compute.clock.hz);
  const double cpi = m.kernels.warp_issue_cycles + m.kernels.warp_issue_cycles_per_warp * 2;
  const double took0 = static_cast<double>(t[0].end - t[0].start), took1 = static_cast<double>(t[1].end - t[1].start);
  // 1.5%: on a machine with a power: section the governor's probe runs
  // first, so the kernels start later in simulated time and meet the HBM
  // refreshes at other points (-1.2% on the h200 when written).
  CHECK(took1 - took0 == Approx(32 * 1000 * cpi * cycle_ps).epsilon(0.015));
}
