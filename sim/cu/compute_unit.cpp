#include "sim/cu/compute_unit.h"

#include <algorithm>
#include <cmath>
#include <bit>
#include <stdexcept>

#include "isa/matrix_table.h"
#include "sim/mem/mem_access.h"
#include "sim/platform/dispatcher.h"

namespace tdmsim::sim {

namespace {
// Main-loop iterations are executed in at most this many steps per workgroup:
// groups of iterations share one step, which keeps long K loops cheap to
// simulate while loads and math still overlap across steps.
constexpr std::uint32_t kMaxStepsPerLoop = 32;
// Loads of consecutive main-loop iterations go out together, as one access
// per operand, in K groups of about this many bytes per tile row: a weight
// row streamed over a group is then one run of lines, costed per run by the
// caches and HBM instead of line by line. Each iteration keeps its own
// arrival time (see issue_group), so pipelining is modelled as before.
constexpr std::uint64_t kGroupRowBytes = 8192;
// Dependent loads processed per step of a pointer chase.
constexpr std::uint32_t kChaseBatch = 64;
// Vector operations per gathered row before its loads issue (read the row
// index, scale it, add the base, form the buffer address): our estimate.
constexpr double kGatherOpsPerRow = 4;
}  // namespace

Occupancy occupancy(const ComputeSpec& cu, const isa::TileProgram& p) {
  const ComputeSpec::Occupancy o = cu.occupancy(p.threads, p.lds_bytes, p.vgprs_per_thread);
  return {o.workgroups, std::string(o.limiter)};
}

ComputeUnit::ComputeUnit(sc_core::sc_module_name name, const MachineSpec& machine,
                         std::uint32_t die, std::uint32_t index, Dispatcher& dispatcher,
                         Tick quantum, StatRegistry& stats, TraceWriter* trace,
                         std::uint32_t trace_pid, const SimClock& time)
    : sc_module(name), mem("mem"), machine_(machine), die_(die), index_(index),
      dispatcher_(dispatcher), time_(time), quantum_(quantum), trace_(trace), trace_pid_(trace_pid),
      matrix_pipes_(machine.compute.simds_per_cu), pipe_order_(machine.compute.simds_per_cu), lds_(machine.compute) {
  matrix_rate_.fill(-1.0);
  kernel_rate_.fill(-1.0);
  wgmma_rate_.fill(-1.0);
  ws_rate_.fill(-1.0);
  SC_HAS_PROCESS(ComputeUnit);
  SC_THREAD(run);
  const std::string me = this->name();
  stats.add(me, "workgroups", &workgroups_, "count", "workgroups executed");
  stats.add(me, "busy_time", &busy_ps_, "ps", "time with at least one resident workgroup");
  stats.add(me, "matrix_busy_time", &matrix_busy_ps_, "ps",
            "matrix-pipe busy time summed over SIMDs");
  stats.add(me, "loads", &loads_, "count", "memory load requests issued");
  stats.add(me, "load_bytes", &load_bytes_, "bytes", "bytes loaded");
  stats.add(me, "store_bytes", &store_bytes_, "bytes", "bytes stored");
  // The slots' time by cause (sim/core/slot_time.h), summed over its slots:
  // what `tdmsim run` attributes a layer's time with.
  static constexpr const char* kCauseStats[kSlotCauses][2] = {
      {"slot_dispatch_time", "slot time waiting out the dispatch latency before a workgroup"},
      {"slot_release_wait_time", "slot time with a workgroup held back until its release (TDM time slots)"},
      {"slot_compute_time", "slot time in main-loop iterations' matrix and vector work and epilogues"},
      {"slot_memory_wait_time", "slot time waiting for operands (not token gathers), prologue loads, stores"},
      {"slot_gather_wait_time", "slot time waiting for operands whose last to arrive are gathered token rows"},
      {"slot_idle_time", "slot time with nothing left to run before the unit's last workgroup of a kernel ends"}};
  for (std::size_t c = 0; c < kSlotCauses; ++c) {
    stats.add(me, kCauseStats[c][0], &account_.ps[c], "ps", std::string(kCauseStats[c][1]) + ", summed over slots");
  }
}

void ComputeUnit::run() {
  while (true) {
    wait(dispatcher_.kernel_started);
    begin_kernel();
    Tick wake = resume();
    if (scheduler_ != nullptr) {
      // The scheduler runs the rest of the kernel and notifies `finished_`
      // when the unit is done, so that it waits for the next kernel at the
      // moment it would have on its own.
      if (wake != kDone) {
        scheduler_->add(this, wake);
        wait(finished_);
      }
      continue;
    }
    while (wake != kDone) {
      wait(to_sc_time(wake - sc_core::sc_time_stamp().value()));
      wake = resume();
    }
  }
}

void ComputeUnit::begin_kernel() {
  const isa::KernelLaunch& k = dispatcher_.kernel();
  // Resources are uniform over the grid: workgroup 0's program says them.
  isa::TileProgram& first = first_program_;
  k.build(0, first);
  const Occupancy occ = occupancy(machine_.compute, first);
  if (occ.workgroups == 0) {
    throw std::runtime_error("kernel " + k.name + " does not fit on a CU (limited by " +
                             occ.limiter + ")");
  }
  limiter_ = occ.limiter;
  // Fresh slots, keeping the storage of those the last kernel had.
  slots_.resize(occ.workgroups);
  programs_.resize(occ.workgroups);
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    clear_slot(slots_[i]);
    slots_[i].program = &programs_[i];
    programs_[i].reset();
  }
  // The kernel's engine clock (the governor's, sim/platform/power.h): every
  // cycle count of this CU's pipes turns into time at it. The matrix costs
  // cached for the previous kernel are in its clock's time.
  const units::Frequency clock{static_cast<std::uint64_t>(dispatcher_.clock_hz() > 0 ? dispatcher_.clock_hz()
                                                                                    : static_cast<double>(machine_.compute.clock.hz))};
  if (clock.hz != clock_.hz) {
    clock_ = clock;
    for (auto& c : matrix_costs_) c.valid = false;
    if (machine_.tdm) {
      mover_bw_ = units::Bandwidth{std::uint64_t{machine_.tdm->movers_per_cu} *
                                   machine_.tdm->mover_bytes_per_clock * clock_.hz};
    }
  }
  {
    // Warps per scheduler: the workgroups resident at once (the grid spread
    // evenly over the CUs when it is smaller than their slots) x their warps,
    // over the SIMDs. A measured relation (docs/calibration.md): more warps
    // per scheduler, more cycles between one warp's instructions.
    const auto& cu = machine_.compute;
    const std::uint32_t cus = std::max(1u, dispatcher_.cus());
    const std::uint32_t resident = std::min(occ.workgroups, (k.workgroups + cus - 1) / cus);
    const std::uint32_t waves = std::max(1u, (first.threads + cu.wave_size - 1) / cu.wave_size);
    const double per_scheduler = static_cast<double>(resident) * waves / std::max(1u, cu.simds_per_cu);
    // warp_issue_cycles 0: issue is not modelled at all.
    issue_cycles_ = machine_.kernels.warp_issue_cycles > 0
                        ? machine_.kernels.warp_issue_cycles +
                              machine_.kernels.warp_issue_cycles_per_warp * per_scheduler
                        : 0.0;
  }
  // A pointer chase's address list is the program's only part that grows with
  // the run (--hops): every CU builds workgroup 0's program here, so keeping
  // it would hold a copy per CU (5 KB per hop on mi300x's 304 CUs).
  if (!first.chase.empty()) std::vector<std::uint64_t>().swap(first.chase);
  {
    // The atomic units shared round robin (memory.l2.atomic_sharing
    // workgroups): the epilogue (step) holds each workgroup's adds to its
    // share of every die's units. Here the kernel's figures it needs. (The
    // nominal clock, as the L2's units run at; in double: the product of the
    // keys' largest accepted values exceeds 64 bits.)
    const auto& l2 = machine_.memory.l2;
    atomic_all_bps_ = 0;
    atomic_mean_bytes_ = -1;
    if (l2.atomic_sharing == AtomicSharing::workgroups) {
      atomic_all_bps_ = static_cast<double>(l2.atomic_bytes_per_clock_per_channel) * l2.channels_per_die *
                        machine_.compute.dies * static_cast<double>(machine_.compute.clock.hz);
      atomic_slots_ = std::uint64_t{occ.workgroups} * std::max(1u, dispatcher_.cus());
      atomic_grid_ = k.workgroups;
    }
  }
  // The slots' times, kNotBusy when idle, then in the order they run (order_).
  std::vector<Tick>& times = slot_time_;
  times.assign(slots_.size(), kNotBusy);
  const Tick start = dispatcher_.kernel_start();
  last_end_ = start;
  busy_from_ = start;
  const std::uint32_t claims = dispatcher_.first_claims(die_, index_, static_cast<std::uint32_t>(slots_.size()));
  for (std::size_t i = 0; i < claims; ++i) {
    if (!take_next(slots_[i], start)) break;
    times[i] = slots_[i].time;
  }
  order_.reset(times);
}

