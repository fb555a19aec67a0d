// Where a path's time goes, cause by cause, and the TDM-vs-software
// difference broken into the same causes (docs/moe-timing.md, "Where the time
// goes"). Every cause is measured from the run (stage times, the CUs' slot
// time by cause, sim/core/slot_time.h); none is a remainder. A path's causes
// add up to its total in whole picoseconds, so the per-cause differences add
// up to the difference of the totals exactly.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "apps/tdmsim/layer_sim.h"
#include "workloads/config/writer.h"

namespace tdmsim::cli {

struct Cause {
  const char* key;    // summary.json
  const char* label;  // text summary and plot
};
inline constexpr std::size_t kCauses = 7;
extern const std::array<Cause, kCauses> kCauseList;

// A path's total split by cause, in picoseconds (each stage's split rounded
// to whole ps so that the stage's causes add up to its time exactly).
struct PathCauses {
  std::array<std::int64_t, kCauses> ps{};
  std::int64_t total_ps = 0;
  // Parts of causes, in us, for the detail: dispatch latency, release waits,
  // the write-back after the last workgroup, the idle slots and CUs.
  double dispatch_us = 0, slot_wait_us = 0, write_back_us = 0, slot_idle_us = 0, cu_tail_us = 0;
  double kernel_boundary_us = 0;  // launch.kernel_boundary of the host-launched kernels (in `launch`)
};

// Throws std::logic_error (an internal error) if the CUs' slot time does not
// partition a stage's window exactly.
PathCauses path_causes(const PathRun& r, const MachineSpec& m);

// summary.json paths[]'s "time_by_cause": cause -> us, and a "detail" object.
config::Json causes_json(const PathCauses& c);

// summary.json's "tdm_vs_software": totals, delta (TDM - software, us; < 0:
// TDM faster) and per cause both paths' time and the delta, in us and ps.
config::Json tdm_vs_software(const PathCauses& software, const PathCauses& tdm);

// The text summary's table of it.
void print_tdm_vs_software(const config::Json& j);

}  // namespace tdmsim::cli
