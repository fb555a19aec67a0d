#include "sim/platform/power.h"

#include <algorithm>
#include <cmath>

#include "isa/matrix_table.h"

namespace tdmsim::sim {

double kernel_clock_hz(const MachineSpec& m, const isa::KernelLaunch& kernel) {
  const double peak = static_cast<double>(m.compute.clock.hz);
  if (!m.power || kernel.matrix_flops <= 0) return peak;
  const double sustained = static_cast<double>(m.power->sustained_clock.hz);
  const double flops_per_s = isa::peak_matrix_flops(m, kernel.matrix_dtype);  // at `peak`
  if (flops_per_s <= 0) return peak;
  // Matrix time at the peak clock at the reference load's utilisation, and
  // the compulsory traffic's time at the HBM peak.
  const double t_matrix = kernel.matrix_flops / (flops_per_s * m.power->reference_utilisation);
  const double t_memory = kernel.compulsory_bytes / static_cast<double>(m.memory.hbm.bandwidth.bytes_per_s);
  // Activity relative to the reference at clock f:
  //   a(f) = min(1, t_matrix x (peak / f) / t_memory)
  // and f = min(peak, sustained x a(f)^(-1/3)). Where a < 1 this solves to
  //   f^2 = sustained^3 x t_memory / (t_matrix x peak);
  // clamped to [sustained, peak] (a = 1 gives sustained).
  if (t_memory <= 0) return sustained;
  const double f = std::sqrt(sustained * sustained * sustained * t_memory / (t_matrix * peak));
  // Clocks step in whole MHz.
  return std::clamp(std::round(f * 1e-6) * 1e6, sustained, peak);
}

}  // namespace tdmsim::sim