Tick ComputeUnit::claim(std::size_t n) {
  Slot& slot = slots_[n];
  return take_next(slot, slot.time) ? slot.time : kNotBusy;
}

bool ComputeUnit::take_next(Slot& s, Tick free) {
  std::uint32_t wg = 0;
  Tick not_before = 0;
  if (!dispatcher_.next(die_, wg, not_before, free)) return false;
  if (wg == Dispatcher::kRetry) {  // the TDM unit holds it back: ask again then
    hold_back(s, free, not_before);
  } else {
    start_counted(s, wg, free, std::max(free + dispatcher_.dispatch_latency(), not_before));
  }
  return true;
}

Tick ComputeUnit::resume() {
  const isa::KernelLaunch& k = dispatcher_.kernel();
  // Global time is the same until resume() returns (only the scheduler moves it).
  const Tick now = time_.now();
  const Tick quantum = quantum_;
  const Tick horizon = now + quantum;
  // A quantum past the unit's own clock for its local steps: global time, or
  // the time it would have waited until had it waited before each of them.
  // (It moves on with a select, not a branch: whether a slot runs more than
  // a quantum ahead of it is data, mispredicted about every fourth step.)
  Tick own_horizon = horizon;
  while (true) {
    // The busy slot with the earliest time (the first of equals): the first
    // in order_, where each change of its time below moves it.
    if (order_.first().time == kNotBusy) break;
    const std::size_t n = order_.first().slot;
    Slot* next = &slots_[n];
    if (next->looping) {
      // A main-loop step (the common one): as below, with global_step's and
      // step()'s cases for it.
      if (next->time > horizon) {
        if (issues_group(*next, next->next_iter)) {
          note_hot(n);
          return next->time;
        }
        own_horizon = next->time > own_horizon ? next->time + quantum : own_horizon;
      }
      loop_step(*next, horizon, own_horizon);
      order_.requeue_first(next->time);
      continue;
    }
    // A global step more than a quantum ahead of global time: wait until the
    // slot's time (shared resources then see requests in nearly chronological
    // order). A local step runs however far ahead the slot is: it touches
    // only the unit's own state. The unit's own resources see its slots as
    // they would have had it waited: its clock moves on to the slot's time
    // (as global time would have), and a step of several iterations stops a
    // quantum past that clock (step()), so one slot's iterations do not
    // reserve the unit's pipes far ahead of its other slots.
    if (next->time > horizon) {
      if (global_step(*next)) {
        note_hot(n);
        return next->time;
      }
      own_horizon = next->time > own_horizon ? next->time + quantum : own_horizon;
    }
    if (next->awaiting) {
      next->awaiting = false;
      order_.requeue_first(claim(n));
      continue;
    }
    const bool finished = step(*next, horizon);
    if (!finished) {
      order_.requeue_first(next->time);
      continue;
    }
    // The workgroup finished: record it and refill the slot.
    next->busy = false;
    ++workgroups_;
    dispatcher_.workgroup_done(next->wg, next->start, next->time);  // a run-time scheduler's feedback
    last_end_ = std::max(last_end_, next->time);
    if (trace_ != nullptr) {
      const auto slot = static_cast<std::uint32_t>(next - slots_.data());
      const auto tid = index_ * 64 + slot;
      if (slot >= trace_named_.size()) trace_named_.resize(slot + 1, false);
      if (!trace_named_[slot]) {  // one track per CU slot, named on first use
        trace_->thread_name(trace_pid_, tid, "cu[" + std::to_string(index_) + "].slot[" +
                                                 std::to_string(slot) + "]");
        trace_named_[slot] = true;
      }
      trace_->slice(trace_pid_, tid, k.name + " wg " + std::to_string(next->wg), next->start,
                    next->time);
    }
    // The next workgroup goes to whichever slot frees first in simulated
    // time: a slot whose last step ended more than a quantum ahead (a long
    // epilogue, say) claims one only when global time gets there, not now,
    // ahead of units that free a slot sooner (which would leave them idle
    // at the kernel's end while this one works through extra workgroups).
    if (next->time > horizon) {
      next->awaiting = true;
      order_.requeue_first(next->time);
      continue;
    }
    order_.requeue_first(claim(n));
  }
  busy_ps_ += last_end_ > busy_from_ ? last_end_ - busy_from_ : 0;
  // Every slot idles from its last workgroup's end (a slot never used: from
  // the kernel's start) to the unit's last: the slots' causes then add up
  // to slots x this unit's window.
  for (const Slot& s : slots_) {
    // A slot held back (hold_back) to a time past the unit's last end found
    // no job left when it asked again: its wait, counted from when it freed
    // (no later than that end), stops at the end of the unit's window.
    if (s.time > last_end_) account_[SlotCause::slot_wait] -= s.time - last_end_;
    const Tick free = std::max(s.time, busy_from_);
    account_[SlotCause::idle] += last_end_ > free ? last_end_ - free : 0;
  }
  account_.window_ps += last_end_ > busy_from_ ? last_end_ - busy_from_ : 0;
  dispatcher_.cu_done(last_end_);
  return kDone;
}

