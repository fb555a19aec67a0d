#include "sim/mem/l2_cache.h"

#include <algorithm>
#include <bit>
#include <vector>


namespace tdmsim::sim {

L2Cache::L2Cache(sc_core::sc_module_name name, const L2Spec& spec, units::Frequency clock,
                 Tick miss_latency, StatRegistry& stats)
    : sc_module(name), target("target"), initiator("initiator"), spec_(spec),
      tags_(spec.size_per_die.bytes, static_cast<std::uint32_t>(spec.line.bytes), spec.ways,
            kBlockLines),
      channel_bw_{static_cast<std::uint64_t>(spec.bytes_per_clock_per_channel) * clock.hz},
      mshr_hold_per_line_(miss_latency / spec.mshrs_per_channel),
      channels_(spec.channels_per_die), channel_(spec.channels_per_die), mshr_(spec.channels_per_die),
      lines_per_channel_(spec.channels_per_die), misses_per_channel_(spec.channels_per_die),
      atomic_bytes_per_channel_(spec.channels_per_die) {
  atomic_unit_.resize(spec.channels_per_die);
  atomic_bw_ = units::Bandwidth{std::uint64_t{spec.atomic_bytes_per_clock_per_channel} * clock.hz};
  line_shift_ = static_cast<std::uint32_t>(std::countr_zero(spec.line.bytes));
  line_time_ = transfer_ticks(spec.line.bytes, channel_bw_);
  hit_latency_ = ticks(spec.hit_latency);
  channels_pow2_ = std::has_single_bit(spec.channels_per_die);
  channel_shift_ = static_cast<std::uint32_t>(std::countr_zero(spec.channels_per_die));
  channel_mask_ = std::uint64_t{spec.channels_per_die} - 1;
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

void L2Cache::count_lines_any(std::uint64_t line, std::uint64_t n, std::vector<std::uint32_t>& per_channel,
                          std::uint64_t& every) const {
  std::uint32_t* const pc = per_channel.data();  // not reloaded after every count
  if (channels_pow2_) {
    // With c = 2^s channels, line c*q + j (j < c) goes to channel j ^ g(q),
    // g(q) = (q ^ q >> s ^ q >> 2s) mod c: an aligned group of c lines
    // touches every channel once, and part of a group touches distinct
    // channels, with one g for all of them.
    const std::uint32_t s = channel_shift_;
    const std::uint64_t c = channel_mask_ + 1;
    while (n > 0) {
      const std::uint64_t j0 = line & channel_mask_;
      if (j0 == 0 && n >= c) {  // whole groups
        every += n / c;
        line += n / c * c;
        n %= c;
        continue;
      }
      const std::uint64_t q = line >> s;
      const std::uint64_t g = (q ^ (q >> s) ^ (q >> 2 * s)) & channel_mask_;
      const std::uint64_t end = std::min(c, j0 + n);
      for (std::uint64_t j = j0; j < end; ++j) ++pc[j ^ g];
      n -= end - j0;
      line += end - j0;
    }
    return;
  }
  for (; n > 0; --n) ++pc[channel_of(line++)];
}

void ChannelShare::start(std::uint32_t g) {
  g_ = std::max(1u, g);
  for (std::size_t ch = 0; ch < ch_.size(); ++ch) {
    ch_[ch] = Lines{counts_[ch] / g_, counts_[ch] % g_, 0};
  }
}

Tick L2Cache::reserve_next(ChannelShare& share, Tick arrive) {
  // A channel serves its lines one after another from max(arrive, free):
  // one reservation of all its lines ends where line-by-line ones would.
  Tick served = arrive;
  const Tick line_time = line_time_;
  BusyUntil* const ch_busy = channel_.data();
  const std::size_t channels = channel_.size();
  for (std::size_t ch = 0; ch < channels; ++ch) {
    const std::uint32_t n = share.next(ch);
    if (n == 0) continue;
    served = std::max(served, ch_busy[ch].reserve(arrive, line_time * n));
  }
  return served + hit_latency_;
}

void L2Cache::b_transport(int, tlm::tlm_generic_payload& p, sc_core::sc_time& delay) {
  auto* ext = p.get_extension<MemAccessExt>();
  const MemAccess& a = ext->access;
  const Tick now = sc_core::sc_time_stamp().value();
  const Tick arrive = now + delay.value();
  const std::uint64_t line = spec_.line.bytes;
  const Tick hit_latency = ticks(spec_.hit_latency);
  (a.write ? write_bytes_ : read_bytes_) += a.bytes();
  if (a.atomic) atomic_bytes_ += a.bytes();
  // Tags first (a run of lines per block), then one bandwidth reservation per channel.
  std::fill(lines_per_channel_.begin(), lines_per_channel_.end(), 0u);
  std::fill(misses_per_channel_.begin(), misses_per_channel_.end(), 0u);
  if (a.atomic) std::fill(atomic_bytes_per_channel_.begin(), atomic_bytes_per_channel_.end(), 0u);
  std::uint64_t every_lines = 0, every_misses = 0;  // lines on each channel (whole groups)
  std::uint64_t missed_lines = 0;
  const bool fetch = !a.write || a.atomic;  // full-line plain writes allocate without a fetch
  misses_.clear();
  victims_.clear();
  for (std::uint32_t r = 0; r < a.rows; ++r) {
    const std::uint64_t begin = a.row(r);
    const std::uint64_t end = begin + a.row_bytes;
    const std::uint64_t last = (end + line - 1) & ~(line - 1);
    if (a.atomic) {  // the atomic units work through the bytes each line holds
      for (std::uint64_t l = begin & ~(line - 1); l < end; l += line) {
        atomic_bytes_per_channel_[channel_of(l >> line_shift_)] += std::min(end, l + line) - std::max(begin, l);
      }
    }
    for (std::uint64_t l = begin & ~(line - 1); l < last;) {
      const auto n = static_cast<std::uint32_t>(
          std::min<std::uint64_t>(tags_.lines_to_block_end(l), (last - l) >> line_shift_));
      const CacheTags::Run res = tags_.access(l, n, a.write);
      count_lines(l >> line_shift_, n, lines_per_channel_, every_lines);
      const auto missed = CacheTags::count(res.missed);
      hits_ += n - missed;
      misses_count_ += missed;
      missed_lines += missed;
      if (fetch) {
        for_each_bit_run(res.missed, [&](std::uint32_t first, std::uint32_t len) {
          append_run(misses_, l + first * line, std::uint64_t{len} * line);
          count_lines((l >> line_shift_) + first, len, misses_per_channel_, every_misses);
        });
      }
      if (res.dirty_victim()) {
        for_each_bit_run(res.victim_dirty, [&](std::uint32_t first, std::uint32_t len) {
          victims_.push_back({res.victim + first * line, std::uint64_t{len} * line});
        });
      }
      l += std::uint64_t{n} * line;
    }
  }
  Tick served = arrive;
  Tick miss_ready = arrive;
  Tick wait = 0;
  const bool channels_now = a.channel_lines == nullptr || a.write;
  for (std::size_t ch = 0; ch < channel_.size(); ++ch) {
    const std::uint64_t lines = lines_per_channel_[ch] + every_lines;
    if (lines == 0) continue;
    if (!channels_now) {
      a.channel_lines[ch] += static_cast<std::uint32_t>(lines);
    } else {
      const Tick end = channel_[ch].reserve(arrive, line_time_ * lines);
      served = std::max(served, end);
      wait = std::max(wait, end - line_time_ * lines - arrive);
    }
    const std::uint64_t misses = misses_per_channel_[ch] + every_misses;
    if (misses > 0) {
      // Each miss holds an MSHR for the miss round trip: with `mshrs` of
      // them, a channel starts at most mshrs misses per round trip.
      const Tick hold = mshr_hold_per_line_ * misses;
      miss_ready = std::max(miss_ready, mshr_[ch].reserve(arrive, hold) - hold);
    }
  }
  Tick done = served + hit_latency;
  Tick unloaded = hit_latency + line_time_;
  if (!a.write && missed_lines * line == a.bytes() && a.line_aligned(line)) {
    // Everything missed (a tile streamed for the first time): forward the
    // access whole rather than row by row.
    MemAccess m = a;
    m.channel_lines = nullptr;  // counted here, not below
    done = std::max(done, port_.send(initiator, m, miss_ready, now) + hit_latency);
    unloaded = std::max(unloaded, hit_latency + port_.unloaded());
    wait = std::max(wait, miss_ready - arrive + port_.wait());
    misses_.clear();
  }
  // Misses go below as runs of consecutive lines.
  for_each_run(misses_, false, a.die, [&](const MemAccess& m) {
    done = std::max(done, port_.send(initiator, m, miss_ready, now) + hit_latency);
    unloaded = std::max(unloaded, hit_latency + port_.unloaded());
    wait = std::max(wait, miss_ready - arrive + port_.wait());
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
  std::sort(victims_.begin(), victims_.end(),
            [](const ByteRun& x, const ByteRun& y) { return x.addr < y.addr; });
  for (const auto& v : victims_) writebacks_ += v.bytes / line;
  for_each_run(victims_, true, a.die,
               [&](const MemAccess& wb) { port_.send(initiator, wb, served, now); });
  ext->unloaded = unloaded;
  ext->wait = wait;
  delay = to_sc_time(done - now);
}

Tick L2Cache::flush(Tick at) {
  const std::uint64_t line = spec_.line.bytes;
  victims_.clear();
  for (const std::uint64_t l : tags_.clean()) append_run(victims_, l, line);
  for (const auto& v : victims_) writebacks_ += v.bytes / line;
  Tick done = at;
  const Tick now = sc_core::sc_time_stamp().value();
  for_each_run(victims_, true, 0, [&](const MemAccess& wb) {
    done = std::max(done, port_.send(initiator, wb, at, now));
  });
  return done;
}

}  // namespace tdmsim::sim
