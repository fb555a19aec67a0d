#include "sim/mem/mall.h"

#include <algorithm>
#include <vector>

namespace tdmsim::sim {

Mall::Mall(sc_core::sc_module_name name, const MallSpec& spec, const HbmAddressMap& map,
           std::uint32_t stacks, StatRegistry& stats, const SimClock& time)
    : sc_module(name), target("target"), initiator("initiator"), time_(time), spec_(spec), map_(map),
      stacks_(stacks), slice_bw_{spec.bandwidth.bytes_per_s / stacks} {
  // Tags are kept at the requesters' (L2) line size: our tile kernels never
  // access less than an L2 line, and halving the tag work keeps a GiB-sized
  // stream cheap to simulate. Capacity and associativity are unchanged.
  per_stack_ = Divisor(std::max(1u, map.channels / stacks));
  tag_line_ = std::max<std::uint64_t>(spec.line.bytes, kRequesterLine);
  chunk_div_ = Divisor(std::max(map.interleave, tag_line_));
  line_div_ = Divisor(tag_line_);
  for (std::uint32_t s = 0; s < stacks; ++s) {
    slices_.emplace_back(spec.size.bytes / stacks, static_cast<std::uint32_t>(tag_line_),
                         spec.ways, kBlockLines);
  }
  slice_bus_.resize(stacks);
  lines_per_slice_.resize(stacks);
  target.register_b_transport(this, &Mall::b_transport);
  const std::string me = this->name();
  stats.add(me, "hits", &hits_, "lines", "MALL line hits");
  stats.add(me, "misses", &misses_, "lines", "MALL line misses (filled from HBM)");
  stats.share(me, "hit_rate", &hits_, &misses_, "MALL hits / accesses");
}

void Mall::b_transport(int, tlm::tlm_generic_payload& p, sc_core::sc_time& delay) {
  auto* ext = p.get_extension<MemAccessExt>();
  const MemAccess& a = ext->access;
  const Tick now = time_.now();
  const Tick arrive = now + delay.value();
  const std::uint64_t line = tag_line_;
  const std::uint64_t chunk = std::max(map_.interleave, line);  // one channel, one slice
  std::fill(lines_per_slice_.begin(), lines_per_slice_.end(), 0u);
  misses_v_.clear();
  std::uint64_t missed_lines = 0;
  // The tag sets of the chunk kAhead chunks on in this row, and of the first
  // kAhead chunks of the row kAhead rows on, are asked for while this chunk
  // is looked up, so that their host cache misses overlap.
  constexpr std::uint32_t kAhead = 4;
  // (Lambdas GCC would find pure and drop: see CacheTags::prefetch.)
  const auto prefetch_at = [&](std::uint64_t addr) __attribute__((always_inline)) {
    const auto [channel, local] = map_.channel_and_group_local(addr, per_stack_);
    slices_[per_stack_.div(channel)].prefetch(local);
  };
  const auto prefetch_row = [&](std::uint32_t r) __attribute__((always_inline)) {
    const std::uint64_t begin = a.row(r);
    const std::uint64_t first = begin - chunk_div_.mod(begin);
    const std::uint64_t end = std::min(begin + a.row_bytes, first + kAhead * chunk);
    for (std::uint64_t c = first; c < end; c += chunk) prefetch_at(c);
  };
  if (!a.write) {
    for (std::uint32_t r = 0; r < a.rows && r < kAhead; ++r) prefetch_row(r);
  }
  for (std::uint32_t r = 0; r < a.rows; ++r) {
    if (!a.write && r + kAhead < a.rows) prefetch_row(r + kAhead);
    const std::uint64_t begin = a.row(r);
    const std::uint64_t end = begin + a.row_bytes;
    const std::uint64_t last = (end + line - 1) & ~(line - 1);
    // Runs of lines inside one interleave chunk (one slice) and one tag block.
    for (std::uint64_t l = begin & ~(line - 1); l < last;) {
      std::uint64_t n = line_div_.div(std::min(chunk - chunk_div_.mod(l), last - l));
      if (!a.write && l + kAhead * chunk < last) prefetch_at(l + kAhead * chunk);
      const auto [channel, local] = map_.channel_and_group_local(l, per_stack_);
      const auto slice = static_cast<std::uint32_t>(per_stack_.div(channel));
      if (a.write) {  // write-through, no allocate: the data goes on to HBM
        lines_per_slice_[slice] += static_cast<std::uint32_t>(n);
        l += n * line;
        continue;
      }
      // Tags are keyed by the line's address inside its slice (the slice's
      // channels' blocks packed densely), so a slice's sets all get used.
      CacheTags& tags = slices_[slice];
      n = std::min<std::uint64_t>(n, tags.lines_to_block_end(local));
      const CacheTags::Run res = tags.access(local, static_cast<std::uint32_t>(n), false);  // never dirty
      const auto missed = CacheTags::count(res.missed);
      hits_ += n - missed;
      misses_ += missed;
      missed_lines += missed;
      lines_per_slice_[slice] += static_cast<std::uint32_t>(n - missed);
      for_each_bit_run(res.missed, [&](std::uint32_t first, std::uint32_t len) {
        append_run(misses_v_, l + first * line, std::uint64_t{len} * line);
      });
      l += n * line;
    }
  }
  Tick done = arrive;
  Tick unloaded = 0, wait = 0;
  for (std::size_t sl = 0; sl < slice_bus_.size(); ++sl) {
    if (lines_per_slice_[sl] == 0) continue;
    const Tick dur = transfer_ticks(line * lines_per_slice_[sl], slice_bw_);
    const Tick end = slice_bus_[sl].reserve(arrive, dur);
    done = std::max(done, end + ticks(spec_.hit_latency));
    unloaded = ticks(spec_.hit_latency);
    wait = std::max(wait, end - dur - arrive);
  }
  if (a.write) {
    done = std::max(done, port_.send(initiator, a, arrive, now));
    unloaded = std::max(unloaded, port_.unloaded());
    wait = std::max(wait, port_.wait());
  }
  if (!a.write && missed_lines > 0 && missed_lines * line == a.bytes() && a.line_aligned(line)) {
    done = std::max(done, port_.send(initiator, a, arrive, now));  // all missed: forward whole
    unloaded = std::max(unloaded, port_.unloaded());
    wait = std::max(wait, port_.wait());
    misses_v_.clear();
  }
  for_each_run(misses_v_, false, a.die, [&](const MemAccess& m) {
    done = std::max(done, port_.send(initiator, m, arrive, now));
    unloaded = std::max(unloaded, port_.unloaded());
    wait = std::max(wait, port_.wait());
  });
  ext->unloaded = unloaded;
  ext->wait = wait;
  delay = to_sc_time(done - now);
}

}  // namespace tdmsim::sim