void ComputeUnit::note_hot(std::size_t n) {
  // (The fixed notes below.)
  static constexpr std::size_t kPortLines = (sizeof(MemPort) + 63) / 64;
  static_assert(kPortLines + 9 + (kSlotHotBytes + 63) / 64 + 1 + 2 + 2 <= Hot::kMax);
  if (hot_ == nullptr) return;
  Hot& h = *hot_;
  std::uint32_t k = 0;
  // The unit's own fields that resume(), its steps and send() read first:
  // the line of its references to the dispatcher and the clock (the
  // references themselves: the objects they name are shared and hot), its
  // request payload, its pipes, its slots and their order, its counters.
  h.at[k++] = &issue_cycles_;
  const char* port = reinterpret_cast<const char*>(&port_);
  for (std::size_t line = 0; line < kPortLines; ++line) h.at[k++] = port + 64 * line;
  h.at[k++] = &matrix_pipes_;
  h.at[k++] = matrix_pipes_.data();
  h.at[k++] = &vector_pipe_;
  h.at[k++] = &account_;
  h.at[k++] = &store_bytes_;
  h.at[k++] = &slots_;
  h.at[k++] = &order_;
  h.at[k++] = order_.data();
  // The slot's record, its K group in use, its iterations.
  const Slot& s = slots_[n];
  const char* rec = reinterpret_cast<const char*>(&s);
  for (std::size_t off = 0; off < kSlotHotBytes; off += 64) h.at[k++] = rec + off;
  h.at[k++] = rec + kSlotHotBytes - 1;
  if (!s.groups.empty()) h.at[k++] = &s.groups[s.group_next & s.group_mask];
  if (!s.iter.empty()) h.at[k++] = s.iter.data();
  // The program's loops, which every main-loop step looks its loop up in
  // (loop_of): the vector's header in the slot's program and its first loop.
  h.at[k++] = &s.program->loops;
  if (!s.program->loops.empty()) h.at[k++] = s.program->loops.data();
  h.n = k;
}

// --- CuScheduler ---

CuScheduler::CuScheduler(sc_core::sc_module_name name, SimClock& time)
    : sc_module(name), time_(time) {
  heap_.resize(1);  // 1-based
  SC_HAS_PROCESS(CuScheduler);
  SC_THREAD(run);
}

bool CuScheduler::earlier(const Entry& a, const Entry& b) { return a.wake < b.wake; }

void CuScheduler::insert(ComputeUnit* cu, Tick wake) {
  // Sift up while the parent is strictly later: equal times keep their place.
  const Entry e{wake, cu, cu->hot()};
  heap_.push_back(e);
  std::size_t i = heap_.size() - 1;
  while (i > 1 && earlier(e, heap_[i / 2])) {
    heap_[i] = heap_[i / 2];
    i /= 2;
  }
  heap_[i] = e;
}

ComputeUnit* CuScheduler::extract_top() {
  ComputeUnit* top = heap_[1].cu;
  const Entry e = heap_.back();  // the last entry goes to the top and sifts down
  heap_.pop_back();
  const std::size_t size = heap_.size() - 1;
  if (size == 0) return top;
  // The textbook sift-down moves the entry to the left child if strictly
  // earlier than it, then to the right one if strictly earlier than that,
  // and stops where neither is: wherever it moves, it moves to the earlier
  // child (the left one of equals), and the children along that path only
  // get later. So the same heap comes out of this cheaper order (one
  // comparison a level, not two; "bottom-up" heap extraction): the hole
  // goes down to a leaf along the earlier children, then the entry goes up
  // from there while the parent is not earlier than it.
  Entry* const h = heap_.data();
  std::size_t i = 1;
  while (2 * i < size) {  // both children
    const std::size_t c = earlier(h[2 * i + 1], h[2 * i]) ? 2 * i + 1 : 2 * i;
    h[i] = h[c];
    i = c;
  }
  if (2 * i == size) {  // a left child alone
    h[i] = h[size];
    i = size;
  }
  while (i > 1 && !earlier(h[i / 2], e)) {
    h[i] = h[i / 2];
    i /= 2;
  }
  h[i] = e;
  return top;
}

