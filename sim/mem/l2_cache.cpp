#include "sim/mem/l2_cache.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <vector>

#include "sim/mem/fabric.h"
#include "sim/mem/run_batch.h"
#include "sim/mem/run_merge.h"

namespace tdmsim::sim {

L2Cache::L2Cache(sc_core::sc_module_name name, const L2Spec& spec, units::Frequency clock,
                 Tick miss_latency, Tick near_miss_latency, StatRegistry& stats, const SimClock& time)
    : sc_module(name), target("target"), initiator("initiator"), time_(time), spec_(spec),
      tags_(spec.size_per_die.bytes, static_cast<std::uint32_t>(spec.line.bytes), spec.ways,
            kBlockLines),
      channel_bw_{static_cast<std::uint64_t>(spec.bytes_per_clock_per_channel) * clock.hz},
      mshr_hold_per_line_((near_miss_latency > 0 ? near_miss_latency : miss_latency) / spec.mshrs_per_channel),
      far_hold_per_line_(near_miss_latency > 0 ? miss_latency / spec.mshrs_per_channel - mshr_hold_per_line_ : 0),
      near_miss_latency_(near_miss_latency),
      count_(spec.channels_per_die), channel_(spec.channels_per_die), mshr_(spec.channels_per_die),
      lines_per_channel_(spec.channels_per_die), misses_per_channel_(spec.channels_per_die),
      atomic_bytes_per_channel_(spec.channels_per_die), atomic_lines_per_channel_(spec.channels_per_die),
      masked_(spec.channels_per_die <= 64), resident_(tags_.resident()), common_(tags_.walker().common_shape()) {
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


void L2Cache::connect(Fabric& fabric) {
  initiator.bind(fabric.target);
  below_.target = &fabric;
}

void L2Cache::b_transport(int, tlm::tlm_generic_payload& p, sc_core::sc_time& delay) {
  const Tick now = time_.now();
  delay = to_sc_time(transport(*p.get_extension<MemAccessExt>(), now + delay.value(), now) - now);
}

Tick L2Cache::transport(MemAccessExt& ext, Tick arrive, Tick now) {
  const MemAccess& a = ext.access;
  const std::uint64_t line = spec_.line.bytes;
  const Tick hit_latency = ticks(spec_.hit_latency);
  (a.write ? write_bytes_ : read_bytes_) += a.bytes();
  if (a.atomic) atomic_bytes_ += a.bytes();
  // Tags first (a run of lines per block), then one bandwidth reservation per
  // channel.
  // (lines_per_channel_, misses_per_channel_ and the atomic counts are all
  // zero here: the last call cleared what it counted, below.)
  std::uint64_t every_atomic_lines = 0;  // atomic whole lines on each channel (whole groups)
  std::uint64_t every_lines = 0, every_misses = 0;  // lines on each channel (whole groups)
  std::uint64_t missed_lines = 0, looked_up = 0;  // (the stats are added after the loop: kept in registers)
  // Whether any run was counted per channel (not whole groups only): if
  // not, every channel has the same counts (every_lines, every_misses).
  bool per_channel_counted = false;
  const bool fetch = !a.write || a.atomic;  // full-line plain writes allocate without a fetch
  misses_.clear();
  victims_.clear();
  // What the run loop reads is copied to locals first: its stores (tag
  // records, counts) could alias this object's fields, which would then be
  // reloaded for every block.
  CacheTags::Walker tags = tags_.walker();
  const std::uint32_t ls = line_shift_;
  const bool pow2 = count_.pow2();
  const std::uint32_t cs = count_.shift();
  const std::uint64_t cmask = count_.mask();
  // count_lines() with its common case (whole aligned groups of `channels`
  // lines: a 4 KiB block on 16 channels) on the locals; other runs counted
  // inline, part-groups in aligned pieces (count_lines_pieces).
  const bool plain = plain_counts_;
  const auto count_run = [&](std::uint64_t first, std::uint64_t n, std::vector<std::uint32_t>& per_channel,
                             std::uint64_t& every) __attribute__((always_inline)) {
    if (plain) [[unlikely]] {  // the reference: line by line
      count_plain(first, n, per_channel.data());
      per_channel_counted = true;
      return;
    }
    if (pow2 && ((first | n) & cmask) == 0) {
      every += n >> cs;
      return;
    }
    per_channel_counted = true;
    if (pow2 && n == 1) {  // one line (a lone line read, a line of a gathered row): its channel
      ++per_channel[static_cast<std::size_t>((first ^ (first >> cs) ^ (first >> 2 * cs) ^ (first >> 3 * cs)) & cmask)];
      return;
    }
    count_.count_lines_pieces(first, n, per_channel.data(), every);
  };
  // The misses' last run, kept out of misses_ while it grows (append_run's
  // merge, without reading the vector back for every block).
  RunAppender runs(misses_);
  const auto missed_run = [&](std::uint64_t at, std::uint64_t bytes) __attribute__((always_inline)) {
    runs.add(at, bytes);
  };
  // The tag sets of the row kAhead rows on (its first kAhead blocks), and of
  // the block kAhead blocks on in this row, are asked for while this block is
  // looked up, so that their host cache misses overlap.
  constexpr std::uint32_t kAhead = 4;
  const std::uint64_t block = tags.block_bytes();
  const std::uint32_t block_lines = tags_.block_lines();
  const std::uint32_t whole = block_lines >= 32 ? ~0u : (1u << block_lines) - 1;  // a block's lines
  const auto block_shift = static_cast<std::uint32_t>(std::countr_zero(block));
  const auto prefetch_row = [&](std::uint32_t r) __attribute__((always_inline)) {
    const std::uint64_t begin = a.row(r);
    const std::uint64_t first = begin & ~(block - 1);
    const std::uint64_t end = std::min(begin + a.row_bytes, first + kAhead * block);
    for (std::uint64_t b = first; b < end; b += block) tags.prefetch(b);
  };
  // (A single row's first blocks would be asked for just before their
  // lookups: only rows further on gain.)
  // (Only where the tag array does not stay in the host's caches anyway:
  // CacheTags::resident().)
  const bool ahead = !resident_;
  const bool common = common_;  // (Walker::access_block_common)
  if (ahead && a.rows > 1) {
    for (std::uint32_t r = 0; r < a.rows && r < kAhead; ++r) prefetch_row(r);
  }
  // Whether the next whole block likely misses whole (the last lookup's
  // block did): the whole-block loop below then starts with a streak, else
  // block by block. Carried over rows and partial blocks: a gathered token
  // row read again has one or two whole blocks, each a hit, and a streak
  // started on each would stop at once and look the block up twice. Only a
  // choice between two ways of the same lookups (miss_streak_reference).
  bool streak = true;
  for (std::uint32_t r = 0; r < a.rows; ++r) {
    if (ahead && r + kAhead < a.rows) prefetch_row(r + kAhead);
    const std::uint64_t begin = a.row(r);
    const std::uint64_t end = begin + a.row_bytes;
    const std::uint64_t last = (end + line - 1) & ~(line - 1);
    // The row's lines, counted per channel once for all its lookups (a
    // channel's lines are a sum: the same counts as run by run).
    const std::uint64_t row_lines = (last - (begin & ~(line - 1))) >> ls;
    count_run(begin >> ls, row_lines, lines_per_channel_, every_lines);
    looked_up += row_lines;
    if (a.atomic) {  // the atomic units work through the bytes each line holds
      if (plain) [[unlikely]] {  // the reference: line by line
        for (std::uint64_t l = begin & ~(line - 1); l < end; l += line) {
          atomic_bytes_per_channel_[channel_of(l >> ls)] += std::min(end, l + line) - std::max(begin, l);
        }
      } else {
        // The row's part lines (its ends) by their bytes; its whole lines
        // counted per channel as the lookups' runs are (a whole line's
        // bytes are `line`: multiplied in once per channel, reserve_atomic).
        // (Inline: out of line, a call per row cost 1.2% more instructions
        // at 1024 tokens.)
        const std::uint64_t whole_first = (begin + line - 1) & ~(line - 1), whole_end = end & ~(line - 1);
        if (whole_first >= whole_end) {  // within one line, or two part lines
          for (std::uint64_t l = begin & ~(line - 1); l < end; l += line) {
            atomic_bytes_per_channel_[channel_of(l >> ls)] += std::min(end, l + line) - std::max(begin, l);
          }
        } else {
          if (begin != whole_first) atomic_bytes_per_channel_[channel_of(begin >> ls)] += whole_first - begin;
          if (end != whole_end) atomic_bytes_per_channel_[channel_of(end >> ls)] += end - whole_end;
          count_.count_lines_pieces(whole_first >> ls, (whole_end - whole_first) >> ls, atomic_lines_per_channel_.data(),
                                    every_atomic_lines);
        }
      }
    }
    for (std::uint64_t l = begin & ~(line - 1); l < last;) {
      if ((l & (block - 1)) == 0 && last - l >= block) {
        // Whole blocks (a tile row streamed in a K group): the same steps
        // as below for a run of a whole block. (Written out twice: the
        // accounting of misses and victims shared through a lambda cost 1.9%
        // more instructions on the DeepSeek-V3 64-token TDM fixture.)
        // (No look-ahead here: an L2's tag sets are few, 12.5 KiB on mi355x,
        // and stay in the host's caches; asking for them cost more than it saved.)
        const std::uint64_t stop = last & ~(block - 1);
        while (l < stop) {
          CacheTags::Run res;
          if (streak) {
            // First the blocks that miss whole and evict nothing dirty (a
            // stream's), in a tight loop of their own (miss_streak): a
            // streak counts as those blocks one by one below would (a
            // channel's lines or misses are a sum, and their runs merge).
            const CacheTags::Walker::Streak st = tags.miss_streak(l, (stop - l) >> block_shift, a.write);
            if (st.missed_whole > 0) {
              const std::uint64_t lines = st.missed_whole * block_lines, bytes = st.missed_whole * block;
              missed_lines += lines;
              if (fetch) {
                missed_run(l, bytes);
                count_run(l >> ls, lines, misses_per_channel_, every_misses);
              }
              l += bytes;
            }
            if (!st.stopped) break;  // (streak stays: the last block missed whole)
            res = st.next;  // the block it stopped at, looked up there
          } else {
            // After a block that did not miss whole (a tile read again: its
            // blocks hit), block by block: a streak would stop at once, in a
            // call of its own that looks the block up twice. The same lookup
            // as the streak's (CacheTags::Walker::miss_streak_reference).
            res = common ? tags.access_block_common(l, a.write) : tags.access_block(l, a.write);
          }
          streak = res.missed == whole && !res.dirty_victim();
          if (res.missed == whole) {
            missed_lines += block_lines;
            if (fetch) {
              missed_run(l, block);
              count_run(l >> ls, block_lines, misses_per_channel_, every_misses);
            }
          } else if (res.missed != 0) {
            missed_lines += CacheTags::count(res.missed);
            if (fetch) {
              for_each_bit_run(res.missed, [&](std::uint32_t first, std::uint32_t len) {
                missed_run(l + first * line, std::uint64_t{len} * line);
                count_run((l >> ls) + first, len, misses_per_channel_, every_misses);
              });
            }
          }
          if (res.dirty_victim()) {
            for_each_bit_run(res.victim_dirty, [&](std::uint32_t first, std::uint32_t len) {
              victims_.push_back({res.victim + first * line, std::uint64_t{len} * line});
            });
          }
          l += block;
        }
        continue;
      }
      const auto n = static_cast<std::uint32_t>(std::min<std::uint64_t>(tags.lines_to_block_end(l), (last - l) >> ls));
      if (ahead && l + kAhead * block < last) tags.prefetch(l + kAhead * block);
      const CacheTags::Run res = ahead    ? tags.access(l, n, a.write)
                                 : common ? tags.access_common(l, n, a.write)
                                          : tags.access_resident(l, n, a.write);
      const auto missed = CacheTags::count(res.missed);
      streak = missed == n;
      missed_lines += missed;
      if (fetch) {
        for_each_bit_run(res.missed, [&](std::uint32_t first, std::uint32_t len) {
          missed_run(l + first * line, std::uint64_t{len} * line);
          count_run((l >> ls) + first, len, misses_per_channel_, every_misses);
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
  runs.flush();
  hits_ += looked_up - missed_lines;
  misses_count_ += missed_lines;
  Tick served = arrive;
  Tick miss_ready = arrive;
  Tick wait = 0;
  // Each channel's reservations are its own and the results are maxima, so
  // channels without lines can be skipped and the rest visited in any order.
  // Only channels_per_die <= 64 (masked_): which channels have lines, one
  // bit each (after whole groups only, all of them with the same counts).
  std::uint64_t lined = ~std::uint64_t{0};
  if (!per_channel_counted) {
    if (every_lines > 0) {
      // Every channel alike (a weight stream's whole blocks): the same
      // reservations as below, without the per-channel counts.
      const Tick busy = line_time_ * every_lines;
      Tick end = arrive + busy;
      for (BusyUntil& c : channel_) end = std::max(end, c.reserve(arrive, busy));
      served = end;
      wait = end - busy - arrive;
      if (every_misses > 0) {
        const Tick hold = mshr_hold_per_line_ * every_misses;
        for (BusyUntil& m : mshr_) miss_ready = std::max(miss_ready, m.reserve(arrive, hold) - hold);
      }
    }
  } else {
    if (masked_ && every_lines == 0 && !plain) lined = ChannelCounter::nonzero(lines_per_channel_.data(), channel_.size());
    const auto reserve_channel = [&](std::size_t ch) __attribute__((always_inline)) {
      const std::uint64_t lines = lines_per_channel_[ch] + every_lines;
      if (lines == 0) return;  // (nor misses)
      const Tick busy = line_time_ * lines;
      const Tick end = channel_[ch].reserve(arrive, busy);
      served = std::max(served, end);
      wait = std::max(wait, end - busy - arrive);
      const std::uint64_t misses = misses_per_channel_[ch] + every_misses;
      if (misses > 0) {
        // Each miss holds an MSHR for the miss round trip: with `mshrs` of
        // them, a channel starts at most mshrs misses per round trip.
        const Tick hold = mshr_hold_per_line_ * misses;
        miss_ready = std::max(miss_ready, mshr_[ch].reserve(arrive, hold) - hold);
      }
    };
    if (~lined == 0) {
      for (std::size_t ch = 0; ch < channel_.size(); ++ch) reserve_channel(ch);
    } else {
      for (std::uint64_t m = lined; m != 0; m &= m - 1) reserve_channel(static_cast<std::size_t>(std::countr_zero(m)));
    }
  }
  Tick done = served + hit_latency;
  Tick unloaded = hit_latency + line_time_;
  Tick below = 0;  // the unloaded round trip below the L2 of this access's misses
  if (!a.write && missed_lines * line == a.bytes() && a.line_aligned(line)) {
    // Everything missed (a tile streamed for the first time): forward the
    // access whole rather than row by row.
    MemAccess m = a;
    done = std::max(done, port_.send(below_, m, miss_ready, now) + hit_latency);
    unloaded = std::max(unloaded, hit_latency + port_.unloaded());
    below = std::max(below, port_.unloaded());
    wait = std::max(wait, miss_ready - arrive + port_.wait());
    misses_.clear();
  }
  // Misses go below as runs of consecutive lines, in one batch (run_batch.h).
  send_runs(port_, below_, misses_, batch_, false, a.die, miss_ready, now, [&](Tick d, Tick u, Tick w) {
    done = std::max(done, d + hit_latency);
    unloaded = std::max(unloaded, hit_latency + u);
    below = std::max(below, u);
    wait = std::max(wait, miss_ready - arrive + w);
  }, one_by_one_);
  if (far_hold_per_line_ > 0 && below > near_miss_latency_) {
    // Some of the misses went on to HBM: their MSHRs were held for the HBM
    // round trip, not the MALL's (a MALL-served miss frees its MSHR sooner,
    // which is what lets several XCDs read one expert's weights through the
    // MALL at its rate). Added after the fact: the channels' next misses wait.
    // (A channel with misses has lines: `lined` holds it.)
    if (!per_channel_counted) {
      const Tick more = far_hold_per_line_ * every_misses;
      if (every_misses > 0) {
        for (BusyUntil& m : mshr_) m.free_at += more;
      }
    } else {
      const auto hold_longer = [&](std::size_t ch) __attribute__((always_inline)) {
        const std::uint64_t misses = misses_per_channel_[ch] + every_misses;
        if (misses > 0) mshr_[ch].free_at += far_hold_per_line_ * misses;
      };
      if (~lined == 0) {
        for (std::size_t ch = 0; ch < mshr_.size(); ++ch) hold_longer(ch);
      } else {
        for (std::uint64_t m = lined; m != 0; m &= m - 1) hold_longer(static_cast<std::size_t>(std::countr_zero(m)));
      }
    }
  }
  // Leaves the per-channel counts zero for the next access.
  // (memset on the vectors' size: std::fill's test for an empty vector, a
  // branch per call, was mispredicted.)
  if (per_channel_counted) {
    std::memset(lines_per_channel_.data(), 0, lines_per_channel_.size() * sizeof(std::uint32_t));
    std::memset(misses_per_channel_.data(), 0, misses_per_channel_.size() * sizeof(std::uint32_t));
  }
  // Read-modify-write: each channel's atomic unit works through its bytes
  // once the old data is there (hit or fetched).
  if (a.atomic) done = reserve_atomic(done, every_atomic_lines);
  // Dirty victims are written back off the critical path, merged into runs.
  std::sort(victims_.begin(), victims_.end(),
            [](const ByteRun& x, const ByteRun& y) { return x.addr < y.addr; });
  for (const auto& v : victims_) writebacks_ += v.bytes / line;
  send_runs(port_, below_, victims_, batch_, true, a.die, served, now, [](Tick, Tick, Tick) {}, one_by_one_);
  ext.unloaded = unloaded;
  ext.wait = wait;
  return done;
}

void L2Cache::count_plain(std::uint64_t first, std::uint64_t n, std::uint32_t* per_channel) const {
  for (std::uint64_t k = 0; k < n; ++k) ++per_channel[channel_of(first + k)];
}

Tick L2Cache::reserve_atomic(Tick ready, std::uint64_t every_atomic_lines) {
  const std::uint64_t line = spec_.line.bytes;
  Tick done = ready;
  if (masked_ && !plain_counts_) {
    // The channels with bytes, a bit each, then only those reserved (in the
    // same order): which channels an access's bytes fall on is
    // data-dependent, and a branch on each channel's was mispredicted a
    // quarter of the time. (set_plain_counts: the reference, below.)
    std::uint64_t with_bytes = 0;
    for (std::size_t ch = 0; ch < atomic_unit_.size(); ++ch) {
      const std::uint64_t bytes =
          atomic_bytes_per_channel_[ch] + (atomic_lines_per_channel_[ch] + every_atomic_lines) * line;
      atomic_bytes_per_channel_[ch] = bytes;
      atomic_lines_per_channel_[ch] = 0;
      with_bytes |= std::uint64_t{bytes != 0} << ch;
    }
    for (std::uint64_t m = with_bytes; m != 0; m &= m - 1) {
      const auto ch = static_cast<std::size_t>(std::countr_zero(m));
      done = std::max(done, atomic_unit_[ch].reserve(ready, transfer_ticks(atomic_bytes_per_channel_[ch], atomic_bw_)));
      atomic_bytes_per_channel_[ch] = 0;
    }
    return done;
  }
  for (std::size_t ch = 0; ch < atomic_unit_.size(); ++ch) {
    const std::uint64_t bytes =
        atomic_bytes_per_channel_[ch] + (atomic_lines_per_channel_[ch] + every_atomic_lines) * line;
    atomic_lines_per_channel_[ch] = 0;
    atomic_bytes_per_channel_[ch] = 0;
    if (bytes == 0) continue;
    done = std::max(done, atomic_unit_[ch].reserve(ready, transfer_ticks(bytes, atomic_bw_)));
  }
  return done;
}

Tick L2Cache::flush(Tick at) {
  const std::uint64_t line = spec_.line.bytes;
  victims_.clear();
  for (const std::uint64_t l : tags_.clean()) append_run(victims_, l, line);
  for (const auto& v : victims_) writebacks_ += v.bytes / line;
  Tick done = at;
  const Tick now = time_.now();
  send_runs(port_, below_, victims_, batch_, true, 0, at, now,
            [&](Tick d, Tick, Tick) { done = std::max(done, d); }, one_by_one_);
  return done;
}

}  // namespace tdmsim::sim
