// The compute units' main loops on the whole h200 model: a loop's time per
// iteration must follow its bytes and matrix work per iteration, not how many
// iterations it has (how many of them one simulation step runs).
#include <catch2/catch.hpp>

#include <filesystem>
#include <memory>
#include <vector>

#include "sim/platform/gpu.h"
#include "workloads/config/loader.h"
#include "tests/sim/shipped_inputs.h"

namespace {

using tdmsim::test::kernel_us;

using namespace tdmsim;
namespace fs = std::filesystem;

// A grid shaped like Mixtral-8x7B's down stage on the H200 (docs/moe-timing.md):
// 8 blocks of 128 contiguous intermediate rows, each multiplied by 16 N tiles
// of 256 weight rows; rows `row_bytes` apart, one 128-byte K slice of each row
// per iteration (A 16 KiB + B 32 KiB), a 128x256x64 bf16 wgmma product per
// iteration, 4 buffers, one workgroup per SM. `iterations` K steps.
isa::KernelLaunch down_like(const char* name, std::uint64_t row_bytes, std::uint32_t iterations) {
  constexpr std::uint64_t kA = 1ull << 36, kB = 1ull << 37;  // far apart, 2 MiB aligned
  constexpr std::uint32_t kTiles = 16;
  return {name, 8 * kTiles, [=](std::uint32_t wg) {
            const std::uint32_t block = wg / kTiles, tile = wg % kTiles;
            isa::TileProgram p;
            p.threads = 256;
            p.vgprs_per_thread = 255;  // one workgroup per SM, as the real tile
            p.lds_bytes = (128 + 256) * 128 * 4;
            p.pipeline_depth = 4;
            isa::Loop loop;
            loop.iterations = iterations;
            loop.loads.push_back(isa::strided(kA + std::uint64_t{block} * 128 * row_bytes, 128, 128,
                                              row_bytes, 128));
            loop.loads.push_back(isa::strided(kB + (std::uint64_t{block} * kTiles + tile) * 256 * row_bytes,
                                              128, 256, row_bytes, 128));
            loop.moe_kernel = true;
            loop.wgmma = true;
            loop.dtype = DType::bf16;
            loop.m = 128;
            loop.n = 256;
            loop.k = 64;
            p.loops.push_back(std::move(loop));
            return p;
          },
          nullptr, nullptr};  // hardware dispatch, hardware routing
}


}  // namespace

TEST_CASE("a main loop's time per iteration does not grow with its iteration count", "[cu]") {
  const fs::path root = fs::path(TDMSIM_SOURCE_DIR) / "workloads";
  const config::Loader loader({root});
  MachineSpec m = loader.machine(root / "machines/h200.yaml").spec;
  // Memory below the L2 without a bandwidth limit: the weights stream from
  // HBM at any rate, so the L2 channels are the only memory shared by the
  // units (the h200's HBM would bound the first K group of a cold kernel).
  m.memory.hbm.bandwidth = units::Bandwidth{std::uint64_t{1} << 60};
  m.memory.fabric.bandwidth = units::Bandwidth{std::uint64_t{1} << 60};
  sim::Gpu gpu(m);
  // gate/up's K (H = 4096: 64 iterations) and down's (I = 14336: 224), with
  // the same rows, bytes and work per iteration, and down's with rows 8 KiB
  // apart as gate/up's. Before a step was bounded by the quantum, the
  // 224-iteration loops ran 7 iterations a step, reserving L2 channel time
  // microseconds ahead of the other units, which then queued behind those
  // reservations: 2.17 us per added iteration against the bound (1.29 us at
  // the efficiency of then).
  const auto t = gpu.run({down_like("k64", 14336 * 2, 64), down_like("k224", 14336 * 2, 224),
                          down_like("k224_8k", 4096 * 2, 224)});
  // Both loops pay the same start (~19 us); the 160 more iterations cost
  // what they add.
  const double added = (kernel_us(t[1]) - kernel_us(t[0])) / 160;
  INFO("us: 64 iterations " << kernel_us(t[0]) << ", 224 " << kernel_us(t[1]) << ", 224 with rows 8 KiB apart "
                            << kernel_us(t[2]) << "; per added iteration " << added);
  // The matrix bound: 2 x 128 x 256 x 64 FLOP at the ISA's bf16 rate (4096
  // FLOP per clock per SM on Hopper) times the efficiencies.
  const double bound = 2.0 * 128 * 256 * 64 /
                       (4096.0 * m.kernels.wgmma_efficiency * m.compute.matrix_efficiency) /
                       static_cast<double>(m.compute.clock.hz) * 1e6;
  CHECK(added == Approx(bound).epsilon(0.03));
  CHECK(kernel_us(t[2]) == Approx(kernel_us(t[1])).epsilon(0.03));
}