void CuScheduler::add(ComputeUnit* cu, Tick wake) {
  if (cu->hot() == nullptr) cu->set_hot(&hots_.emplace_back());
  insert(cu, wake);
  work_.notify(sc_core::SC_ZERO_TIME);  // after every unit's start (same delta cycle)
}

void CuScheduler::run() {
  while (true) {
    wait(work_);
    while (heap_.size() > 1) {
      // The units' time moves on to the earliest wait, without SystemC: no
      // other process runs until the kernel ends (the dispatcher waits for
      // the last unit's cu_done, and then, from SystemC's time, for the
      // kernel's end, which is at or after this time).
      const Tick t = heap_[1].wake;
      if (share_ && sc_core::sc_pending_activity()) {
        // Another stream's host or dispatcher acts first: SystemC's time
        // is brought up to it, and the queue read again.
        const Tick now = sc_core::sc_time_stamp().value();
        const Tick next = now + sc_core::sc_time_to_pending_activity().value();
        if (next <= t) {
          if (next == now) {
            wait(sc_core::SC_ZERO_TIME);
          } else {
            wait(to_sc_time(next - now));
          }
          continue;
        }
      }
      if (t > time_.deadline()) {
        // The watchdog: past the run's time limit, the units stop here (they
        // stay waiting; nothing else is pending, so sc_start() returns and
        // Gpu::collect() reports the stall).
        time_.set_stalled();
        heap_.resize(1);
        break;
      }
      time_.set_units_time(t);
      // Every unit due now leaves the queue first, then each runs in turn.
      due_.clear();
      do {
        due_.push_back(extract_top());
      } while (heap_.size() > 1 && heap_[1].wake == t);
      for (ComputeUnit* cu : due_) {
        // The unit likely to run next: ask for its state while this one
        // runs; and for the notes of the two likely to run after it.
        if (heap_.size() > 1) {
          const ComputeUnit::Hot& next = *heap_[1].hot;
          for (std::uint32_t i = 0; i < next.n; ++i) __builtin_prefetch(next.at[i]);
          for (std::size_t after = 2; after <= 3 && after < heap_.size(); ++after) {
            const char* note = reinterpret_cast<const char*>(heap_[after].hot);
            for (std::size_t off = 0; off < sizeof(ComputeUnit::Hot); off += 64) __builtin_prefetch(note + off);
          }
        }
        const Tick wake = cu->resume();
        if (wake == ComputeUnit::kDone) {
          cu->finished_.notify();
        } else {
          insert(cu, wake);
        }
      }
    }
  }
}

void ComputeUnit::start_counted(Slot& s, std::uint32_t wg, Tick free, Tick at) {
  // `at` is the later of free + the dispatch latency and the release time.
  const Tick gap = at > free ? at - free : 0;
  const Tick dispatch = std::min(gap, dispatcher_.dispatch_latency());
  account_[SlotCause::dispatch] += dispatch;
  account_[SlotCause::slot_wait] += gap - dispatch;
  start_workgroup(s, wg, at);
}

void ComputeUnit::hold_back(Slot& s, Tick free, Tick until) {
  // The slot has nothing to run until `until` (a run-time slot model holds
  // its job back): that wait is slot waiting, so the causes still add up.
  account_[SlotCause::slot_wait] += until > free ? until - free : 0;
  s.awaiting = true;
  s.time = std::max(free, until);
}

void ComputeUnit::clear_slot(Slot& s) {
  Slot fresh;
  fresh.iter.swap(s.iter);  // keep the rings' storage
  fresh.groups.swap(s.groups);
  fresh.program = s.program;
  s = std::move(fresh);
}

Tick ComputeUnit::atomic_share_time(std::uint32_t wg, std::uint64_t bytes) {
  // Round robin, the workgroups of a grid, which start together with the same
  // work, reach their epilogue together and finish it together: each one's
  // adds take its bytes at the units' rate over the workgroups resident with
  // it. Those are its wave's (workgroup index over the GPU's slots: the
  // dispatcher hands the grid out in index order, per die with a per-die
  // order), so a last, partial wave shares the units among fewer. A
  // workgroup with fewer bytes than the others ends sooner, and none later
  // than its whole wave's bytes drain, so its bytes count up to the grid's
  // mean (a block's valid rows vary; padding rows add nothing). The mean
  // is worked out once per kernel, by the first workgroup that adds.
  if (atomic_mean_bytes_ < 0) atomic_mean_bytes_ = dispatcher_.mean_atomic_bytes();
  const std::uint64_t slots = std::max<std::uint64_t>(1, atomic_slots_);
  const std::uint64_t wave_start = wg / slots * slots;
  const std::uint64_t resident = std::clamp<std::uint64_t>(atomic_grid_ - std::min(atomic_grid_, wave_start), 1, slots);
  const double counted = std::min(static_cast<double>(bytes), atomic_mean_bytes_);
  return static_cast<Tick>(std::ceil(counted * static_cast<double>(resident) / atomic_all_bps_ * 1e12));
}

void ComputeUnit::start_workgroup(Slot& s, std::uint32_t wg, Tick at) {
  clear_slot(s);
  s.busy = true;
  s.wg = wg;
  dispatcher_.kernel().build(wg, *s.program);
  s.iterations = s.program->iterations();
  s.depth = std::max(1u, s.program->pipeline_depth);
  s.step_iters = (s.iterations + kMaxStepsPerLoop - 1) / kMaxStepsPerLoop;
  s.issue_from = first_issuing(s);
  s.start = at;
  s.time = at;
  s.prologue_done = at;
  // Nothing is issued yet: every request goes out from step(), after the CU
  // has synchronised to the slot's time, so shared resources see requests in
  // (nearly) time order.
}

