// One compute unit (an SM on NVIDIA): resident workgroup slots limited by
// wave slots, LDS and registers; matrix pipes (one per SIMD) costed from the
// isa/ tables; a vector pipe for epilogues; memory requests with real
// addresses through its memory port (the `mem` socket, wired by the platform
// builder: the unit never names the level below it). Loads of the next
// `pipeline_depth` iterations overlap the current iteration's math.
//
// Execution is temporally decoupled: the CU runs its resident workgroups'
// steps in time order on a local clock, reserving shared resources in
// absolute time. A step that other units or shared blocks see (a global
// step: ComputeUnit::global_step) waits until global time is within a
// quantum of it, so shared reservations stay nearly chronological; the
// steps between, which touch only the unit's own state, run ahead
// regardless, on a clock of the unit's own that moves on as global time
// would have had the unit waited (the waits are run by CuScheduler, below,
// in the order SystemC would run them).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "isa/tile_program.h"
#include "sim/core/sim_time.h"
#include "sim/core/slot_time.h"
#include "sim/core/stats.h"
#include "sim/core/trace.h"
#include "sim/cu/lds.h"
#include "sim/cu/slot_order.h"
#include "sim/mem/mem_access.h"
#include "workloads/specs/machine_spec.h"

namespace tdmsim::sim {

class Dispatcher;
class CuScheduler;

// How many workgroups of `p` fit on one CU at once, and what limits it.
struct Occupancy {
  std::uint32_t workgroups = 0;
  std::string limiter;  // "waves", "lds", "registers"
};
Occupancy occupancy(const ComputeSpec& cu, const isa::TileProgram& p);

class ComputeUnit : public sc_core::sc_module {
 public:
  tlm_utils::simple_initiator_socket<ComputeUnit> mem;

  // `time`: the GPU's global time (set by its CuScheduler during kernels).
  ComputeUnit(sc_core::sc_module_name name, const MachineSpec& machine, std::uint32_t die,
              std::uint32_t index, Dispatcher& dispatcher, Tick quantum, StatRegistry& stats,
              TraceWriter* trace, std::uint32_t trace_pid, const SimClock& time);
  // With a scheduler, the unit's thread only starts each kernel and the
  // scheduler's one thread runs the rest (see CuScheduler); without, the
  // unit's own thread waits out each quantum.
  void set_scheduler(CuScheduler* s) { scheduler_ = s; }

  static constexpr Tick kDone = ~Tick{0};
  // Runs the kernel on from where it stopped until the next slot's next step
  // is global and more than a quantum ahead of global time; returns that
  // slot's time (to wait until), or kDone when the unit has finished its
  // share of the kernel.
  Tick resume();
  // Starts the dispatcher's next workgroup in slot n at the slot's time;
  // returns that time, or kNotBusy (the slot is idle) when the kernel has
  // none left.
  Tick claim(std::size_t n);
  // Notified (immediately) by the scheduler when resume() returned kDone.
  sc_core::sc_event finished_;

  // The host addresses a unit reads first when it is resumed next (its
  // fields, the records of the slot it will step), noted as resume() returns
  // to wait: the scheduler asks the host's caches for them while the unit
  // before it runs. (256 units' slots do not fit the host's caches, so a
  // unit's state is cold again by its next quantum, and its first reads
  // depend on each other.) No effect on results.
  struct alignas(64) Hot {  // (whole host cache lines: the scheduler asks for them line by line)
    static constexpr std::size_t kMax = 23;
    std::uint32_t n = 0;
    const void* at[kMax] = {};  // (a record of three host cache lines)
  };
  // Where resume() notes them (set by the scheduler; none without one).
  void set_hot(Hot* hot) { hot_ = hot; }
  const Hot* hot() const { return hot_; }

  // Where its slots' time went, over every kernel so far (slot_time.h), and
  // the slots the last kernel had (its workgroups per CU) and what limited
  // them ("waves", "lds", "registers": ComputeSpec::occupancy).
  const SlotTime& slot_time() const { return account_; }
  std::size_t slots() const { return slots_.size(); }
  const std::string& occupancy_limiter() const { return limiter_; }

