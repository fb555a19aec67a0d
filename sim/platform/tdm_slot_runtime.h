// The TDM unit's run-time dispatch of one descriptor's jobs (docs/moe-timing.md
// "Slot models" and "Dynamic policy"): which job a free CU slot gets and when
// it may start, decided while the kernel runs, from the jobs handed out and
// the completions the CUs report.
//
// Slot models (tdm.slot_model):
//   wave_synchronous  the n-th job handed out belongs to time slot n / wave
//                     (wave = one machine wave: CUs x workgroups per CU; the
//                     last of tdm.slots takes the rest); a time slot opens when
//                     the previous one has been open for the longest length
//                     among the slot records it started jobs of.
//   continuous        a time slot is a budget of in-flight jobs (one machine
//                     wave, what the CUs hold): the next job in policy order
//                     goes to whichever CU slot frees first; lengths and
//                     tdm.slots do not apply.
//   skip_drained      wave_synchronous, but the next time slot opens as soon
//                     as every job of the current one has finished (its work
//                     has drained), if that comes before its length is up. A
//                     free CU slot waiting for it asks again every `poll`.
// Policies: jobs come in policy order (TdmScheduler::place); with `dynamic`
// they come in groups (one per expert, each in N-tile order) and each free CU
// slot takes the next job of the group with the most estimated remaining work
// per job in flight: remaining jobs x the mean run time of the group's
// finished jobs (all groups' mean before any of its own finished; equal
// weights before any finished) / (its jobs in flight + 1). The allocation of
// CU slots to experts therefore follows the completions as they arrive.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/core/sim_time.h"
#include "sim/platform/dispatcher.h"
#include "workloads/specs/enums.h"

namespace tdmsim::sim {

// What one descriptor's run cost in CU-slot time, ps unless said (summed over
// its jobs; the TDM-vs-software attribution reads these through the stats).
struct SlotCounters {
  std::uint64_t jobs = 0;            // count
  std::uint64_t dispatch_ps = 0;     // each job's dispatch latency
  std::uint64_t slot_wait_ps = 0;    // a free CU slot's wait for the job's time slot to open,
                                     // beyond the dispatch latency
  std::uint64_t busy_ps = 0;         // jobs' run time, start to end
  std::uint64_t retries = 0;         // count: free CU slots told to ask again (skip_drained)
  std::uint64_t drained_slots = 0;   // count: time slots opened early, the previous one drained
  std::uint64_t skipped_ps = 0;      // wall time of slot lengths so skipped (not CU-slot time)
};

class TdmSlotRuntime final : public RuntimeDispatch {
 public:
  struct Job {
    std::uint32_t wg = 0;     // the kernel's workgroup
    std::uint32_t group = 0;  // dynamic: its expert's group (0..groups-1)
    Tick length = 0;          // its slot record's length
  };
  struct Params {
    TdmSlotModel model = TdmSlotModel::wave_synchronous;
    bool dynamic = false;         // choose among groups at run time
    bool timed = true;            // false: every job released at once (low_latency)
    std::uint32_t per_slot = 1;   // jobs per time slot (one machine wave)
    std::uint32_t slots = 1;      // tdm.slots
    Tick dispatch = 0;            // tdm.dispatch_latency
    Tick poll = 1000;             // skip_drained: how often a waiting CU slot asks again
  };
  // `jobs` in policy order (with `dynamic`: each group's jobs in their order).
  TdmSlotRuntime(std::vector<Job> jobs, const Params& params);

  Pick pick(Tick kernel_start, Tick free_at, std::uint32_t& wg, Tick& at) override;
  void done(std::uint32_t wg, Tick start, Tick end) override;

  const SlotCounters& counters() const { return counters_; }
  // Each time slot that opened: when (relative to the kernel's start) and how
  // long it stayed open (its length, or until it drained); continuous and
  // untimed runs: one slot.
  struct Opened {
    Tick open = 0, length = 0;
  };
  std::vector<Opened> opened() const;

 private:
  // The next job to hand out (an index into jobs_).
  std::uint32_t choose() const;

  std::vector<Job> jobs_;
  Params p_;
  std::vector<bool> taken_;
  std::uint32_t handed_ = 0;
  Tick kernel_start_ = 0;
  // dynamic: per group, its jobs' indices in order, the next one, in flight,
  // finished and their summed run time.
  struct Group {
    std::vector<std::uint32_t> jobs;
    std::size_t next = 0;
    std::uint32_t in_flight = 0, finished = 0;
    double run_ps = 0;
  };
  std::vector<Group> groups_;
  std::uint32_t finished_ = 0;
  double run_ps_ = 0;
  // Per time slot: open time, longest record, jobs out, latest end.
  struct Wave {
    Tick open = 0, length = 0;
    std::uint32_t outstanding = 0;
    Tick drained = 0;
    bool closed_early = false;
  };
  std::vector<Wave> waves_;
  std::vector<std::uint32_t> wave_of_, job_of_;  // per workgroup id
  SlotCounters counters_;
};

}  // namespace tdmsim::sim