namespace {
// Operand range `r` as loaded by iteration `iter` of its loop.
MemAccess access_at(const isa::MemRange& r, std::uint32_t iter) {
  MemAccess a;
  a.addr = r.addr + static_cast<std::uint64_t>(static_cast<std::int64_t>(iter) * r.iter_stride);
  a.row_bytes = r.row_bytes;
  a.rows = r.rows;
  a.row_stride = r.row_stride;
  a.gather = r.gather ? r.gather->data() : nullptr;
  return a;
}

// Vector-lane operations of one iteration's software gather of `r`: per row,
// read the index and compute the address, then one op per 16-byte load.
double gather_lane_ops(const isa::MemRange& r) {
  return static_cast<double>(r.rows) * (kGatherOpsPerRow + r.row_bytes / 16.0);
}

// Rows that follow each other without a gap are one range: the caches and
// HBM then walk one run instead of one per row (same lines, same order).
void contiguous(MemAccess& a) {
  if (a.gather == nullptr && a.rows > 1 && a.row_stride == a.row_bytes &&
      std::uint64_t{a.row_bytes} * a.rows <= 0xFFFFFFFFull) {
    a.row_bytes *= a.rows;
    a.rows = 1;
    a.row_stride = 0;
  }
}
}  // namespace

Tick ComputeUnit::send(const MemAccess& a, Tick at, Tick* first, Tick* unloaded) {
  if (a.write) store_bytes_ += a.bytes();
  else load_bytes_ += a.bytes();
  const Tick done = port_.send(mem, a, at, time_.now());
  if (first != nullptr) *first = std::min(done, at + port_.wait() + port_.unloaded());
  if (unloaded != nullptr) *unloaded = port_.unloaded();
  return done;
}

Tick ComputeUnit::issue(const isa::MemRange& r, std::uint32_t iter, bool write, Tick at) {
  MemAccess a = access_at(r, iter);
  a.write = write;
  a.atomic = write && r.atomic;
  a.die = die_;
  contiguous(a);
  if (!write) ++loads_;
  return send(a, at);
}

namespace {
// The loop running global iteration `iter` (iterations counted across the
// program's loops), and the iteration's index inside it.
std::pair<const isa::Loop*, std::uint32_t> loop_of(const isa::TileProgram& p, std::uint32_t iter) {
  for (const auto& l : p.loops) {
    if (iter < l.iterations) return {&l, iter};
    iter -= l.iterations;
  }
  throw std::logic_error("iteration past the program's loops");
}
}  // namespace

namespace {
// How a range of `g` consecutive iterations is one access: the rows grow
// along K (each iteration reads the next bytes of the same rows), or the
// next rows follow (each iteration reads the rows after the last). 0: neither.
enum class Merge { none, along_rows, more_rows };
Merge merge_of(const isa::MemRange& r) {
  if (r.iter_stride == static_cast<std::int64_t>(r.row_bytes)) return Merge::along_rows;
  if (!r.gather && r.row_stride > 0 &&
      r.iter_stride == static_cast<std::int64_t>(std::uint64_t{r.rows} * r.row_stride)) {
    return Merge::more_rows;
  }
  return Merge::none;
}

// Iterations of `loop` whose loads go out together (at most `left`).
std::uint32_t group_size(const isa::Loop& loop, std::uint32_t left) {
  std::uint64_t widest = 1;
  for (const auto& r : loop.loads) {
    if (merge_of(r) == Merge::none) return 1;
    widest = std::max<std::uint64_t>(widest, r.row_bytes);
  }
  return static_cast<std::uint32_t>(std::clamp<std::uint64_t>(kGroupRowBytes / widest, 1, left));
}
}  // namespace

void ComputeUnit::issue_group(Slot& s, Tick at) {
  const auto& p = *s.program;
  const auto [loop, first] = loop_of(p, s.issued);
  const std::uint32_t g = group_size(*loop, loop->iterations - first);
  Tick done = at, first_back = at, unloaded = 0;
  Tick gather_done = 0, rest_done = 0;  // when the gathered token rows, and the rest, are in
  for (const auto& r : loop->loads) {
    MemAccess a = access_at(r, first);
    a.die = die_;
    a.streamed = true;
    if (g > 1) {
      if (merge_of(r) == Merge::along_rows) a.row_bytes *= g;
      else a.rows *= g;
    }
    contiguous(a);
    loads_ += g;
    Tick issued = at, moved = 0;
    if (r.tensor_mover) {
      // The tensor data movers stream the rows into LDS from a descriptor:
      // no wave time, but their own bandwidth bounds when the data is there.
      moved = movers_.reserve(at, transfer_ticks(a.bytes(), mover_bw_));
      done = std::max(done, moved);
    } else if (r.gather) {
      // Waves gather rows themselves (gather_lane_ops); the vector pipe
      // does this first. The group's loads go out once the first
      // iteration's share is done.
      const double ops = gather_lane_ops(r);
      const Tick all = cycle_ticks(ops * g / vector_lanes(), clock_);
      const Tick one = cycle_ticks(ops / vector_lanes(), clock_);
      issued = vector_pipe_.reserve(at, all) - all + one;
    }
    Tick back = 0, lat = 0;
    const Tick sent = send(a, issued, &back, &lat);
    done = std::max(done, sent);
    Tick& mine = r.gather ? gather_done : rest_done;
    mine = std::max({mine, sent, moved});
    first_back = std::max(first_back, back);
    unloaded = std::max(unloaded, issued - at + lat);
  }
  // Iteration j of the group: its data arrives in order over the group's
  // own transfer, which starts once the first bytes are back (after the
  // queueing wait and the round trip) and ends when the last are; and, as
  // when iterations are issued one by one `pipeline_depth` ahead, no sooner
  // than its unloaded round trip after it would have been issued: a
  // workgroup keeps `pipeline_depth` iterations in flight, however many went
  // out together. (The group's queueing wait is not added there: it is
  // inflated by other groups' bandwidth claims, which spread the same bytes
  // over fewer, larger reservations.)
  unloaded = std::min(unloaded, done - at);
  first_back = std::clamp(first_back, at + unloaded, done);
  Slot::Group& group = s.groups[s.groups_issued++ & s.group_mask];
  group = Slot::Group{s.issued, g, at, first_back, done - first_back, unloaded, gather_done > rest_done};
  s.issued += g;
  s.issue_from = first_issuing(s);
}

