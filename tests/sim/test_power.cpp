// The clock governor (sim/platform/power.*): each kernel's activity from its
// modelled run, the clock that activity settles at under the machine's power
// limit, and the CUs running at it.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <string>

#include "isa/matrix_table.h"
#include "sim/core/sim_time.h"
#include "sim/platform/gpu.h"
#include "sim/platform/power.h"
#include "workloads/config/loader.h"
#include "tests/sim/shipped_inputs.h"

namespace {

using tdmsim::test::shipped_machine;

using namespace tdmsim;
namespace fs = std::filesystem;

// The H200 with a power limit: the measured sustained clock and reference
// utilisation (docs/calibration.md), and round activity weights (set here,
// not the shipped ones, so that every term is exercised).
MachineSpec limited_h200(double narrow = 1.25, double hbm = 0.3) {
  MachineSpec m = shipped_machine("h200");
  m.power = PowerSpec{};
  m.power->sustained_clock = units::Frequency{1455000000};
  m.power->reference_utilisation = 0.84;
  m.power->narrow_matrix_activity = narrow;
  m.power->hbm_activity = hbm;
  return m;
}

sim::KernelActivity at_peak(const MachineSpec& m, double u_matrix, double u_hbm, bool narrow = false) {
  sim::KernelActivity a;
  a.narrow = narrow;
  a.clock_hz = static_cast<double>(m.compute.clock.hz);
  a.u_matrix = u_matrix;
  a.u_hbm = u_hbm;
  return a;
}

}  // namespace

TEST_CASE("a kernel's activity is its matrix FLOPs and HBM bytes over its modelled time", "[power]") {
  const MachineSpec m = limited_h200();
  isa::KernelLaunch k;
  k.matrix_flops = 4e12;
  k.matrix_dtype = DType::bf16;
  const double peak = isa::peak_matrix_flops(m, DType::bf16);
  const double bw = static_cast<double>(m.memory.hbm.bandwidth.bytes_per_s);
  const double f0 = static_cast<double>(m.compute.clock.hz);
  // 4 TFLOP in 10 ms at the peak clock, 12 GB of HBM traffic.
  sim::KernelActivity a = sim::measured_activity(m, k, 0.01, 12e9, f0);
  CHECK(a.clock_hz == f0);
  CHECK_FALSE(a.narrow);
  CHECK(a.u_matrix == Approx(4e12 / (0.01 * peak)));
  CHECK(a.u_hbm == Approx(12e9 / (0.01 * bw)));
  // The matrix peak scales with the clock the kernel ran at; HBM's does not.
  a = sim::measured_activity(m, k, 0.01, 12e9, f0 / 2);
  CHECK(a.u_matrix == Approx(2 * 4e12 / (0.01 * peak)));
  CHECK(a.u_hbm == Approx(12e9 / (0.01 * bw)));
  // fp8 work against the fp8 peak (twice bf16 on Hopper).
  k.matrix_dtype = DType::fp8_e4m3;
  a = sim::measured_activity(m, k, 0.01, 0, f0);
  CHECK(a.u_matrix == Approx(4e12 / (0.01 * isa::peak_matrix_flops(m, DType::fp8_e4m3))));
  CHECK(a.narrow);
  // No matrix work, no time: no activity.
  k.matrix_flops = 0;
  CHECK(sim::measured_activity(m, k, 0.01, 0, f0).u_matrix == 0.0);
  CHECK(sim::measured_activity(m, k, 0.0, 1e9, f0).u_hbm == 0.0);
}

TEST_CASE("without a power section every kernel runs at the peak clock", "[power]") {
  MachineSpec m = limited_h200();
  m.power.reset();
  const double peak = static_cast<double>(m.compute.clock.hz);
  CHECK(sim::settle_clock_hz(m, at_peak(m, 0.9, 0.1)) == peak);
  CHECK(sim::fixed_point_clock_hz(m, at_peak(m, 0.9, 0.1), true) == peak);
}

TEST_CASE("the reference load settles at the sustained clock, lighter loads above it", "[power]") {
  const MachineSpec m = limited_h200();
  const double peak = static_cast<double>(m.compute.clock.hz);
  const double fs = static_cast<double>(m.power->sustained_clock.hz);
  CHECK(sim::settle_clock_hz(m, at_peak(m, 0.84, 0)) == fs);
  // Idle pipes and a quiet memory: the peak.
  CHECK(sim::settle_clock_hz(m, at_peak(m, 0, 0)) == peak);
  // More than the reference load: below the sustained clock.
  CHECK(sim::settle_clock_hz(m, at_peak(m, 0.95, 0.3)) < fs);
  // In between, the power law: A x f^3 = A_ref x fs^3, to the MHz rounding.
  int between = 0;
  double last = peak + 1;
  for (double u = 0.05; u <= 1.0; u += 0.05) {
    const sim::KernelActivity a = at_peak(m, u, 0.1);
    const double f = sim::settle_clock_hz(m, a);
    CHECK(f <= last);  // more matrix work never raises the clock
    last = f;
    CHECK(std::fmod(f, 1e6) == 0.0);
    if (f < peak) {
      ++between;
      const double want = fs * std::cbrt(m.power->reference_utilisation / sim::activity(*m.power, a));
      CHECK(std::abs(f - want) <= 0.5e6);
    }
  }
  CHECK(between >= 5);
  // HBM traffic draws power too: the same matrix work with more of it runs slower.
  CHECK(sim::settle_clock_hz(m, at_peak(m, 0.5, 0.8)) < sim::settle_clock_hz(m, at_peak(m, 0.5, 0.0)));
  // 8-bit work at the same occupancy draws narrow_matrix_activity times the
  // power: a lower clock, by the cube root.
  const double f16 = sim::settle_clock_hz(m, at_peak(m, 0.84, 0));
  const double f8 = sim::settle_clock_hz(m, at_peak(m, 0.84, 0, true));
  CHECK(f8 < f16);
  CHECK(f8 == Approx(f16 / std::cbrt(1.25)).margin(0.5e6));
  // The activity itself.
  CHECK(sim::activity(*m.power, at_peak(m, 0.5, 0.4, true)) == Approx(1.25 * 0.5 + 0.3 * 0.4));
}

