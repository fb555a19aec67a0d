#include "sim/mem/fabric.h"

#include <algorithm>

#include "sim/mem/run_batch.h"

namespace tdmsim::sim {

Fabric::Fabric(sc_core::sc_module_name name, const FabricSpec& spec, std::uint32_t dies,
               StatRegistry& stats, const SimClock& time)
    : sc_module(name), target("target"), initiator("initiator"), time_(time),
      link_bw_{spec.bandwidth.bytes_per_s / dies}, latency_(ticks(spec.latency)) {
  target.register_b_transport(this, &Fabric::b_transport);
  stats.add(this->name(), "bytes", &bytes_, "bytes", "bytes crossing this die's fabric link");
}

void Fabric::b_transport(tlm::tlm_generic_payload& p, sc_core::sc_time& delay) {
  auto* ext = p.get_extension<MemAccessExt>();
  const Tick now = time_.now();
  const Tick arrive = now + delay.value();
  // Each run of a batch takes the link on its own, in order (run_batch.h).
  Tick link_done = arrive;
  for_each_in_batch(ext->access, [&](const MemAccess& a) {
    const std::uint64_t bytes = a.bytes();
    bytes_ += bytes;
    link_done = std::max(link_done, link_.reserve(arrive, transfer_ticks(bytes, link_bw_)));
    if (links_ != nullptr) link_done = std::max(link_done, links_->transfer(iod_, bytes, arrive));
  });
  // Requests go out as soon as they arrive; the link's occupancy bounds when
  // the data can be back.
  const Tick mem_done = port_.send(initiator, ext->access, arrive + latency_, now);
  ext->unloaded = latency_ + port_.unloaded();
  ext->wait = port_.wait();
  delay = to_sc_time(std::max(mem_done, link_done) - now);
}

}  // namespace tdmsim::sim
