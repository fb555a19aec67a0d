#include "sim/mem/iod_links.h"

#include <algorithm>
#include <stdexcept>

namespace tdmsim::sim {

IodLinks::IodLinks(std::uint32_t iods, units::Bandwidth bw, StatRegistry& stats, const std::string& prefix,
                   std::uint32_t first)
    : bw_(bw), ports_(iods) {
  if (iods < 2) throw std::invalid_argument("IodLinks: needs at least 2 IODs");
  for (std::uint32_t i = 0; i < iods; ++i) {
    const std::string owner = prefix + "[" + std::to_string(first + i) + "]";
    stats.add(owner, "link_bytes", &ports_[i].bytes, "bytes",
              "bytes through this IOD's port to the other IODs (to its dies from other IODs' memory, and from its "
              "memory to other IODs' dies)");
    stats.add(owner, "link_busy_time", &ports_[i].busy_ps, "ps", "time those bytes held the port");
  }
}

Tick IodLinks::transfer(std::uint32_t from, std::uint64_t bytes, Tick arrive) {
  const auto k = static_cast<std::uint32_t>(ports_.size());
  const std::uint64_t share = bytes / k;  // each IOD's share of the interleave
  if (share == 0) return arrive;
  Tick done = arrive;
  auto take = [&](Port& p, std::uint64_t b) {
    const Tick t = transfer_ticks(b, bw_);
    p.bytes += b;
    p.busy_ps += t;
    done = std::max(done, p.busy.reserve(arrive, t));
  };
  take(ports_[from], share * (k - 1));
  for (std::uint32_t i = 0; i < k; ++i) {
    if (i != from) take(ports_[i], share);
  }
  return done;
}

}  // namespace tdmsim::sim