TEST_CASE("one fixed-point step lies between the compute-bound and memory-bound fixed points", "[power]") {
  const MachineSpec m = limited_h200();
  const double peak = static_cast<double>(m.compute.clock.hz);
  for (double u = 0.3; u <= 1.0; u += 0.1) {
    for (double h : {0.0, 0.3, 0.9}) {
      const sim::KernelActivity a = at_peak(m, u, h);
      const double f1 = sim::settle_clock_hz(m, a);
      const double fc = sim::fixed_point_clock_hz(m, a, true);
      const double fm = sim::fixed_point_clock_hz(m, a, false);
      // At f1 < peak a compute-bound kernel moves fewer bytes per second
      // (its fixed point is higher); a memory-bound one does more matrix
      // work per cycle (lower).
      CHECK(fm <= f1 + 0.5e6);
      CHECK(fc >= f1 - 0.5e6);
      if (h == 0.0) CHECK(std::abs(fc - f1) <= 0.5e6);  // no HBM term: the step is exact
      // Each is a fixed point: the power law holds at it, or it is the peak.
      for (const bool cb : {true, false}) {
        const double f = cb ? fc : fm;
        if (f >= peak) continue;
        sim::KernelActivity at = a;
        if (cb) at.u_hbm = h * f / peak;
        else at.u_matrix = u * peak / f;
        const double fs = static_cast<double>(m.power->sustained_clock.hz);
        CHECK(sim::activity(*m.power, at) * std::pow(f / fs, 3) ==
              Approx(m.power->reference_utilisation).epsilon(1e-6));
      }
    }
  }
}

namespace {

// `wgs` workgroups of a matrix-only bf16 loop (no memory traffic), and, with
// `issue_bound`, each iteration also issuing enough instructions per warp to
// take longer than its matrix work (a small-M tile bound by its warps' issue,
// as the H200's 16x64 fp8 tiles are).
isa::KernelLaunch matrix_kernel(const MachineSpec& m, bool issue_bound) {
  isa::KernelLaunch k;
  k.name = issue_bound ? "issue_bound" : "matrix_bound";
  k.workgroups = 2 * m.compute.total_cus();
  k.matrix_dtype = DType::bf16;
  k.matrix_flops = 2.0 * 128 * 128 * 64 * 64 * k.workgroups;
  k.program = [issue_bound](std::uint32_t) {
    isa::TileProgram p;
    p.threads = 256;
    p.vgprs_per_thread = 64;
    isa::Loop loop;
    loop.iterations = 64;
    loop.dtype = DType::bf16;
    loop.m = 128;
    loop.n = 128;
    loop.k = 64;
    if (issue_bound) loop.issue_instructions = 400;
    p.loops.push_back(loop);
    return p;
  };
  return k;
}

}  // namespace

TEST_CASE("the governor slows a matrix-bound kernel and leaves an issue-bound one of the same work faster",
          "[power]") {
  // The same kernels on two H200s, one without its power limit (both built
  // before the first sc_start).
  const MachineSpec limited = limited_h200();
  MachineSpec unlimited = limited;
  unlimited.power.reset();
  sim::Gpu a(limited), b(unlimited);
  const std::vector<isa::KernelLaunch> kernels{matrix_kernel(limited, false), matrix_kernel(limited, true)};
  const auto ta = a.run(kernels);
  const auto tb = b.run(kernels);
  REQUIRE(ta.size() == 2);
  REQUIRE(tb.size() == 2);

  const double peak = static_cast<double>(limited.compute.clock.hz);
  CHECK(tb[0].clock_hz == peak);
  CHECK(tb[1].clock_hz == peak);
  // The clock each settles at is the governor's for its activity at the
  // peak clock (the unlimited run is that probe).
  for (std::size_t i = 0; i < 2; ++i) {
    const sim::KernelActivity act = sim::measured_activity(
        limited, kernels[i], static_cast<double>(tb[i].end - tb[i].launch) * 1e-12, tb[i].hbm_bytes, peak);
    CHECK(ta[i].clock_hz == sim::settle_clock_hz(limited, act));
  }
  // The issue-bound loop takes longer for the same FLOPs: lower occupancy,
  // higher clock; the matrix-bound one is throttled.
  // (At the peak clock: 67 us and 94 us when written.)
  CHECK(static_cast<double>(tb[1].end - tb[1].launch) > 1.3 * static_cast<double>(tb[0].end - tb[0].launch));
  CHECK(ta[0].clock_hz < peak);
  CHECK(ta[1].clock_hz > ta[0].clock_hz);
  // Both are compute-bound in the model: slower by their clock ratio.
  for (std::size_t i = 0; i < 2; ++i) {
    const double slow = static_cast<double>(ta[i].end - ta[i].start) / static_cast<double>(tb[i].end - tb[i].start);
    CHECK(slow == Approx(peak / ta[i].clock_hz).epsilon(0.02));
  }
}
