// The links between the I/O dies (IODs) of a chiplet package, shared by the
// traffic of every die above them (machine memory.fabric.iods; docs/simulator.md
// "Fabric"). Memory interleaved over the stacks of k IODs sends a share of
// 1/k of each transfer to each of them: the share on the requester's own IOD
// stays there, each other IOD's share crosses from that IOD to the
// requester's. Each IOD has one port to the others (memory.fabric.iods.
// link_bandwidth, both directions together) which the data leaving it for
// other IODs' dies and the data arriving for its own dies both take; a
// transfer is done when its shares are through every port it used.
// Simplifications: the ports are the only shared part (no per-link routing,
// no second hop between diagonal IODs of a 2x2 package), and the shares are
// the interleave's even spread rather than each line's own stack.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/sim_time.h"
#include "sim/core/stats.h"

namespace tdmsim::sim {

class IodLinks {
 public:
  // `iods` IODs in the memory pool (at least 2), each port `bw`; the stats
  // are "<prefix>[i]" for IOD i (prefix e.g. "gpu.iod", `first` its first index).
  IodLinks(std::uint32_t iods, units::Bandwidth bw, StatRegistry& stats, const std::string& prefix,
           std::uint32_t first = 0);
  IodLinks(const IodLinks&) = delete;
  IodLinks& operator=(const IodLinks&) = delete;

  // `bytes` read or written at `arrive` by a die on IOD `from`: reserves its
  // shares on the ports and returns when the last one is through.
  Tick transfer(std::uint32_t from, std::uint64_t bytes, Tick arrive);
  std::uint32_t iods() const { return static_cast<std::uint32_t>(ports_.size()); }

 private:
  struct Port {
    BusyUntil busy;
    std::uint64_t bytes = 0;    // crossing this IOD's port, either way
    std::uint64_t busy_ps = 0;  // time those bytes held it
  };
  units::Bandwidth bw_;
  std::vector<Port> ports_;
};

}  // namespace tdmsim::sim