 private:
  struct Slot {
    // The K groups in flight (loads are issued a group at a time, see
    // issue_group), in a ring: group n at n & group_mask. At most
    // pipeline_depth + 1 are in use (from next_iter's to the last issued).
    struct Group {
      std::uint32_t first = 0;  // its first iteration
      std::uint32_t g = 1;      // its iterations
      Tick issued_at = 0;       // when its loads went out
      Tick first_back = 0;      // its transfer's first and last bytes back
      Tick span = 0;
      Tick latency = 0;         // its unloaded round trip
      bool gather_bound = false;  // its last load to complete is a gather of token rows
    };
    // Per iteration, in a ring (iteration i at i & iter_mask): at most
    // pipeline_depth + 1 are in use (math starts back to next_iter - depth).
    // A small ring per slot rather than a record per iteration keeps the 8
    // slots of 256 compute units in the host's caches.
    struct Iteration {
      Tick math_start = 0;  // when its matrix work began
    };
    // (What every step reads comes first: the record's first host cache
    // lines, which ComputeUnit::note_hot names.)
    Tick time = 0;            // local time of the slot's next step
    Tick prologue_done = 0;
    std::uint32_t iterations = 0;  // over all of the program's loops
    std::uint32_t next_iter = 0;
    std::uint32_t issued = 0;  // loop iterations whose loads are issued
    std::uint32_t issue_from = 0;  // first_issuing(): set with `issued`
    std::uint32_t group_mask = 0;
    std::uint32_t groups_issued = 0;
    std::uint32_t group_next = 0;  // the group holding next_iter
    std::uint32_t iter_mask = 0;
    std::uint32_t waited = ~0u;        // the iteration whose operands the slot waits for
    bool busy = false;
    bool started = false;     // prologue and first loads issued
    bool awaiting = false;    // finished; claims its next workgroup at `time`
    bool epilogue_done = false;  // its vector work charged; the stores are next
    // In its main loop: started, no pointer chase, iterations left (so not
    // awaiting either): its next step is loop_step's.
    bool looping = false;
    std::uint32_t depth = 1;       // max(1, program.pipeline_depth)
    std::uint32_t step_iters = 1;  // main-loop iterations a step runs at most
    // The loop running the slot's next iterations (of its own program, so
    // the pointer stays valid while the workgroup runs) up to global
    // iteration `loop_end`, and what each of its iterations costs on the
    // unit's pipes: looked up once per loop (enter_loop), each duration the
    // same expression on the same values as per iteration before.
    const isa::Loop* loop = nullptr;
    std::uint32_t loop_end = 0;
    std::uint32_t cost_used = 0;  // matrix pipes (m > 0)
    Tick cost_dur = 0;            // on each of them
    Tick cost_busy = 0;           // cost_dur x cost_used (matrix_busy_time)
    Tick cost_lds = 0;  // the loop's LDS time per iteration (Lds::iteration_bytes)
    Tick vector_dur = 0;    // vector_ops on the vector pipe (vector_work)
    Tick vector_floor = 0;  // and their issue floor (0: none)
    Tick valu_dur = 0;      // wave_issue's VALU instructions on the vector pipe
    Tick wave_dur = 0;      // wave_issue's issue turns
    Tick issue_dur = 0;     // issue_floor's
    Tick tail = 0;          // wait_ps + the program's iteration_overhead_ps
    std::vector<Group> groups;
    std::vector<Iteration> iter;
    // (The rest is read once per K group or workgroup.)
    std::uint32_t wg = 0;
    Tick start = 0;
    // Its workgroup's program: the slot's own in programs_, kept apart so
    // that clearing the slot for a workgroup moves none of its vectors.
    isa::TileProgram* program = nullptr;
  };
  // The bytes of a Slot that every step reads (from its start).
  static constexpr std::size_t kSlotHotBytes = offsetof(Slot, wg);

