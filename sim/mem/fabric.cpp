#include "sim/mem/fabric.h"

#include <algorithm>

#include "sim/mem/run_batch.h"

namespace tdmsim::sim {

Fabric::Fabric(sc_core::sc_module_name name, const FabricSpec& spec, std::uint32_t dies,
               StatRegistry& stats, const SimClock& time)
    : sc_module(name), target("target"), initiator("initiator"), time_(time),
      link_bw_{spec.bandwidth.bytes_per_s / dies}, link_ticks_(1'000'000'000'000ull, link_bw_.bytes_per_s),
      latency_(ticks(spec.latency)) {
  target.register_b_transport(this, &Fabric::b_transport);
  stats.add(this->name(), "bytes", &bytes_, "bytes", "bytes crossing this die's fabric link");
}

void Fabric::b_transport(tlm::tlm_generic_payload& p, sc_core::sc_time& delay) {
  auto* ext = p.get_extension<MemAccessExt>();
  const Tick now = time_.now();
  const Tick arrive = now + delay.value();
  // Each run of a batch takes the link on its own, in order (run_batch.h).
  // All arrive at `arrive`, so after the first each starts where the last
  // ended: the link ends at max(arrive, free) + the sum of their durations,
  // one reservation of the sum (with none for an empty batch), and that end
  // is the latest of theirs. (Each duration rounded on its own, as before.)
  Tick link_done = arrive;
  if (links_ == nullptr) {
    std::uint64_t bytes = 0;
    Tick busy = 0;
    bool any = false;  // (an empty batch reserves nothing)
    for_each_in_batch(ext->access, [&](const MemAccess& a) {
      bytes += a.bytes();
      busy += link_ticks_(a.bytes());
      any = true;
    });
    bytes_ += bytes;
    if (any) link_done = std::max(link_done, link_.reserve(arrive, busy));
  } else {
    for_each_in_batch(ext->access, [&](const MemAccess& a) {
      const std::uint64_t bytes = a.bytes();
      bytes_ += bytes;
      link_done = std::max(link_done, link_.reserve(arrive, link_ticks_(bytes)));
      link_done = std::max(link_done, links_->transfer(iod_, bytes, arrive));
    });
  }
  // Requests go out as soon as they arrive; the link's occupancy bounds when
  // the data can be back.
  const Tick mem_done = port_.send(initiator, ext->access, arrive + latency_, now);
  ext->unloaded = latency_ + port_.unloaded();
  ext->wait = port_.wait();
  delay = to_sc_time(std::max(mem_done, link_done) - now);
}

}  // namespace tdmsim::sim
