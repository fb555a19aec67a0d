#include "sim/mem/fabric.h"

#include <algorithm>

#include "sim/mem/hbm.h"
#include "sim/mem/mall.h"
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

void Fabric::connect(Mall& mall) {
  initiator.bind(mall.target);
  mall_ = &mall;
}

void Fabric::connect(Hbm& hbm) {
  initiator.bind(hbm.target);
  hbm_ = &hbm;
}

void Fabric::b_transport(tlm::tlm_generic_payload& p, sc_core::sc_time& delay) {
  const Tick now = time_.now();
  delay = to_sc_time(transport(*p.get_extension<MemAccessExt>(), now + delay.value(), now) - now);
}

Tick Fabric::transport(MemAccessExt& ext, Tick arrive, Tick now) {
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
    for_each_in_batch(ext.access, [&](const MemAccess& a) {
      bytes += a.bytes();
      busy += link_ticks_(a.bytes());
      any = true;
    });
    bytes_ += bytes;
    if (any) link_done = std::max(link_done, link_.reserve(arrive, busy));
  } else {
    for_each_in_batch(ext.access, [&](const MemAccess& a) {
      const std::uint64_t bytes = a.bytes();
      bytes_ += bytes;
      link_done = std::max(link_done, link_.reserve(arrive, link_ticks_(bytes)));
      link_done = std::max(link_done, links_->transfer(iod_, bytes, arrive));
    });
  }
  // Requests go out as soon as they arrive; the link's occupancy bounds when
  // the data can be back.
  // The memory side is handed the request's own extension (it reads only the
  // access and writes only its answer, as into a copy: the same answer).
  Tick mem_done;
  if (mall_ != nullptr) {
    mem_done = mall_->transport(ext, arrive + latency_, now);
  } else if (hbm_ != nullptr) {
    mem_done = hbm_->transport(ext, arrive + latency_, now);
  } else {
    mem_done = port_.send(initiator, ext.access, arrive + latency_, now);
    ext.unloaded = port_.unloaded();
    ext.wait = port_.wait();
  }
  ext.unloaded += latency_;
  return std::max(mem_done, link_done);
}

}  // namespace tdmsim::sim