void ComputeUnit::advance(Slot& s, std::uint32_t upto, Tick at) {
  upto = std::min(upto, s.iterations);
  // A group is issued when the first iteration not yet issued needs it. Its
  // loads reserve the L2's channel time when the L2 looks them up.
  while (s.issued < upto) issue_group(s, at);
}

inline Tick ComputeUnit::operands_ready(Slot& s, std::uint32_t i) const {
  const std::uint32_t depth = s.depth;
  while (i >= s.groups[s.group_next & s.group_mask].first + s.groups[s.group_next & s.group_mask].g) {
    ++s.group_next;
  }
  const Slot::Group& group = s.groups[s.group_next & s.group_mask];
  // Iteration j of the group: its data arrives in order over the group's
  // own transfer (see issue_group).
  const std::uint32_t j = i - group.first;
  const Tick spread = group.first_back + group.span * (j + 1) / group.g;
  // Issued one by one, iteration i's loads would go out when iteration
  // i - depth's math began.
  const Tick would_issue =
      std::max(group.issued_at, i >= depth ? s.iter[(i - depth) & s.iter_mask].math_start : 0);
  return std::max(spread, would_issue + group.latency);
}

double ComputeUnit::vector_lanes() const { return machine_.compute.vector_lanes(); }

Tick ComputeUnit::vector_work(Tick at, double lane_ops, std::uint32_t threads) {
  const Tick pipe = vector_pipe_.reserve(at, cycle_ticks(lane_ops / vector_lanes(), clock_));
  const double cpi = issue_cycles_;
  if (threads == 0 || cpi <= 0) return pipe;
  // Latency-bound issue (docs/moe-timing.md): a warp issues its next
  // instruction only every `cpi` cycles on average, so a workgroup's share
  // of the work takes at least its instructions per thread times that,
  // however idle the pipe is (few warps per scheduler cannot hide it).
  return std::max(pipe, at + cycle_ticks(lane_ops / threads * cpi, clock_));
}

void ComputeUnit::enter_loop(Slot& s, std::uint32_t i) {
  const auto& p = *s.program;
  const auto [loop, first] = loop_of(p, i);
  s.loop = loop;
  s.loop_end = i - first + loop->iterations;
  const auto& cu = machine_.compute;
  const std::uint32_t threads = p.threads;
  const double cpi = issue_cycles_;
  // The matrix product: the pipes it uses and its time on them (matrix_cost:
  // the same per iteration), and its tiles through the LDS.
  if (loop->m > 0) {
    const MatrixCost& c = matrix_cost(*loop, threads);
    s.cost_used = c.used;
    s.cost_dur = c.dur;
    s.cost_busy = c.dur * c.used;
    s.cost_lds = lds_.transfer(Lds::iteration_bytes(*loop), clock_);
  }
  // Its vector work (vector_work's durations for these lane operations).
  if (loop->vector_ops > 0) {
    const double lane_ops = static_cast<double>(loop->vector_ops);
    s.vector_dur = cycle_ticks(lane_ops / vector_lanes(), clock_);
    const std::uint32_t issuing = loop->vector_issue_bound ? threads : 0;
    s.vector_floor = issuing == 0 || cpi <= 0 ? 0 : cycle_ticks(lane_ops / issuing * cpi, clock_);
  }
  // A warp's instructions, each warp_issue_cycles after the last
  // (Loop::issue_instructions): the iteration's critical path when its warps
  // are latency-bound (a barrier every iteration keeps them in step, so no
  // warp runs ahead); none when either is 0.
  s.issue_dur = loop->issue_instructions == 0 || cpi <= 0 ? 0 : cycle_ticks(loop->issue_instructions * cpi, clock_);
  // A CDNA main loop's waves issuing its instructions (Loop::wave_issue).
  // VALU: a wave64 instruction takes 64 / 16 = 4 cycles of its SIMD's 16
  // lanes (ROCm Compute Profiler, "Pipeline descriptions: VALU": four 16-wide
  // SIMDs per CU): the vector pipe at vector_lanes() a clock, every wave of
  // the workgroup, shared with the other workgroups' vector work. MFMAs run
  // on the matrix pipes (matrix()), beside it. Issue: each wavefront, in
  // parallel on its own SIMD, one instruction per turn; the instructions of
  // other types other wavefronts issue in the same turn cost it nothing.
  const isa::Loop::WaveIssue& w = loop->wave_issue;
  if (w.instructions > 0) {
    if (w.valu > 0) {
      s.valu_dur = cycle_ticks(static_cast<double>(w.valu) * std::max(threads, cu.wave_size) / vector_lanes(), clock_);
    }
    s.wave_dur = cycle_ticks(static_cast<double>(w.instructions) * isa::kCdnaIssueTurnCycles, clock_);
  }
  s.tail = loop->wait_ps + p.iteration_overhead_ps;
}

