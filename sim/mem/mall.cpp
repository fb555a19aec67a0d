#include "sim/mem/mall.h"

#include <algorithm>
#include <vector>

namespace tdmsim::sim {

Mall::Mall(sc_core::sc_module_name name, const MallSpec& spec, const HbmAddressMap& map,
           std::uint32_t stacks, StatRegistry& stats)
    : sc_module(name), target("target"), initiator("initiator"), spec_(spec), map_(map),
      stacks_(stacks), slice_bw_{spec.bandwidth.bytes_per_s / stacks} {
  // Tags are kept at the requesters' (L2) line size: our tile kernels never
  // access less than an L2 line, and halving the tag work keeps a GiB-sized
  // stream cheap to simulate. Capacity and associativity are unchanged.
  per_stack_ = Divisor(std::max(1u, map.channels / stacks));
  tag_line_ = std::max<std::uint64_t>(spec.line.bytes, kRequesterLine);
  for (std::uint32_t s = 0; s < stacks; ++s) {
    slices_.emplace_back(spec.size.bytes / stacks, static_cast<std::uint32_t>(tag_line_),
                         spec.ways);
  }
  slice_bus_.resize(stacks);
  lines_per_slice_.resize(stacks);
  target.register_b_transport(this, &Mall::b_transport);
  const std::string me = this->name();
  stats.add(me, "hits", &hits_, "lines", "MALL line hits");
  stats.add(me, "misses", &misses_, "lines", "MALL line misses (filled from HBM)");
  stats.share(me, "hit_rate", &hits_, &misses_, "MALL hits / accesses");
}

void Mall::prefetch(std::uint64_t addr) const {
  const std::uint32_t ch = map_.channel(addr);
  slices_[per_stack_.div(ch)].prefetch(map_.group_local(addr, per_stack_));
}

void Mall::b_transport(int, tlm::tlm_generic_payload& p, sc_core::sc_time& delay) {
  const MemAccess& a = p.get_extension<MemAccessExt>()->access;
  const Tick now = sc_core::sc_time_stamp().value();
  const Tick arrive = now + delay.value();
  const std::uint64_t line = tag_line_;
  std::fill(lines_per_slice_.begin(), lines_per_slice_.end(), 0u);
  misses_v_.clear();
  for (std::uint32_t r = 0; r < a.rows; ++r) {
    const std::uint64_t begin = a.row(r);
    const std::uint64_t end = begin + a.row_bytes;
    if (!a.write && r + 4 < a.rows) prefetch(a.row(r + 4));  // short rows: a few rows ahead
    for (std::uint64_t l = begin & ~(line - 1); l < end; l += line) {
      if (!a.write && l + 4 * line < end) prefetch(l + 4 * line);  // 4 lines ahead (see L2)
      const std::uint32_t ch = map_.channel(l);
      const auto slice = static_cast<std::uint32_t>(per_stack_.div(ch));
      if (a.write) {  // write-through, no allocate: the data goes on to HBM
        ++lines_per_slice_[slice];
        continue;
      }
      // Tags are keyed by the line's address inside its slice (the slice's
      // channels' blocks packed densely), so a slice's sets all get used.
      const std::uint64_t local = map_.group_local(l, per_stack_);
      if (slices_[slice].access(local, false).hit) {  // lines are never dirty here
        ++hits_;
        ++lines_per_slice_[slice];
      } else {
        ++misses_;
        misses_v_.push_back(l);
      }
    }
  }
  Tick done = arrive;
  for (std::size_t sl = 0; sl < slice_bus_.size(); ++sl) {
    if (lines_per_slice_[sl] == 0) continue;
    const Tick end = slice_bus_[sl].reserve(arrive, transfer_ticks(line * lines_per_slice_[sl], slice_bw_));
    done = std::max(done, end + ticks(spec_.hit_latency));
  }
  if (a.write) done = std::max(done, port_.send(initiator, a, arrive, now));
  if (!a.write && !misses_v_.empty() && misses_v_.size() * line == a.bytes() &&
      a.line_aligned(line)) {
    done = std::max(done, port_.send(initiator, a, arrive, now));  // all missed: forward whole
    misses_v_.clear();
  }
  for_each_run(misses_v_, line, false, a.die, [&](const MemAccess& m) {
    done = std::max(done, port_.send(initiator, m, arrive, now));
  });
  delay = to_sc_time(done - now);
}

}  // namespace tdmsim::sim
