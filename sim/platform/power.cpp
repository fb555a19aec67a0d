#include "sim/platform/power.h"

#include <algorithm>
#include <cmath>

#include "isa/matrix_table.h"
#include "workloads/specs/enums.h"

namespace tdmsim::sim {

KernelActivity measured_activity(const MachineSpec& m, const isa::KernelLaunch& kernel, double seconds,
                                 double hbm_bytes, double clock_hz) {
  KernelActivity a;
  a.clock_hz = clock_hz;
  a.narrow = dtype_bits(kernel.matrix_dtype) <= 8;
  if (seconds <= 0) return a;
  // The matrix peak at `clock_hz` (peak_matrix_flops is at compute.clock).
  const double peak = isa::peak_matrix_flops(m, kernel.matrix_dtype) * clock_hz /
                      static_cast<double>(m.compute.clock.hz);
  if (kernel.matrix_flops > 0 && peak > 0) a.u_matrix = kernel.matrix_flops / (seconds * peak);
  const double bw = static_cast<double>(m.memory.hbm.bandwidth.bytes_per_s);
  if (bw > 0) a.u_hbm = hbm_bytes / (seconds * bw);
  return a;
}

double activity(const PowerSpec& p, const KernelActivity& a) {
  return (a.narrow ? p.narrow_matrix_activity : 1.0) * a.u_matrix + p.hbm_activity * a.u_hbm;
}

double settle_clock_hz(const MachineSpec& m, const KernelActivity& a) {
  const double peak = static_cast<double>(m.compute.clock.hz);
  if (!m.power) return peak;
  const double sustained = static_cast<double>(m.power->sustained_clock.hz);
  const double act = activity(*m.power, a);
  if (act <= 0) return peak;
  const double f = sustained * std::cbrt(m.power->reference_utilisation / act);
  // Clocks step in whole MHz; at least 1 MHz (a load far above the
  // reference's only slows the clock, it never stops it).
  return std::clamp(std::round(f * 1e-6) * 1e6, 1e6, peak);
}

double fixed_point_clock_hz(const MachineSpec& m, const KernelActivity& a, bool compute_bound) {
  const double peak = static_cast<double>(m.compute.clock.hz);
  if (!m.power) return peak;
  const PowerSpec& p = *m.power;
  const double f0 = a.clock_hz > 0 ? a.clock_hz : peak;
  const double sustained = static_cast<double>(p.sustained_clock.hz);
  const double budget = p.reference_utilisation * sustained * sustained * sustained;
  // Power at clock f, in the units of `budget`: increasing in f at either
  // extreme, so the fixed point is where it meets the budget.
  const auto power = [&](double f) {
    KernelActivity at = a;
    if (compute_bound) at.u_hbm = a.u_hbm * f / f0;
    else at.u_matrix = a.u_matrix * f0 / f;
    return activity(p, at) * f * f * f;
  };
  if (power(peak) <= budget) return peak;
  double lo = 0, hi = peak;
  for (int i = 0; i < 64; ++i) {
    const double mid = 0.5 * (lo + hi);
    (power(mid) <= budget ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace tdmsim::sim