namespace {
// A grid of one-workgroup-per-SM tiles on the h200: a short main loop
// (down_like's shape), then an epilogue of
// `epilogue_ops` issue-bound vector operations (as our kernels' epilogues,
// sim/programs/moe_gemm_programs.cpp) and a 128-row store, each workgroup its own rows.
isa::KernelLaunch epilogue_like(const char* name, std::uint32_t workgroups, std::uint64_t epilogue_ops) {
  // Main loops of 16-40 K steps, so that the units' epilogues and loads interleave.
  const isa::KernelLaunch body = down_like(name, 14336 * 2, 16);
  return {name, workgroups, [=](std::uint32_t wg) {
            isa::TileProgram p = body.program(wg % body.workgroups);
            p.loops[0].iterations = 16 + (wg * 7) % 25;
            p.epilogue_vector_ops = epilogue_ops;
            p.epilogue_issue_bound = true;
            p.stores.push_back(isa::strided((1ull << 38) + std::uint64_t{wg} * 128 * 512, 512, 128, 512));
            return p;
          },
          nullptr, nullptr};  // hardware dispatch, hardware routing
}
}  // namespace

TEST_CASE("a longer epilogue adds its own time per wave, nothing more", "[cu]") {
  const fs::path root = fs::path(TDMSIM_SOURCE_DIR) / "workloads";
  const config::Loader loader({root});
  MachineSpec m = loader.machine(root / "machines/h200.yaml").spec;
  // One issue rate at any occupancy: this is about the stores, not the rate.
  m.kernels.warp_issue_cycles = 7.5;
  m.kernels.warp_issue_cycles_per_warp = 0;
  sim::Gpu gpu(m);
  const std::uint32_t sms = m.compute.total_cus(), waves = 4;
  // 10 us of issue-bound epilogue per workgroup: ops / threads x warp_issue_cycles cycles.
  const double cycles = 10e-6 * static_cast<double>(m.compute.clock.hz);
  const auto ops = static_cast<std::uint64_t>(cycles / m.kernels.warp_issue_cycles * 256);
  const auto t = gpu.run({epilogue_like("short", waves * sms, 256), epilogue_like("long", waves * sms, ops)});
  const double added = kernel_us(t[1]) - kernel_us(t[0]);
  INFO("us: short epilogue " << kernel_us(t[0]) << ", 10 us epilogue " << kernel_us(t[1]));
  // Before the stores went out in a step of their own, a workgroup's memory
  // requests after a long epilogue reserved channels ahead of other units'
  // earlier ones, and each wave's 10 us cost 20-28 us.
  CHECK(added == Approx(waves * 10.0).epsilon(0.15));
}

TEST_CASE("two GPUs running at once in one simulation keep their own time", "[cu]") {
  // Each GPU's CuScheduler runs a whole kernel ahead of SystemC's time and
  // moves only its own GPU's clock. With one clock for the process, a GPU
  // starting a kernel after the other GPU's scheduler had run a longer one
  // found its units past every horizon, and they ran out of time order (other
  // reservations, other times). A short and a long kernel in opposite orders
  // on the two GPUs make one of them start a kernel so, whichever scheduler
  // SystemC runs first; each must take what it takes alone.
  const fs::path root = fs::path(TDMSIM_SOURCE_DIR) / "workloads";
  const config::Loader loader({root});
  MachineSpec m = loader.machine(root / "machines/h200.yaml").spec;
  // No HBM refresh within these runs: a GPU's timings then do not depend on
  // when it starts, so runs at different times can be compared.
  m.memory.hbm.refresh_interval = units::Duration{1'000'000'000'000};
  sim::Gpu alone_a(m), alone_b(m), a(m), b(m);  // all before the first sc_start
  const isa::KernelLaunch short_k = down_like("short", 14336 * 2, 32);
  const isa::KernelLaunch long_k = down_like("long", 4096 * 2, 224);
  const std::vector<isa::KernelLaunch> ka{short_k, long_k}, kb{long_k, short_k};
  const auto ra = alone_a.run(ka);
  const auto rb = alone_b.run(kb);
  a.submit(ka);
  b.submit(kb);
  sc_core::sc_start();
  const auto ta = a.collect(), tb = b.collect();
  const auto same = [](const std::vector<sim::KernelTiming>& x, const std::vector<sim::KernelTiming>& y) {
    REQUIRE(x.size() == y.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      INFO("kernel " << i << " " << x[i].name);
      CHECK(x[i].start - x[i].launch == y[i].start - y[i].launch);
      CHECK(x[i].end - x[i].launch == y[i].end - y[i].launch);
      CHECK(x[i].launch - x[0].launch == y[i].launch - y[0].launch);
      CHECK(x[i].workgroups == y[i].workgroups);
    }
  };
  same(ta, ra);
  same(tb, rb);
}