const ComputeUnit::MatrixCost& ComputeUnit::matrix_cost(const isa::Loop& p, std::uint32_t threads) {
  for (const auto& c : matrix_costs_) {
    if (c.valid && c.m == p.m && c.n == p.n && c.k == p.k && c.dtype == p.dtype &&
        c.moe_kernel == p.moe_kernel && c.wgmma == (p.moe_kernel && p.wgmma) &&
        c.ws == (p.moe_kernel && p.wgmma && p.ws) && c.threads == threads) {
      return c;
    }
  }
  const auto& cu = machine_.compute;
  // FLOP per clock of one SIMD, with the efficiency folded in: the ISA's
  // fastest instruction, or the MoE kernels' instructions and their own factor
  // (their wgmma loops: the ISA's rate and the wgmma factor).
  const auto d = static_cast<std::size_t>(p.dtype);
  const bool wgmma = p.moe_kernel && p.wgmma;
  const bool ws = wgmma && p.ws;
  double& rate = ws ? ws_rate_[d] : wgmma ? wgmma_rate_[d] : p.moe_kernel ? kernel_rate_[d] : matrix_rate_[d];
  if (rate < 0) {
    if (ws) {
      rate = isa::matrix_flops_per_clock_per_cu(machine_.isa, p.dtype, 1) * machine_.kernels.wgmma_ws_efficiency;
    } else if (wgmma) {
      // 8-bit loops wait for each K tile's products to promote them (fused_moe.hip).
      rate = isa::matrix_flops_per_clock_per_cu(machine_.isa, p.dtype, 1) *
             (dtype_bits(p.dtype) == 8 ? machine_.kernels.wgmma_fp8_efficiency : machine_.kernels.wgmma_efficiency);
    } else if (p.moe_kernel) {
      rate = isa::kernel_matrix_flops_per_clock_per_simd(machine_, p.dtype) * machine_.kernels.matrix_efficiency;
    } else {
      rate = isa::matrix_flops_per_clock_per_cu(machine_.isa, p.dtype, 1);
    }
    rate *= cu.matrix_efficiency;
  }
  const double per_simd = rate;
  if (per_simd <= 0) {
    throw std::runtime_error(std::string("no matrix instruction for ") +
                             std::string(config::enum_name(p.dtype)) + " on this machine");
  }
  MatrixCost& c = matrix_costs_[next_matrix_cost_];
  next_matrix_cost_ = (next_matrix_cost_ + 1) % matrix_costs_.size();
  c = MatrixCost{true, p.m, p.n, p.k, p.dtype, p.moe_kernel, wgmma, ws, threads, 0, 0};
  // A workgroup's waves spread over at most `simds` matrix pipes.
  const std::uint32_t waves = std::max(1u, (threads + cu.wave_size - 1) / cu.wave_size);
  c.used = std::min<std::uint32_t>(waves, cu.simds_per_cu);
  const double flops = 2.0 * p.m * p.n * p.k;
  const double cycles = flops / (per_simd * c.used);
  c.dur = cycle_ticks(cycles, clock_);
  return c;
}

inline Tick ComputeUnit::matrix(Slot& s, Tick ready) {
  // The cost of a loop shape is the same every iteration: computed once per
  // shape (matrix_cost) and kept by the slot while it runs the loop (enter_loop).
  const std::uint32_t used = s.cost_used;
  const Tick dur = s.cost_dur;
  Tick start = ready;
  BusyUntil* const q = matrix_pipes_.data();
  if (used == matrix_pipes_.size()) {  // every pipe: no choice to make
    if (pipes_even_) {
      start = std::max(start, q[0].free_at);
    } else {
      for (const auto& pipe : matrix_pipes_) start = std::max(start, pipe.free_at);
    }
    // All of them free at once now (pipes_even_: the first's time stands for all).
    q[0].free_at = start + dur;
    pipes_even_ = true;
  } else {
    if (pipes_even_) {
      for (auto& pipe : matrix_pipes_) pipe.free_at = q[0].free_at;
      pipes_even_ = false;
    }
    // The `used` pipes free first (pipes free at the same time are
    // interchangeable, so how ties fall does not matter).
    auto& pipes = pipe_order_;  // scratch: no allocation per matrix step
    for (std::size_t i = 0; i < matrix_pipes_.size(); ++i) pipes[i] = &matrix_pipes_[i];
    std::partial_sort(pipes.begin(), pipes.begin() + used, pipes.end(),
                      [](const BusyUntil* a, const BusyUntil* b) { return a->free_at < b->free_at; });
    for (std::uint32_t i = 0; i < used; ++i) start = std::max(start, pipes[i]->free_at);
    for (std::uint32_t i = 0; i < used; ++i) pipes[i]->free_at = start + dur;
  }
  matrix_busy_ps_ += s.cost_busy;
  return start + dur;
}

bool ComputeUnit::global_step(const Slot& s) {
  // Claiming the next workgroup (`awaiting`: the slot's workgroup ended, or
  // the TDM unit held the claim back): the dispatcher's queue and a
  // run-time slot model (tdm_slot_runtime.cpp) are shared by every unit, and
  // take_next may start a workgroup whose first step is global too.
  if (s.awaiting) return true;
  // The first step: the prologue's loads and the first K groups go to memory.
  if (!s.started) return true;
  // A pointer chase: every step sends dependent loads.
  if (!s.program->chase.empty()) return true;
  // A main-loop step: global when its first iteration issues a K group (its
  // loads go to the L1/L2 and on, reserving their channel time there). The
  // rest (operand waits, matrix pipes, LDS, the vector pipe, issue) is the
  // unit's own; step() stops before a later iteration of the step that issues.
  if (s.next_iter < s.iterations) return issues_group(s, s.next_iter);
  // Waiting for the prologue's loads, and the epilogue's vector work: the
  // unit's own (step() stops before the stores when they follow at once).
  if (s.prologue_done > s.time || !s.epilogue_done) return false;
  // The stores go to memory, and the workgroup's end is reported to the
  // dispatcher (workgroup_done: a run-time scheduler's feedback).
  return true;
}