  void run();  // SC_THREAD: one kernel after another, as the dispatcher starts them
  // Notes the addresses of slot n's and the unit's state in *hot_.
  void note_hot(std::size_t n);
  // Sets up a kernel's slots and hands out the first workgroups.
  void begin_kernel();
  void start_workgroup(Slot& s, std::uint32_t wg, Tick at);
  // Makes s a fresh Slot{} but for its program, keeping the storage of its
  // rings (start_workgroup rebuilds the program in place).
  static void clear_slot(Slot& s);
  // begin_kernel's scratch: the kernel's first program (its storage kept).
  isa::TileProgram first_program_;
  // Whether iteration i of slot s issues a K group when its math starts
  // (advance then reaches past the iterations issued:
  // min(i + depth + 1, iterations) > issued).
  static bool issues_group(const Slot& s, std::uint32_t i) { return i >= s.issue_from; }
  // The first such iteration, from the iterations issued so far: none
  // (~0u) once all are; else the first whose i + depth + 1 passes them.
  static std::uint32_t first_issuing(const Slot& s) {
    if (s.issued >= s.iterations) return ~0u;
    return s.issued > s.depth ? s.issued - s.depth : 0;
  }
  // Whether slot s's next step is global: seen by other units or shared
  // blocks, so it waits until global time is within a quantum of it (the
  // cases and why: compute_unit.cpp). The other steps run ahead.
  static bool global_step(const Slot& s);
  // Advances a slot by one step other than a main-loop one; returns true
  // when its workgroup has finished. `horizon`: global time plus a quantum
  // (fixed while resume() runs).
  [[gnu::always_inline]] inline bool step(Slot& s, Tick horizon);
  // A main-loop step (s.looping): runs iterations from s.next_iter; clears
  // s.looping when they are all done. `own_horizon`: the unit's clock plus
  // a quantum. (Inlined into resume(), its one caller: a million calls a
  // 64-token layer, whose register saves cost more than the code it
  // duplicates.)
  [[gnu::always_inline]] inline void loop_step(Slot& s, Tick horizon, Tick own_horizon);
  // Slot s's iteration i (global over the program's loops) starts a loop:
  // notes the loop, where it ends, and its iterations' fixed durations.
  void enter_loop(Slot& s, std::uint32_t i);
  // Sends `a`; returns its completion. With `first`: when its first bytes
  // could be back (issue + queueing wait + unloaded round trip), and the
  // unloaded round trip alone in `*unloaded`.
  Tick send(const MemAccess& a, Tick at, Tick* first = nullptr, Tick* unloaded = nullptr);
  Tick issue(const isa::MemRange& r, std::uint32_t iter, bool write, Tick at);
  // Issues the loads of the next K group of iterations (from s.issued) at `at`.
  void issue_group(Slot& s, Tick at);
  // Issues the K groups of the iterations before `upto` (at most the
  // program's), all at `at`.
  void advance(Slot& s, std::uint32_t upto, Tick at);
  // When iteration `i`'s operands are in LDS.
  // (Moves s.group_next on to i's group: call in iteration order.)
  // (These two run once per main-loop iteration, from step() only: inlined
  // there, where their calls' set-up cost as much as their work.)
  [[gnu::always_inline]] inline Tick operands_ready(Slot& s, std::uint32_t i) const;
  // (The loop's matrix pipes and duration: s.cost_used, s.cost_dur.)
  [[gnu::always_inline]] inline Tick matrix(Slot& s, Tick ready);
  // The pipes a loop's matrix product uses and how long it takes on them.
  struct MatrixCost {
    bool valid = false;
    std::uint32_t m = 0, n = 0, k = 0;
    DType dtype{};
    bool moe_kernel = false;
    bool wgmma = false;
    bool ws = false;
    std::uint32_t threads = 0;
    std::uint32_t used = 0;
    Tick dur = 0;
  };
  const MatrixCost& matrix_cost(const isa::Loop& loop, std::uint32_t threads);
  // Element operations the vector pipe does per clock (all SIMDs' lanes).
  double vector_lanes() const;
  // With memory.l2.atomic_sharing workgroups: how long workgroup `wg`'s
  // `bytes` of atomic adds take at its share of the units (the epilogue).
  Tick atomic_share_time(std::uint32_t wg, std::uint64_t bytes);
  // Reserves the vector pipe for `lane_ops` element operations (all SIMDs'
  // lanes together) from `at`; returns when they are done. With `threads`
  // (> 0, the work being the workgroup's own instructions) and
  // kernels.warp_issue_cycles set, also no sooner than each of its warps has
  // issued its share one instruction per warp_issue_cycles.
  Tick vector_work(Tick at, double lane_ops, std::uint32_t threads = 0);
  // Cycles between a warp's instructions for the running kernel
  // (kernels.warp_issue_cycles + warp_issue_cycles_per_warp x its warps per
  // scheduler; 0 when warp_issue_cycles is 0), set by begin_kernel.
  double issue_cycles_ = 0.0;
  // With memory.l2.atomic_sharing workgroups (set by begin_kernel; the rate
  // 0 with fifo): all the GPU's atomic units' rate (bytes/s), the kernel's
  // workgroup slots on the whole GPU and its grid, and (worked out at the
  // first workgroup with atomic stores, -1 before) its atomic bytes a
  // workgroup on the grid's mean.
  double atomic_all_bps_ = 0;
  std::uint64_t atomic_slots_ = 0, atomic_grid_ = 0;
  double atomic_mean_bytes_ = -1;

