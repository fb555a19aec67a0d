// The clock governor: the engine clock a kernel runs at when the board's
// power limit (machine `power:` section) holds the clock below its peak.
//
// Dynamic power goes as activity x f x V^2 and, in the range where the
// governor moves the clock, voltage roughly with frequency, so power at a
// given activity ~ a x f^3. The reference load (a sustained dense GEMM, whose
// clock and matrix utilisation are measured) fixes the constant: a kernel of
// matrix activity a relative to that load can hold
//     f = min(peak, sustained_clock x a^(-1/3)).
// A kernel's activity is its place on the roofline: its matrix time at the
// dense peak over the reference utilisation, against its compulsory bytes at
// the HBM peak (a bandwidth-bound kernel keeps its matrix pipes idle most of
// the time and runs at the peak clock). The clock is a steady state, as in
// the measurements it is compared with (kernels timed over many repetitions).
#pragma once

#include "isa/tile_program.h"
#include "workloads/specs/machine_spec.h"

namespace tdmsim::sim {

// The engine clock `kernel` runs at on `m`, in Hz: compute.clock without a
// power section or matrix work; otherwise between power.sustained_clock and
// compute.clock (docs/simulator.md "Clocks under load").
double kernel_clock_hz(const MachineSpec& m, const isa::KernelLaunch& kernel);

}  // namespace tdmsim::sim