inline void ComputeUnit::loop_step(Slot& s, Tick horizon, Tick own_horizon) {
  const std::uint32_t depth = s.depth;
  const std::uint32_t end = std::min(s.iterations, s.next_iter + s.step_iters);
  // The step also ends once the slot's time runs a quantum ahead of the
  // unit's clock (resume(): own_horizon): a loop of many iterations would
  // otherwise run `step_iters` of them, several microseconds, past the unit's
  // other slots, which then queue after its pipe reservations; and before
  // an iteration that issues a K group once the slot is a quantum ahead of
  // global time (`horizon`): the group's loads reserve L2 channel time, and
  // units behind in time must not queue after reservations made that far
  // ahead (tests/sim/test_compute_unit.cpp). (step_iters: the iterations
  // over kMaxStepsPerLoop, rounded up.)
  // (The slot's time and iteration are kept in registers over the step,
  // and its compute time counted once at the end: every iteration moves
  // the time on, never back, so the sum is the difference.)
  // (The step's first iteration always runs: resume() calls it with
  // next_iter < end, having returned already when the slot's time is past
  // the horizon at an iteration that issues, and with its clock moved on to
  // within a quantum of the slot's time: so the checks come after each
  // iteration, for the next.)
  std::uint32_t i = s.next_iter;
  Tick t = s.time;
  const Tick from = t;
  while (true) {
    // (A step that waited for iteration i's operands came back at the time
    // they are ready: nothing of the slot's changed since, so they still are.)
    if (s.waited != i) {
      const Tick operands = operands_ready(s, i);
      const Tick ready = std::max(s.prologue_done, operands);
      if (ready > t) {  // operands not here yet: come back when they are
        // Token gather when the last of the K group's loads to complete is
        // a gather of token rows (and the prologue is in), else memory.
        const bool gather = operands > s.prologue_done && s.groups[s.group_next & s.group_mask].gather_bound;
        account_[SlotCause::compute] += t - from;
        account_[gather ? SlotCause::gather : SlotCause::memory] += ready - t;
        s.time = ready;
        s.next_iter = i;
        s.waited = i;
        return;
      }
    }
    // The iteration's buffer is free once its math starts: the loads
    // `depth` iterations ahead may go (with the rest of their K group).
    s.iter[i & s.iter_mask].math_start = t;
    advance(s, i + depth + 1, t);
    if (i >= s.loop_end) enter_loop(s, i);
    const isa::Loop& loop = *s.loop;
    const Tick math = loop.m > 0 ? matrix(s, t) : t;
    // Its tiles written into the LDS and its operands read out, beside the math.
    const Tick lds = loop.m > 0 ? lds_.reserve(t, s.cost_lds) : t;
    // Its vector work (after the math, or beside it), reserving the vector
    // pipe; with an issue floor, no sooner than each of its warps has issued
    // its share one instruction per warp_issue_cycles (vector_work).
    const Tick vector_from = loop.vector_after_matrix ? math : t;
    const Tick vector = loop.vector_ops > 0
                            ? std::max(vector_pipe_.reserve(vector_from, s.vector_dur), vector_from + s.vector_floor)
                            : vector_from;
    // A CDNA loop's waves issuing its instructions, its VALU ones on the vector pipe.
    Tick waves = t;
    if (loop.wave_issue.instructions > 0) {
      const Tick valu = loop.wave_issue.valu > 0 ? vector_pipe_.reserve(t, s.valu_dur) : t;
      waves = std::max(valu, t + s.wave_dur);
    }
    t = std::max({math, lds, vector, t + s.issue_dur, waves}) + s.tail;
    ++i;
    if (i >= end || t > own_horizon || (t > horizon && issues_group(s, i))) break;
  }
  account_[SlotCause::compute] += t - from;
  s.time = t;
  s.next_iter = i;
  s.looping = i < s.iterations;
}

inline bool ComputeUnit::step(Slot& s, Tick horizon) {
  const auto& p = *s.program;
  const std::uint32_t depth = s.depth;
  if (!s.started) {  // issue the prologue and the first `depth` iterations' loads
    s.started = true;
    for (const auto& r : p.prologue_loads) {
      s.prologue_done = std::max(s.prologue_done, issue(r, 0, false, s.time));
    }
    // Rings of whole powers of two, so an index is a mask.
    s.iter.assign(std::bit_ceil(depth + 1), Slot::Iteration{});
    s.iter_mask = static_cast<std::uint32_t>(s.iter.size()) - 1;
    s.groups.assign(std::bit_ceil(depth + 2), Slot::Group{});
    s.group_mask = static_cast<std::uint32_t>(s.groups.size()) - 1;
    advance(s, depth, s.time);
    if (p.chase.empty()) {
      s.looping = s.iterations > 0;
      return false;
    }
  }
  if (!p.chase.empty()) {  // dependent loads: each waits for the previous
    const std::uint32_t end =
        std::min<std::uint32_t>(static_cast<std::uint32_t>(p.chase.size()), s.next_iter + kChaseBatch);
    for (; s.next_iter < end; ++s.next_iter) {
      move_to(s, issue(isa::strided(p.chase[s.next_iter], 4), 0, false, s.time), SlotCause::memory);
    }
    return s.next_iter >= p.chase.size();
  }
  // (The main loop's steps are loop_step's: resume() runs them, s.looping.)
  if (s.prologue_done > s.time) {
    move_to(s, s.prologue_done, SlotCause::memory);
    return false;
  }
  // Epilogue: vector work, then stores; the workgroup ends when they land.
  // The stores go out in a step of their own, once the unit has synchronised
  // to the end of the vector work: issued at once after a long epilogue
  // they would reserve memory channels ahead of other units' earlier
  // requests and delay those (shared resources expect requests in nearly
  // time order).
  if (!s.epilogue_done) {
    s.epilogue_done = true;
    Tick t = s.time + p.extra_time_ps;
    if (p.epilogue_vector_ops > 0) {
      const std::uint32_t issuing = p.epilogue_threads > 0 ? p.epilogue_threads : p.threads;
      t = vector_work(t, static_cast<double>(p.epilogue_vector_ops), p.epilogue_issue_bound ? issuing : 0);
    }
    if (t > s.time) {
      move_to(s, t, SlotCause::compute);
      return false;
    }
    // (The epilogue step is local, global_step: the stores wait for global time.)
    if (s.time > horizon) return false;
  }
  Tick done = s.time;
  for (const auto& r : p.stores) done = std::max(done, issue(r, 0, true, s.time));
  if (atomic_all_bps_ > 0) {
    if (const std::uint64_t atomic_bytes = p.atomic_store_bytes(); atomic_bytes > 0) {
      done = std::max(done, s.time + atomic_share_time(s.wg, atomic_bytes));
    }
  }
  move_to(s, done, SlotCause::memory);
  return true;
}

}  // namespace tdmsim::sim
