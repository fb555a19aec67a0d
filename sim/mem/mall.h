// The memory-side last-level cache (AMD Infinity Cache): one slice per HBM
// stack in front of that stack's channels. Read hits are served at the
// slice's share of the MALL bandwidth; read misses go to HBM and fill the
// slice. Writes pass through to HBM without allocating (an assumption: no
// public source says how the MI300X MALL treats writes; write-back would let
// a 1 GiB copy "beat" the HBM peak, which measurements do not show).
#pragma once

#include <memory>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>
#include <tlm_utils/simple_initiator_socket.h>

#include "sim/core/sim_time.h"
#include "sim/core/stats.h"
#include "sim/mem/cache_tags.h"
#include "sim/mem/hbm.h"
#include "sim/mem/mem_access.h"
#include "sim/mem/run_batch.h"

namespace tdmsim::sim {

class Mall : public sc_core::sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<Mall> target;
  tlm_utils::simple_initiator_socket<Mall> initiator;

  // `map` is the HBM address map, so a line is cached in its own stack's
  // slice; `time` is the GPU's global time.
  Mall(sc_core::sc_module_name name, const MallSpec& spec, const HbmAddressMap& map,
       std::uint32_t stacks, StatRegistry& stats, const SimClock& time);

  // Serves a batch's runs one by one and sends each run's misses to HBM in
  // a call of its own (the reference of the batches of run_batch.h and of
  // serve_batch, for tests) instead of serving the batch as a whole.
  void set_runs_one_by_one(bool on) { one_by_one_ = on; }

  // Binds the initiator to `hbm`'s target and sends to that HBM by a direct
  // call (Hbm::transport, DirectLink) rather than through the sockets: the
  // same accesses, in the same order. (Bound any other way, the MALL sends
  // through its initiator socket.)
  void connect(Hbm& hbm) {
    initiator.bind(hbm.target);
    hbm_link_.target = &hbm;
  }

  // The bytes of tag records a MALL of `spec` over `stacks` HBM stacks
  // allocates (a slice per stack, as the constructor makes them): for
  // host-memory estimates.
  static std::uint64_t tag_bytes(const MallSpec& spec, std::uint32_t stacks);

  // What the target socket's b_transport does, called directly by a fabric
  // link connected to this MALL (Fabric::connect): serves `ext`'s access
  // arriving at `arrive` (global time `now`), writes its unloaded round trip
  // and wait into `ext` and returns its completion.
  Tick transport(MemAccessExt& ext, Tick arrive, Tick now);

 private:
  void b_transport(int id, tlm::tlm_generic_payload& p, sc_core::sc_time& delay);
  // Serves single access `a` (a batch's run, or an access that is none)
  // arriving at `arrive` (global time `now`); folds its answer into `answer`.
  void serve_one(const MemAccess& a, Tick arrive, Tick now, BatchAnswer& answer);
  // Looks single access `b`'s lines up: its hit lines per slice into
  // lines_per_slice_ (all zero before: the caller zeroes each count it
  // reads), its missed runs (merged) into misses_v_, the hit and miss
  // stats; returns its missed lines. With `each_run`, serve_batch's walk:
  // batch `b`'s runs in turn, each run's transfer times into slice_sum_,
  // slice_last_ and slice_used_ and what it sends on to HBM onto below_ (the
  // walk's set-up made once for the batch).
  std::uint64_t look_up(const MemAccess& b, bool each_run = false);
  // Serves batch `b` (run_batch.h) as serve_one would serve its runs in
  // turn, with one reservation per slice and one call to HBM for the whole
  // batch (mall_batch.cpp: the same answer, state and stats).
  void serve_batch(const MemAccess& b, Tick arrive, Tick now, BatchAnswer& answer);

  MemPort port_;  // reused request payload
  DirectLink<tlm_utils::simple_initiator_socket<Mall>, Hbm> hbm_link_{initiator};  // HBM (connect)
  const SimClock& time_;
  MallSpec spec_;
  HbmAddressMap map_;
  std::uint32_t stacks_;
  Divisor per_stack_;  // HBM channels behind one slice
  units::Bandwidth slice_bw_;
  std::vector<CacheTags> slices_;
  std::vector<std::uint32_t*> slice_records_;  // each slice's tag records (one geometry for all)
  std::vector<BusyUntil> slice_bus_;
  static constexpr std::uint64_t kRequesterLine = 128;
  static std::uint64_t tag_line(const MallSpec& spec) {
    return std::max<std::uint64_t>(spec.line.bytes, kRequesterLine);
  }
  // Tag lines sharing one tag (sector block, cache_tags.h): 4 KiB blocks.
  static constexpr std::uint32_t kBlockLines = 32;
  std::uint64_t tag_line_ = 128;
  // Per line run: the run's interleave chunk and its length in tag lines
  // (powers of two in every shipped machine: shifts, not divides).
  Divisor chunk_div_{4096}, line_div_{128};
  // Decoded interleave chunks (slice, address inside the slice of the chunk's
  // first byte), direct-mapped by chunk number: a read's look-ahead decodes
  // each chunk a few chunks before the lookup needs it, which then reuses it.
  // (The decode depends on the address alone, so entries stay valid.)
  struct Decoded {
    std::uint64_t chunk = ~0ull;  // the chunk's first byte (~0: empty)
    std::uint32_t slice = 0;
    std::uint64_t local = 0;
  };
  static constexpr std::size_t kDecoded = 16;  // a power of two
  // The map's, per_stack_'s, chunk_div_'s and line_div_'s divisors are powers
  // of two (every shipped machine): the run loop then shifts and masks.
  bool pow2_ = false;
  Decoded decoded_[kDecoded];
  std::vector<std::uint32_t> lines_per_slice_;
  std::vector<ByteRun> misses_v_;
  std::vector<ByteRun> batch_;  // scratch: misses_v_'s runs as sent to HBM (send_runs)
  // serve_batch's scratch: per slice, the sum of its runs' transfer times,
  // the last one's, whether any run used it; the runs sent on to HBM.
  std::vector<Tick> slice_sum_, slice_last_;
  std::vector<std::uint8_t> slice_used_;
  // transfer_ticks(n tag lines, slice_bw_) for n below its size (a run's
  // lines on one slice, looked up instead of divided: the same values).
  std::vector<Tick> line_ticks_;
  std::vector<ByteRun> below_;
  bool one_by_one_ = false;
  bool streak_hint_ = true;  // look_up's: whether its last chunk missed whole (no effect on results)
  std::uint64_t hits_ = 0, misses_ = 0;
};

}  // namespace tdmsim::sim
