// The clock governor: the engine clock a kernel runs at when the board's
// power limit (machine `power:` section) holds the clock below its peak.
//
// Dynamic power goes as activity x f x V^2 and, in the range where the
// governor moves the clock, voltage roughly with frequency, so at a given
// activity A the board draws ~ A x f^3 (static power only shifts the limit).
// A kernel's activity is what the model says the chip does while it runs:
//     A = w x u_matrix + hbm_activity x u_hbm
// with u_matrix its matrix FLOPs over its time at the matrix peak of its
// dtype at that clock (the pipes' occupancy at full rate), w 1 for 16-bit
// operands and narrow_matrix_activity for 8-bit or narrower ones, and u_hbm
// its HBM bytes over its time at the HBM peak. The reference load (a
// sustained dense 16-bit GEMM at sustained_clock, u_matrix =
// reference_utilisation; its HBM traffic is left out) fixes the constant, so
// a kernel holds
//     f = min(peak, sustained_clock x (reference_utilisation / A)^(1/3)).
// The utilisations come from a probe run of the same kernels at the peak
// clock (sim/platform/gpu.cpp): one fixed-point step (settle_clock_hz says
// what stopping there costs).
#pragma once

#include "isa/tile_program.h"
#include "workloads/specs/machine_spec.h"

namespace tdmsim::sim {

// What a kernel did, as the model ran it at `clock_hz`.
struct KernelActivity {
  double clock_hz = 0;
  double u_matrix = 0;  // matrix FLOPs / (time x matrix peak of its dtype at clock_hz)
  double u_hbm = 0;     // HBM bytes / (time x HBM peak)
  bool narrow = false;  // matrix operands of 8 bits or fewer
};

// The activity of `kernel` from its modelled run: `seconds` from launch to
// its last write-back, `hbm_bytes` read and written at HBM meanwhile.
KernelActivity measured_activity(const MachineSpec& m, const isa::KernelLaunch& kernel, double seconds,
                                 double hbm_bytes, double clock_hz);

// The power law's activity A of `a` (above).
double activity(const PowerSpec& p, const KernelActivity& a);

// The clock a kernel of activity `a` settles at on `m`, in Hz, whole MHz:
// compute.clock without a power section; otherwise the power law above,
// at most compute.clock.
//
// One fixed-point step: `a` was measured at a.clock_hz (the peak) and the
// kernel then runs at the returned clock f. At f a compute-bound kernel (time
// ~ 1/f) keeps its u_matrix but has a lower u_hbm, so its fixed point is
// above f; a memory-bound one (time independent of f) has u_matrix x
// a.clock_hz / f, so its fixed point is below f. A real kernel lies between.
double settle_clock_hz(const MachineSpec& m, const KernelActivity& a);

// The exact fixed point of the power law for a kernel at either extreme
// (`compute_bound`: time ~ 1/f; else: time independent of f), in Hz (not
// rounded): |settle_clock_hz - these| bounds the error of the one step.
double fixed_point_clock_hz(const MachineSpec& m, const KernelActivity& a, bool compute_bound);

}  // namespace tdmsim::sim
