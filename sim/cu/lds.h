// A compute unit's LDS (shared memory on NVIDIA) as a bandwidth: its banks
// each move one 4-byte word a clock, and the whole moves at most
// compute.lds_bytes_per_clock, so it serves min(lds_bytes_per_clock,
// 4 x lds_banks) bytes a clock (bank conflicts beyond that are not
// modelled). A main-loop iteration moves its loads' bytes into it and its
// matrix operands out of it (each of A and B read once per K step:
// iteration_bytes(); loads into registers and a B read from registers,
// isa::Loop::b_in_registers, do not pass through it); the workgroups
// resident on the unit share it, one after another, as they share the
// matrix pipes.
#pragma once

#include <cstdint>

#include "isa/tile_program.h"
#include "sim/core/sim_time.h"
#include "workloads/specs/machine_spec.h"

namespace tdmsim::sim {

class Lds {
 public:
  explicit Lds(const ComputeSpec& cu);
  // Bytes the LDS moves per clock.
  double bytes_per_clock() const { return bytes_per_clock_; }
  // Bytes one iteration of `loop` moves through the LDS: its loads written
  // in (not those to registers), its matrix product's operands (m x k and,
  // unless B is in registers, n x k elements) read out.
  static double iteration_bytes(const isa::Loop& loop);
  // How long the LDS takes to move `bytes` at engine clock `clock`.
  Tick transfer(double bytes, units::Frequency clock) const {
    return cycle_ticks(bytes / bytes_per_clock_, clock);
  }
  // Reserves the LDS for `duration` from `at`; returns when it is done.
  Tick reserve(Tick at, Tick duration) { return busy_.reserve(at, duration); }

 private:
  double bytes_per_clock_ = 0;
  BusyUntil busy_;
};

}  // namespace tdmsim::sim
