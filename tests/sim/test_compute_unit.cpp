// The compute units' main loops on the whole h200 model: a loop's time per
// iteration must follow its bytes and matrix work per iteration, not how many
// iterations it has (how many of them one simulation step runs).
#include <catch2/catch.hpp>

#include <filesystem>
#include <memory>
#include <vector>

#include "sim/platform/gpu.h"
#include "workloads/config/loader.h"

namespace {

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
          nullptr};
}

double us(const sim::KernelTiming& t) { return static_cast<double>(t.end - t.start) / 1e6; }

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
  // reservations: 2.17 us per added iteration against the 1.29 us bound.
  const auto t = gpu.run({down_like("k64", 14336 * 2, 64), down_like("k224", 14336 * 2, 224),
                          down_like("k224_8k", 4096 * 2, 224)});
  // Both loops pay the same start (~19 us); the 160 more iterations cost
  // what they add.
  const double added = (us(t[1]) - us(t[0])) / 160;
  INFO("us: 64 iterations " << us(t[0]) << ", 224 " << us(t[1]) << ", 224 with rows 8 KiB apart "
                            << us(t[2]) << "; per added iteration " << added);
  // The matrix bound: 2 x 128 x 256 x 64 FLOP at the ISA's bf16 rate (4096
  // FLOP per clock per SM on Hopper) times the efficiencies.
  const double bound = 2.0 * 128 * 256 * 64 /
                       (4096.0 * m.kernels.wgmma_efficiency * m.compute.matrix_efficiency) /
                       static_cast<double>(m.compute.clock.hz) * 1e6;
  CHECK(added == Approx(bound).epsilon(0.03));
  CHECK(us(t[2]) == Approx(us(t[1])).epsilon(0.03));
}

TEST_CASE("two GPUs running at once in one simulation keep their own time", "[cu]") {
  // Each GPU's CuScheduler runs a whole kernel ahead of SystemC's time and
  // moves only its own GPU's clock: the second GPU's units must not see the
  // first's time. (With one clock for the process, the second GPU's units
  // found themselves far past every horizon and ran their workgroups out of
  // time order: other reservations, other times.)
  const fs::path root = fs::path(TDMSIM_SOURCE_DIR) / "workloads";
  const config::Loader loader({root});
  const MachineSpec m = loader.machine(root / "machines/h200.yaml").spec;
  sim::Gpu a(m), b(m);  // both before the first sc_start (one elaboration)
  const std::vector<isa::KernelLaunch> kernels{down_like("k64", 14336 * 2, 64),
                                               down_like("k224", 4096 * 2, 224)};
  a.submit(kernels);
  b.submit(kernels);
  sc_core::sc_start();
  const auto ta = a.collect(), tb = b.collect();
  REQUIRE(ta.size() == kernels.size());
  REQUIRE(tb.size() == kernels.size());
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    INFO("kernel " << ta[i].name);
    CHECK(ta[i].launch == tb[i].launch);
    CHECK(ta[i].start == tb[i].start);
    CHECK(ta[i].end == tb[i].end);
    CHECK(ta[i].workgroups == tb[i].workgroups);
  }
  CHECK(a.stats().snapshot() == b.stats().snapshot());
}
