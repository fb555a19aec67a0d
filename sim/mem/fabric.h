// The link from one die (XCD) to the memory side: a share of the package's
// fabric bandwidth and a crossing latency; on a package with I/O dies
// (memory.fabric.iods) also the shared links between them (iod_links.h).
#pragma once

#include <string>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include "sim/core/divisor.h"
#include "sim/core/sim_time.h"
#include "sim/core/stats.h"
#include "sim/mem/iod_links.h"
#include "sim/mem/mem_access.h"
#include "workloads/specs/machine_spec.h"

namespace tdmsim::sim {

class Hbm;
class Mall;

class Fabric : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<Fabric> target;
  tlm_utils::simple_initiator_socket<Fabric> initiator;

  // `time`: the GPU's global time.
  Fabric(sc_core::sc_module_name name, const FabricSpec& spec, std::uint32_t dies,
         StatRegistry& stats, const SimClock& time);
  // This die sits on IOD `iod` of `links` (kept by reference): its traffic
  // takes its share of the links between IODs too. Not called: none.
  void attach(IodLinks& links, std::uint32_t iod) {
    links_ = &links;
    iod_ = iod;
  }

  // Binds the initiator to the memory side's target (`mall`, or `hbm` where
  // the machine has no MALL) and sends to it by a direct call (its
  // transport(), handed the request's own extension) rather than through the
  // sockets: the same accesses, in the same order. (Bound any other way, the
  // link sends through its initiator socket.)
  void connect(Mall& mall);
  void connect(Hbm& hbm);

  // What the target socket's b_transport does, called directly by an L2
  // connected to this link (L2Cache::connect): serves `ext`'s access
  // arriving at `arrive` (global time `now`), writes its unloaded round trip
  // and wait into `ext` and returns its completion.
  Tick transport(MemAccessExt& ext, Tick arrive, Tick now);

 private:
  void b_transport(tlm::tlm_generic_payload& p, sc_core::sc_time& delay);
  MemPort port_;  // reused request payload (the socket's path)
  // The memory side where connect() named one (at most one of the two).
  Mall* mall_ = nullptr;
  Hbm* hbm_ = nullptr;
  const SimClock& time_;
  units::Bandwidth link_bw_;
  CeilRatio link_ticks_;  // transfer_ticks(bytes, link_bw_), without its 128-bit division
  Tick latency_;
  BusyUntil link_;
  std::uint64_t bytes_ = 0;
  IodLinks* links_ = nullptr;
  std::uint32_t iod_ = 0;
};

}  // namespace tdmsim::sim