  const MachineSpec& machine_;
  std::uint32_t die_;
  std::uint32_t index_;
  Dispatcher& dispatcher_;
  const SimClock& time_;
  Tick quantum_;
  TraceWriter* trace_;
  std::uint32_t trace_pid_;
  MemPort port_;  // reused request payload
  std::vector<BusyUntil> matrix_pipes_;  // one per SIMD
  // Every matrix pipe is free at matrix_pipes_[0]'s time (the others' are
  // then not kept): after a product on all of them, as most are.
  bool pipes_even_ = true;
  std::vector<BusyUntil*> pipe_order_;   // scratch for matrix(): pipes by free time
  // Matrix FLOPs per clock per SIMD by dtype, looked up on first use (< 0: not yet).
  std::array<double, 16> matrix_rate_;  // per dtype: ISA rate, MoE-kernel rate, MoE wgmma rate
  std::array<double, 16> kernel_rate_;
  std::array<double, 16> wgmma_rate_;
  std::array<double, 16> ws_rate_;
  // The last loop shapes costed (a kernel has one or two), replaced in turn.
  std::array<MatrixCost, 4> matrix_costs_{};
  std::size_t next_matrix_cost_ = 0;
  BusyUntil vector_pipe_;
  Lds lds_;
  BusyUntil movers_;              // the CU's tensor data movers, as one pipe
  units::Frequency clock_{};      // this kernel's engine clock (begin_kernel)
  units::Bandwidth mover_bw_{};   // their combined bandwidth (0: none, free)
  CuScheduler* scheduler_ = nullptr;
  Hot* hot_ = nullptr;
  std::vector<Slot> slots_;
  std::vector<isa::TileProgram> programs_;  // slot i's program (Slot::program)
  static constexpr Tick kNotBusy = ~Tick{0};  // the time of an idle slot
  std::vector<Tick> slot_time_;  // begin_kernel's scratch: each slot's time, or kNotBusy
  SlotOrder order_;              // the slots by time (kNotBusy when idle)
  Tick last_end_ = 0;            // the kernel's last workgroup end so far
  std::string limiter_;          // what limited the last kernel's slots (occupancy())
  Tick busy_from_ = 0;
  std::vector<bool> trace_named_;  // slots whose trace track has a name
  // Moves slot `s` on to `t`, the time between counted as cause `c`.
  void move_to(Slot& s, Tick t, SlotCause c) {
    account_[c] += t > s.time ? t - s.time : 0;
    s.time = t;
  }
  // Starts workgroup `wg` in slot `s`, free since `free`, at `at`.
  void start_counted(Slot& s, std::uint32_t wg, Tick free, Tick at);
  // Slot `s`, free since `free`, is told to ask again at `until`.
  void hold_back(Slot& s, Tick free, Tick until);
  // Asks the dispatcher for slot `s`'s next workgroup (free since `free`) and
  // starts it, or holds the slot back; false when the kernel has none left.
  bool take_next(Slot& s, Tick free);
  SlotTime account_;
  std::uint64_t workgroups_ = 0, busy_ps_ = 0, matrix_busy_ps_ = 0, loads_ = 0,
                load_bytes_ = 0, store_bytes_ = 0;
};

// Runs the compute units' quanta in one SystemC thread instead of one
// thread each: a unit more than a quantum ahead of global time waits in a
// binary heap ordered by the time it waits for, and the scheduler moves the
// units' time (its GPU's SimClock, sim/core/sim_time.h) on to the earliest, takes
// every unit due then out of the heap in heap order, and resumes each in
// turn, until the kernel is done. The heap works as SystemC's timed-event
// queue does (sc_ppq: a textbook binary heap, with the same strict
// comparisons, and every event due at one time taken out before any runs),
// and during a kernel the units' waits were the only timed events, so the
// units run in the order their threads would have: results are unchanged,
// without a thread switch and a timed event per unit and quantum.
class CuScheduler : public sc_core::sc_module {
 public:
  // `time`: the GPU's clock, whose units' time it moves on.
  CuScheduler(sc_core::sc_module_name name, SimClock& time);
  // A unit (from its own thread, at a kernel's start) waits until `wake`.
  void add(ComputeUnit* cu, Tick wake);
  // Several kernel streams at once (tenants, sim/platform/partitioned_gpu.h):
  // before running the units due at a time, SystemC is brought up to any
  // earlier (or equal) activity of its own, so that a stream whose kernel
  // has ended launches its next one at its time while the others' units
  // run on. Off (one stream): the units run a whole kernel without SystemC.
  void set_streams_share(bool on) { share_ = on; }

 private:
  struct Entry {
    Tick wake = 0;
    ComputeUnit* cu = nullptr;
    const ComputeUnit::Hot* hot = nullptr;  // the unit's noted addresses
  };
  static bool earlier(const Entry& a, const Entry& b);
  void insert(ComputeUnit* cu, Tick wake);
  ComputeUnit* extract_top();
  void run();  // SC_THREAD

  SimClock& time_;
  std::vector<Entry> heap_;        // 1-based
  std::vector<ComputeUnit*> due_;  // scratch: the units due at one time
  std::deque<ComputeUnit::Hot> hots_;  // one per unit (stable addresses)
  sc_core::sc_event work_;
  bool share_ = false;
};

}  // namespace tdmsim::sim
