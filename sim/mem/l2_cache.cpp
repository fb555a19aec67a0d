#include "sim/mem/l2_cache.h"

#include <algorithm>
#include <bit>
#include <vector>

namespace tdmsim::sim {

namespace {
// Lines ahead whose tag set is prefetched while walking an access.
constexpr std::uint64_t kPrefetchAhead = 4;
}  // namespace

L2Cache::L2Cache(sc_core::sc_module_name name, const L2Spec& spec, units::Frequency clock,
                 Tick miss_latency, StatRegistry& stats)
    : sc_module(name), target("target"), initiator("initiator"), spec_(spec),
      tags_(spec.size_per_die.bytes, static_cast<std::uint32_t>(spec.line.bytes), spec.ways),
      channel_bw_{static_cast<std::uint64_t>(spec.bytes_per_clock_per_channel) * clock.hz},
      mshr_hold_per_line_(miss_latency / spec.mshrs_per_channel),
      channels_(spec.channels_per_die), channel_(spec.channels_per_die), mshr_(spec.channels_per_die),
      lines_per_channel_(spec.channels_per_die), misses_per_channel_(spec.channels_per_die),
      atomic_bytes_per_channel_(spec.channels_per_die) {
  atomic_unit_.resize(spec.channels_per_die);
  atomic_bw_ = units::Bandwidth{std::uint64_t{spec.atomic_bytes_per_clock_per_channel} * clock.hz};
  line_shift_ = static_cast<std::uint32_t>(std::countr_zero(spec.line.bytes));
  line_time_ = transfer_ticks(spec.line.bytes, channel_bw_);
  target.register_b_transport(this, &L2Cache::b_transport);
  const std::string me = this->name();
  stats.add(me, "hits", &hits_, "lines", "L2 line hits");
  stats.add(me, "misses", &misses_count_, "lines", "L2 line misses");
  stats.add(me, "writebacks", &writebacks_, "lines", "dirty lines written back");
  stats.add(me, "read_bytes", &read_bytes_, "bytes", "bytes read by requesters");
  stats.add(me, "write_bytes", &write_bytes_, "bytes", "bytes written by requesters");
  stats.add(me, "atomic_bytes", &atomic_bytes_, "bytes", "bytes written by atomic read-modify-writes");
  stats.share(me, "hit_rate", &hits_, &misses_count_, "L2 hits / line accesses");
}

void L2Cache::b_transport(int, tlm::tlm_generic_payload& p, sc_core::sc_time& delay) {
  const MemAccess& a = p.get_extension<MemAccessExt>()->access;
  const Tick now = sc_core::sc_time_stamp().value();
  const Tick arrive = now + delay.value();
  const std::uint64_t line = spec_.line.bytes;
  const Tick hit_latency = ticks(spec_.hit_latency);
  (a.write ? write_bytes_ : read_bytes_) += a.bytes();
  if (a.atomic) atomic_bytes_ += a.bytes();
  // Tags first (line by line), then one bandwidth reservation per channel.
  std::fill(lines_per_channel_.begin(), lines_per_channel_.end(), 0u);
  std::fill(misses_per_channel_.begin(), misses_per_channel_.end(), 0u);
  if (a.atomic) std::fill(atomic_bytes_per_channel_.begin(), atomic_bytes_per_channel_.end(), 0u);
  misses_.clear();
  victims_.clear();
  for (std::uint32_t r = 0; r < a.rows; ++r) {
    const std::uint64_t begin = a.row(r);
    const std::uint64_t end = begin + a.row_bytes;
    // Tiles of short rows (a K step of a weight tile is one line a row): fetch
    // the set of a row a few rows ahead.
    if (r + kPrefetchAhead < a.rows) tags_.prefetch(a.row(r + static_cast<std::uint32_t>(kPrefetchAhead)));
    for (std::uint64_t l = begin & ~(line - 1); l < end; l += line) {
      if (l + kPrefetchAhead * line < end) tags_.prefetch(l + kPrefetchAhead * line);
      const std::size_t ch = channel_of(l >> line_shift_);
      ++lines_per_channel_[ch];
      const auto res = tags_.access(l, a.write);
      if (res.dirty_victim()) victims_.push_back(res.victim);
      if (a.atomic) atomic_bytes_per_channel_[ch] += std::min(end, l + line) - std::max(begin, l);
      if (res.hit) {
        ++hits_;
      } else {
        ++misses_count_;
        if (!a.write || a.atomic) {  // full-line plain writes allocate without a fetch
          misses_.push_back(l);
          ++misses_per_channel_[ch];
        }
      }
    }
  }
  Tick served = arrive;
  Tick miss_ready = arrive;
  for (std::size_t ch = 0; ch < channel_.size(); ++ch) {
    if (lines_per_channel_[ch] == 0) continue;
    const Tick end = channel_[ch].reserve(arrive, line_time_ * lines_per_channel_[ch]);
    served = std::max(served, end);
    if (misses_per_channel_[ch] > 0) {
      // Each miss holds an MSHR for the miss round trip: with `mshrs` of
      // them, a channel starts at most mshrs misses per round trip.
      const Tick hold = mshr_hold_per_line_ * misses_per_channel_[ch];
      miss_ready = std::max(miss_ready, mshr_[ch].reserve(arrive, hold) - hold);
    }
  }
  Tick done = served + hit_latency;
  if (!a.write && misses_.size() * line == a.bytes() && a.line_aligned(line)) {
    // Everything missed (a tile streamed for the first time): forward the
    // access whole rather than row by row.
    MemAccess m = a;
    done = std::max(done, port_.send(initiator, m, miss_ready, now) + hit_latency);
    misses_.clear();
  }
  // Misses go below as runs of consecutive lines.
  for_each_run(misses_, line, false, a.die, [&](const MemAccess& m) {
    done = std::max(done, port_.send(initiator, m, miss_ready, now) + hit_latency);
  });
  if (a.atomic) {
    // Read-modify-write: each channel's atomic unit works through its bytes
    // once the old data is there (hit or fetched).
    const Tick ready = done;
    for (std::size_t ch = 0; ch < atomic_unit_.size(); ++ch) {
      if (atomic_bytes_per_channel_[ch] == 0) continue;
      done = std::max(done, atomic_unit_[ch].reserve(
                                ready, transfer_ticks(atomic_bytes_per_channel_[ch], atomic_bw_)));
    }
  }
  // Dirty victims are written back off the critical path, merged into runs.
  if (!std::is_sorted(victims_.begin(), victims_.end())) std::sort(victims_.begin(), victims_.end());
  writebacks_ += victims_.size();
  for_each_run(victims_, line, true, a.die,
               [&](const MemAccess& wb) { port_.send(initiator, wb, served, now); });
  delay = to_sc_time(done - now);
}

Tick L2Cache::flush(Tick at) {
  victims_ = tags_.clean();
  writebacks_ += victims_.size();
  Tick done = at;
  const std::uint64_t line = spec_.line.bytes;
  const Tick now = sc_core::sc_time_stamp().value();
  for_each_run(victims_, line, true, 0, [&](const MemAccess& wb) {
    done = std::max(done, port_.send(initiator, wb, at, now));
  });
  return done;
}

}  // namespace tdmsim::sim
