// The clock governor (sim/platform/power.*): each kernel's engine clock under
// the machine's power limit, and the CUs running at it.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <string>

#include "isa/matrix_table.h"
#include "sim/core/sim_time.h"
#include "sim/platform/gpu.h"
#include "sim/platform/power.h"
#include "workloads/config/loader.h"

namespace {

using namespace tdmsim;
namespace fs = std::filesystem;

MachineSpec shipped(const char* name) {
  const fs::path root = fs::path(TDMSIM_SOURCE_DIR) / "workloads";
  const config::Loader loader({root});
  return loader.machine(root / "machines" / (std::string(name) + ".yaml")).spec;
}

// The H200 with the power limit measured here (docs/calibration.md: 1459 MHz
// and 0.835 of the bf16 peak under a sustained 8192^3 GEMM).
MachineSpec limited_h200() {
  MachineSpec m = shipped("h200");
  m.power = PowerSpec{};
  m.power->sustained_clock = units::Frequency{1459000000};
  m.power->reference_utilisation = 0.835;
  return m;
}

// A kernel with `flops` of bf16 matrix work and `bytes` of compulsory traffic.
isa::KernelLaunch work(double flops, double bytes) {
  isa::KernelLaunch k;
  k.name = "probe";
  k.matrix_flops = flops;
  k.compulsory_bytes = bytes;
  k.matrix_dtype = DType::bf16;
  return k;
}

}  // namespace

TEST_CASE("without a power section every kernel runs at the peak clock", "[power]") {
  MachineSpec m = limited_h200();
  m.power.reset();
  const double peak = static_cast<double>(m.compute.clock.hz);
  CHECK(sim::kernel_clock_hz(m, work(2.0 * 8192 * 8192 * 8192, 3.0 * 8192 * 8192 * 2)) == peak);
  CHECK(sim::kernel_clock_hz(m, work(0, 1e9)) == peak);
}

TEST_CASE("the governor holds compute-bound kernels at the sustained clock and leaves light ones at the peak",
          "[power]") {
  const MachineSpec m = limited_h200();
  REQUIRE(m.power);
  const double peak = static_cast<double>(m.compute.clock.hz);
  const double sustained = static_cast<double>(m.power->sustained_clock.hz);
  REQUIRE(sustained < peak);
  // 8192^3 bf16: ~1365 FLOP per compulsory byte, far above the ridge.
  CHECK(sim::kernel_clock_hz(m, work(2.0 * 8192 * 8192 * 8192, 3.0 * 8192 * 8192 * 2)) == sustained);
  // No matrix work (sort, clearing) and a decode GEMV (1 FLOP per byte): the peak.
  CHECK(sim::kernel_clock_hz(m, work(0, 1e9)) == peak);
  CHECK(sim::kernel_clock_hz(m, work(2.0 * 16384 * 16384, 16384.0 * 16384 * 2)) == peak);
}

TEST_CASE("between the two, the clock is the fixed point of the power law", "[power]") {
  const MachineSpec m = limited_h200();
  const double peak = static_cast<double>(m.compute.clock.hz);
  const double fs = static_cast<double>(m.power->sustained_clock.hz);
  const double bw = static_cast<double>(m.memory.hbm.bandwidth.bytes_per_s);
  const double rate = isa::peak_matrix_flops(m, DType::bf16) * m.power->reference_utilisation;
  const double bytes = 1e9;
  double last = peak + 1;
  int between = 0;
  // Arithmetic intensity from well below to well above the ridge: the clock
  // never rises with intensity, and where it is strictly between the bounds
  // it satisfies f = fs x a(f)^(-1/3) with a(f) = t_matrix(f) / t_memory.
  for (double intensity = 20; intensity <= 2000; intensity *= 1.25) {
    const double f = sim::kernel_clock_hz(m, work(intensity * bytes, bytes));
    CHECK(f <= last);
    last = f;
    CHECK(std::fmod(f, 1e6) == 0.0);  // whole MHz
    if (f > fs && f < peak) {
      ++between;
      const double a = (intensity * bytes / rate) * (peak / f) / (bytes / bw);
      CHECK(a < 1.0);
      CHECK(std::abs(f - fs * std::cbrt(1.0 / a)) < 1e6);  // within the MHz rounding
    }
  }
  CHECK(between >= 3);
}

TEST_CASE("a power-limited kernel runs its CUs at the governor's clock", "[power]") {
  // The same matrix-only kernel (no memory traffic in its program; its
  // FLOPs and bytes tell the governor it is compute-bound) on two H200s, one
  // without its power limit: the limited one reports the sustained clock and
  // takes longer by the clock ratio.
  MachineSpec limited = limited_h200();
  MachineSpec unlimited = limited;
  unlimited.power.reset();
  sim::Gpu a(limited), b(unlimited);  // both before the first sc_start
  isa::KernelLaunch k = work(2.0 * 8192 * 8192 * 8192, 3.0 * 8192 * 8192 * 2);
  k.workgroups = 2 * limited.compute.total_cus();
  k.program = [](std::uint32_t) {
    isa::TileProgram p;
    p.threads = 256;
    p.vgprs_per_thread = 64;
    isa::Loop loop;
    loop.iterations = 64;
    loop.dtype = DType::bf16;
    loop.m = 128;
    loop.n = 128;
    loop.k = 64;
    p.loops.push_back(loop);
    return p;
  };
  const std::vector<isa::KernelLaunch> kernels{k};
  const auto ta = a.run(kernels);
  const auto tb = b.run(kernels);
  REQUIRE(ta.size() == 1);
  REQUIRE(tb.size() == 1);
  CHECK(ta[0].clock_hz == static_cast<double>(limited.power->sustained_clock.hz));
  CHECK(tb[0].clock_hz == static_cast<double>(unlimited.compute.clock.hz));
  const double slow = static_cast<double>(ta[0].end - ta[0].start) / static_cast<double>(tb[0].end - tb[0].start);
  const double ratio = static_cast<double>(unlimited.compute.clock.hz) / static_cast<double>(limited.power->sustained_clock.hz);
  CHECK(slow == Approx(ratio).epsilon(0.02));
}
