// One compute unit's L1 vector data cache (the texture/L1 cache on NVIDIA):
// a set-associative tag array with real addresses and LRU, write-through
// without allocation, invalidated at each kernel's start (a kernel's
// acquire), with one port of `compute.l1_bytes_per_clock` that serves hits.
//
// What goes through it: loads are looked up line by line; lines that hit are
// served by the L1 (its port's time, then `compute.l1_hit_latency`), lines
// that miss go below as runs of lines, and an access that misses whole goes
// below unchanged (the level below's load-to-use already holds the L1's
// lookup: `memory.l2.hit_latency` is measured through it). Stores, the
// K-grouped main-loop tile loads (MemAccess::streamed: each tile is
// read once per workgroup and streams past) and loads of at least the L1's
// capacity (streams: their own lines would evict each other) go below
// unchanged, without allocating.
//
// Sits between the compute unit's `mem` socket and the die's L2, wired by the
// platform builder (sim/platform/gpu.cpp); absent when compute.l1_per_cu is 0.
#pragma once

#include <cstdint>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include "sim/core/sim_time.h"
#include "sim/core/stats.h"
#include "sim/mem/cache_tags.h"
#include "sim/mem/mem_access.h"
#include "workloads/specs/machine_spec.h"

namespace tdmsim::sim {

class L2Cache;

class L1Cache : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<L1Cache> target;
  tlm_utils::simple_initiator_socket<L1Cache> initiator;

  // The L1 of `cu` (its l1_* keys), its port's bandwidth at the CU's peak
  // clock; `time` is the GPU's global time.
  L1Cache(sc_core::sc_module_name name, const ComputeSpec& cu, StatRegistry& stats, const SimClock& time);

  // Drops every line (a kernel's start: the L1 is not coherent with other
  // CUs' writes, so each kernel starts with it empty).
  void invalidate();

  // Binds the initiator to `l2`'s target and sends to that L2 by a direct
  // call (L2Cache::transport) rather than through the sockets' indirect
  // calls: the same accesses, in the same order. (Bound any other way, the
  // L1 sends through its initiator socket.)
  void connect(L2Cache& l2);

 private:
  void b_transport(tlm::tlm_generic_payload& p, sc_core::sc_time& delay);

  // Passes the requester's payload `p` (its extension `ext`) below as it
  // came: to the L2 directly where connect() bound one, else on the socket.
  void pass_below(tlm::tlm_generic_payload& p, MemAccessExt& ext, sc_core::sc_time& delay);
  void send_by_socket(tlm::tlm_generic_payload& p, sc_core::sc_time& delay);

  MemPort port_;  // reused request payload (misses below)
  // The level below: the L2 directly where connect() bound one (L2Cache::transport), else the socket.
  DirectLink<tlm_utils::simple_initiator_socket<L1Cache>, L2Cache> below_{initiator};
  const SimClock& time_;
  ComputeSpec spec_;
  CacheTags tags_;
  std::uint64_t line_ = 128;
  std::uint64_t capacity_ = 0;
  Tick hit_latency_ = 0;
  units::Bandwidth bandwidth_{};
  BusyUntil port_busy_;  // the port that serves hits
  std::vector<ByteRun> misses_;  // scratch: an access's missed lines as runs (empty between accesses)
  std::uint64_t hits_ = 0, misses_count_ = 0, hit_bytes_ = 0, passed_bytes_ = 0;
};

}  // namespace tdmsim::sim
