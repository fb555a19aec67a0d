// Simulated time as integer picoseconds ("ticks"), SystemC's default resolution.
// Blocks reserve shared resources in absolute ticks (busy-until), so timing is
// exact integer arithmetic and bit-identical across runs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <systemc>

#include "workloads/config/units.h"

namespace tdmsim::sim {

using Tick = std::uint64_t;  // picoseconds

inline constexpr Tick kTicksPerNs = 1000;
inline constexpr Tick kTicksPerUs = 1'000'000;

inline Tick ticks(units::Duration d) { return d.ps; }
// Ticks as seconds.
inline double tick_seconds(Tick t) { return static_cast<double>(t) * 1e-12; }

// Global time as one simulated GPU's blocks see it: SystemC's, except while
// CuScheduler runs the compute units' quanta of a kernel, which it does
// without handing back to SystemC (nothing else of that GPU runs during a
// kernel): it sets the time of the quanta it runs here, ahead of SystemC's,
// which catches up when the kernel ends (sim/cu/compute_unit.h). Blocks
// convert between absolute ticks and annotated delays with it. One per GPU
// (owned by its top-level module, sim/platform/gpu.cpp), so that two GPUs of
// one process keep their own time.
class SimClock {
 public:
  Tick now() const {
    // SystemC's time read inline from its context (sc_time_stamp() is a
    // library call, and this runs for every memory request).
    const Tick t = simc_->time_stamp().value();
    return t > units_time_ ? t : units_time_;
  }
  // CuScheduler: the time of the quanta it is running.
  void set_units_time(Tick t) { units_time_ = t; }

  // The watchdog (Gpu::run's time limit): the absolute time the kernels
  // being run must finish by (kNever: no limit). CuScheduler stops the
  // units past it and marks the run stalled.
  static constexpr Tick kNever = ~Tick{0};
  Tick deadline() const { return deadline_; }
  void set_deadline(Tick t) { deadline_ = t; }
  bool stalled() const { return stalled_; }
  void set_stalled() { stalled_ = true; }

 private:
  const sc_core::sc_simcontext* simc_ = sc_core::sc_get_curr_simcontext();
  Tick units_time_ = 0;
  Tick deadline_ = kNever;
  bool stalled_ = false;
};

// Ticks as an sc_time without going through floating point (the kernel's
// time resolution is the default 1 ps): sc_time::from_value(t), written in
// place. from_value is a library call that also marks the resolution fixed
// (already so once anything is simulated), and every memory request
// converts its delay with it several times (4% of a 1024-token DeepSeek-V3
// layer's simulation); an sc_time is its value alone, so the value is
// copied into one. The same sc_time: tests/sim/test_run_batch.cpp.
static_assert(sizeof(sc_core::sc_time) == sizeof(Tick) && std::is_standard_layout_v<sc_core::sc_time>);
inline sc_core::sc_time to_sc_time(Tick t) {
  sc_core::sc_time r;
  std::memcpy(static_cast<void*>(&r), &t, sizeof t);
  return r;
}
// The library's conversion (the reference of to_sc_time).
inline sc_core::sc_time to_sc_time_reference(Tick t) { return sc_core::sc_time::from_value(t); }

// Time to move `bytes` at `bw`, rounded up to a whole picosecond.
inline Tick transfer_ticks(std::uint64_t bytes, units::Bandwidth bw) {
  __extension__ typedef unsigned __int128 u128;
  if (bw.bytes_per_s == 0) return 0;
  // Under 2^24 bytes at under 2^60 B/s (every access a cache serves) the
  // numerator fits 64 bits: the same quotient by one divide instruction
  // rather than the 128-bit division's library call.
  if (bytes < (std::uint64_t{1} << 24) && bw.bytes_per_s < (std::uint64_t{1} << 60)) {
    return (bytes * 1'000'000'000'000ull + bw.bytes_per_s - 1) / bw.bytes_per_s;
  }
  const u128 num = static_cast<u128>(bytes) * 1'000'000'000'000ull;
  return static_cast<Tick>((num + bw.bytes_per_s - 1) / bw.bytes_per_s);
}

// Duration of `cycles` clock cycles at `f`, rounded up.
inline Tick cycle_ticks(double cycles, units::Frequency f) {
  const double ps = cycles * 1e12 / static_cast<double>(f.hz);
  return static_cast<Tick>(ps + 0.999999);
}

// A resource that serves one request at a time (a channel, a pipe): the
// request starts when both it and the resource are ready.
struct BusyUntil {
  Tick free_at = 0;
  // Reserves `duration` starting no earlier than `arrive`; returns the end.
  Tick reserve(Tick arrive, Tick duration) {
    const Tick start = std::max(arrive, free_at);
    free_at = start + duration;
    return free_at;
  }
};

}  // namespace tdmsim::sim
