#include "sim/mem/mall.h"

#include <algorithm>
#include <bit>
#include <type_traits>
#include <vector>

#include "sim/mem/mall_streak.h"
#include "sim/mem/run_batch.h"
#include "sim/mem/run_merge.h"

namespace tdmsim::sim {

Mall::Mall(sc_core::sc_module_name name, const MallSpec& spec, const HbmAddressMap& map,
           std::uint32_t stacks, StatRegistry& stats, const SimClock& time)
    : sc_module(name), target("target"), initiator("initiator"), time_(time), spec_(spec), map_(map),
      stacks_(stacks), slice_bw_{spec.bandwidth.bytes_per_s / stacks} {
  // Tags are kept at the requesters' (L2) line size: our tile kernels never
  // access less than an L2 line, and halving the tag work keeps a GiB-sized
  // stream cheap to simulate. Capacity and associativity are unchanged.
  per_stack_ = Divisor(std::max(1u, map.channels / stacks));
  tag_line_ = tag_line(spec);
  chunk_div_ = Divisor(std::max(map.interleave, tag_line_));
  line_div_ = Divisor(tag_line_);
  pow2_ = map_.pow2() && per_stack_.pow2() && chunk_div_.pow2() && line_div_.pow2();
  for (std::uint32_t s = 0; s < stacks; ++s) {
    slices_.emplace_back(spec.size.bytes / stacks, static_cast<std::uint32_t>(tag_line_),
                         spec.ways, kBlockLines, CacheTags::Writes::never);  // (writes pass it by: below)
  }
  for (auto& slice : slices_) slice_records_.push_back(slice.walker().records());
  slice_bus_.resize(stacks);
  for (std::uint64_t n = 0; n <= 2 * kBlockLines; ++n) line_ticks_.push_back(transfer_ticks(tag_line_ * n, slice_bw_));
  lines_per_slice_.resize(stacks);
  target.register_b_transport(this, &Mall::b_transport);
  const std::string me = this->name();
  stats.add(me, "hits", &hits_, "lines", "MALL line hits");
  stats.add(me, "misses", &misses_, "lines", "MALL line misses (filled from HBM)");
  stats.share(me, "hit_rate", &hits_, &misses_, "MALL hits / accesses");
}

std::uint64_t Mall::tag_bytes(const MallSpec& spec, std::uint32_t stacks) {
  const std::uint32_t n = std::max(1u, stacks);
  const std::uint64_t slice = CacheTags::records_bytes(spec.size.bytes / n, static_cast<std::uint32_t>(tag_line(spec)),
                                                       spec.ways, kBlockLines, CacheTags::Writes::never);
  std::uint64_t bytes = 0;
  return __builtin_mul_overflow(slice, std::uint64_t{n}, &bytes) ? ~0ull : bytes;
}

void Mall::b_transport(int, tlm::tlm_generic_payload& p, sc_core::sc_time& delay) {
  const Tick now = time_.now();
  delay = to_sc_time(transport(*p.get_extension<MemAccessExt>(), now + delay.value(), now) - now);
}

Tick Mall::transport(MemAccessExt& ext, Tick arrive, Tick now) {
  BatchAnswer answer;
  if (ext.access.batch() && !one_by_one_) {
    serve_batch(ext.access, arrive, now, answer);  // (mall_batch.cpp)
  } else {
    // Each run on its own, as if it came alone (run_batch.h): the reference.
    for_each_in_batch(ext.access, [&](const MemAccess& a) { serve_one(a, arrive, now, answer); });
  }
  ext.unloaded = answer.unloaded;
  ext.wait = answer.wait;
  return answer.done;
}

std::uint64_t Mall::look_up(const MemAccess& b, bool each_run) {
  const std::uint64_t line = tag_line_;
  const std::uint64_t chunk = std::max(map_.interleave, line);  // one channel, one slice
  // (lines_per_slice_ is all zero here: its readers zero what they read.)
  std::uint64_t missed_lines = 0, looked_up = 0;
  // The walk over the access's runs of lines, with Pow2 = pow2_ (one check
  // per access instead of one per divisor and chunk). What it reads is
  // copied to locals first: its stores (tag records, counts, decodes) could
  // alias this object's fields, which would then be reloaded for every chunk.
  const HbmAddressMap map = map_;
  const Divisor per_stack = per_stack_, chunk_div = chunk_div_, line_div = line_div_;
  // One geometry for every slice (the records differ).
  const CacheTags::Walker tags0 = slices_.front().walker();
  std::uint32_t* const* const records = slice_records_.data();
  std::uint32_t* const per_slice = lines_per_slice_.data();
  Decoded* const decoded = decoded_;
  // An interleave chunk is one tag block (4 KiB both, every shipped part):
  // whole chunks are looked up as whole blocks.
  const std::uint32_t block_lines = slices_.front().block_lines();
  const bool chunk_blocks = chunk == tags0.block_bytes();
  const std::uint32_t whole = block_lines >= 32 ? ~0u : (1u << block_lines) - 1;  // a chunk's lines
  // Whether the next whole chunk likely misses whole (the last chunk looked
  // up did, in this access or the one before): the whole-chunk loop then
  // starts with a streak, else chunk by chunk (a streak started on a chunk
  // that hits stops at once and looks it up twice: a batch's runs are often
  // a gathered token row's pieces, each with one whole chunk). Only a choice
  // between two ways of the same lookups (chunk_streak_reference).
  bool streak = streak_hint_;
  std::uint64_t used = 0;  // the slices whose count it adds to (bit slice % 64)
  const auto walk = [&](auto pow2) __attribute__((always_inline)) {
    constexpr bool Pow2 = decltype(pow2)::value;
    // Decoded chunk `chunk_addr` (its first byte), through the table.
    const auto decode = [&](std::uint64_t chunk_addr) __attribute__((always_inline)) -> const Decoded& {
      Decoded& d = decoded[chunk_div.div_as<Pow2>(chunk_addr) & (kDecoded - 1)];
      if (d.chunk != chunk_addr) {
        const auto [channel, local] = map.channel_and_group_local<Pow2>(chunk_addr, per_stack);
        d = {chunk_addr, static_cast<std::uint32_t>(per_stack.div_as<Pow2>(channel)), local};
      }
      return d;
    };
    // The tag sets of the chunk kAhead chunks on in this row, and of the first
    // kAhead chunks of the row kAhead rows on, are asked for while this chunk
    // is looked up, so that their host cache misses overlap.
    constexpr std::uint32_t kAhead = 4;
    // (Lambdas GCC would find pure and drop: see CacheTags::Walker::prefetch.)
    // `addr`: a chunk's first byte.
    const auto prefetch_at = [&](std::uint64_t addr) __attribute__((always_inline)) {
      const Decoded& d = decode(addr);
      tags0.with_records(records[d.slice]).prefetch(d.local);
    };
    // One row's bytes [begin, end), written or read (a batch's run, or a row
    // of an access); its missed runs go to `runs`.
    const auto row_lines = [&](std::uint64_t begin, std::uint64_t end, bool write, RunCollector& runs)
                               __attribute__((always_inline)) {
      const std::uint64_t last = (end + line - 1) & ~(line - 1);
      // Runs of lines inside one interleave chunk (one slice) and one tag block.
      for (std::uint64_t l = begin & ~(line - 1); l < last;) {
        if (chunk_blocks && !write && chunk_div.mod_as<Pow2>(l) == 0 && last - l >= chunk) {
          // Whole chunks, each one tag block (a weight row streamed in a K
          // group): the same steps as below for a run of a whole block.
          // (No look-ahead: asking for each chunk's set kAhead chunks ahead
          // cost 3.6% of a 64-token layer's instructions and saved no time
          // measurably on the development machine, 2026-11-30.)
          std::uint64_t count = chunk_div.div_as<Pow2>(last - l);
          // Missed whole chunks, one by one or many at once, extend the
          // misses' last run (held back in `runs` while it grows).
          const auto missed_whole = [&](std::uint64_t bytes) __attribute__((always_inline)) { runs.add(l, bytes); };
          while (count > 0) {
            CacheTags::Run res;
            std::uint32_t slice = 0;
            if (streak) {
              // The chunks that miss whole (a stream's), in a tight loop of
              // their own: they add up as they would one by one.
              const ChunkStreak st = chunk_streak<Pow2>(map, per_stack, tags0, records, l, count);
              if (st.missed_whole > 0) {
                const std::uint64_t bytes = st.missed_whole * chunk;
                looked_up += st.missed_whole * block_lines;
                missed_lines += st.missed_whole * block_lines;
                missed_whole(bytes);
                l += bytes;
                count -= st.missed_whole;
              }
              if (!st.stopped) break;  // (streak stays: the last chunk missed whole)
              res = st.next;  // the chunk it stopped at (hit, or missed in part), looked up there
              slice = st.slice;
            } else {
              // After a chunk that did not miss whole, chunk by chunk: a
              // streak would stop at once and look the chunk up twice.
              const auto [channel, local] = map.channel_and_group_local<Pow2>(l, per_stack);
              slice = static_cast<std::uint32_t>(per_stack.div_as<Pow2>(channel));
              res = tags0.read_block_never_written(records[slice], local);
            }
            streak = res.missed == whole;
            looked_up += block_lines;
            if (streak) {
              missed_lines += block_lines;
              missed_whole(chunk);
            } else {
              const auto missed = CacheTags::count(res.missed);
              missed_lines += missed;
              per_slice[slice] += block_lines - missed;
              used |= std::uint64_t{1} << (slice & 63);
              for_each_bit_run(res.missed, [&](std::uint32_t first, std::uint32_t len) {
                runs.add(l + first * line, std::uint64_t{len} * line);
              });
            }
            l += chunk;
            --count;
          }
          continue;
        }
        const std::uint64_t in_chunk = chunk_div.mod_as<Pow2>(l);
        std::uint64_t n = line_div.div_as<Pow2>(std::min(chunk - in_chunk, last - l));
        if (!write && l - in_chunk + kAhead * chunk < last) prefetch_at(l - in_chunk + kAhead * chunk);
        // The chunk's decode, moved to `l` (the address inside the slice runs on
        // with the address inside an interleave block, and where the chunk is
        // a tag line larger than the block, l is the chunk's start).
        const Decoded& d = decode(l - in_chunk);
        const std::uint32_t slice = d.slice;
        const std::uint64_t local = d.local + in_chunk;
        if (write) {  // write-through, no allocate: the data goes on to HBM
          per_slice[slice] += static_cast<std::uint32_t>(n);
          used |= std::uint64_t{1} << (slice & 63);
          l += n * line;
          continue;
        }
        // Tags are keyed by the line's address inside its slice (the slice's
        // channels' blocks packed densely), so a slice's sets all get used.
        CacheTags::Walker tags = tags0.with_records(records[slice]);
        n = std::min<std::uint64_t>(n, tags.lines_to_block_end(local));
        const CacheTags::Run res = tags.read_never_written(local, static_cast<std::uint32_t>(n));
        const auto missed = CacheTags::count(res.missed);
        streak = missed == n;
        looked_up += n;  // (the stats are added after the walk: kept in registers)
        missed_lines += missed;
        per_slice[slice] += static_cast<std::uint32_t>(n - missed);
        used |= std::uint64_t{1} << (slice & 63);
        for_each_bit_run(res.missed, [&](std::uint32_t first, std::uint32_t len) {
          runs.add(l + first * line, std::uint64_t{len} * line);
        });
        l += n * line;
      }
    };
    // One access that is no batch; its missed runs go to `runs`.
    const auto one = [&](const MemAccess& a, RunCollector& runs) __attribute__((always_inline)) {
      const auto prefetch_row = [&](std::uint32_t r) __attribute__((always_inline)) {
        const std::uint64_t begin = a.row(r);
        const std::uint64_t first = begin - chunk_div.mod_as<Pow2>(begin);
        const std::uint64_t end = std::min(begin + a.row_bytes, first + kAhead * chunk);
        for (std::uint64_t c = first; c < end; c += chunk) prefetch_at(c);
      };
      // (A single row's first chunks would be asked for just before their
      // lookups: only rows further on gain, and the whole-chunk loop asks for
      // its own.)
      if (!a.write && a.rows > 1) {
        for (std::uint32_t r = 0; r < a.rows && r < kAhead; ++r) prefetch_row(r);
      }
      for (std::uint32_t r = 0; r < a.rows; ++r) {
        if (!a.write && r + kAhead < a.rows) prefetch_row(r + kAhead);
        const std::uint64_t begin = a.row(r);
        row_lines(begin, begin + a.row_bytes, a.write, runs);
      }
    };

    if (!each_run) {
      misses_v_.clear();
      RunCollector runs(misses_v_);
      one(b, runs);
      runs.flush();
      return;
    }
    // A batch's runs in turn, each served as serve_one would serve it on its
    // own (mall_batch.cpp says why it is the same): its lines per slice into
    // the batch's slice sums, its misses (merged among themselves, never
    // with the run before: as send_runs merged them) straight onto below_;
    // a write, or a run that missed whole and line-aligned, goes on whole,
    // which for a read is the one run its misses already make.
    Tick* const sum = slice_sum_.data();
    Tick* const last_dur = slice_last_.data();
    std::uint8_t* const used_flag = slice_used_.data();
    const Tick* const line_ticks = line_ticks_.data();
    const std::size_t line_ticks_n = line_ticks_.size();
    const std::size_t slices = lines_per_slice_.size();
    const auto count_slice = [&](std::size_t sl) __attribute__((always_inline)) {
      const std::uint32_t n = per_slice[sl];
      if (n == 0) return;
      per_slice[sl] = 0;  // (zero again for the next run's lookup)
      const Tick dur = n < line_ticks_n ? line_ticks[n] : transfer_ticks(line * n, slice_bw_);
      sum[sl] += dur;
      last_dur[sl] = dur;
      used_flag[sl] = 1;
    };
    // (The runs as for_each_in_batch hands them on, without building a
    // MemAccess for each: single rows of the run's bytes, as 32 bits.)
    const bool write = b.write;
    for (const ByteRun* r = b.runs; r != b.runs + b.run_count; ++r) {
      const std::uint64_t addr = r->addr, bytes = static_cast<std::uint32_t>(r->bytes);
      used = 0;
      RunCollector runs(below_);
      row_lines(addr, addr + bytes, write, runs);
      runs.flush();
      if (write) below_.push_back({addr, bytes});
      if (slices > 64) {
        for (std::size_t sl = 0; sl < slices; ++sl) count_slice(sl);
      } else {
        for (std::uint64_t m = used; m != 0; m &= m - 1) count_slice(static_cast<std::size_t>(std::countr_zero(m)));
      }
    }
  };
  if (pow2_) walk(std::true_type{});
  else walk(std::false_type{});
  streak_hint_ = streak;
  hits_ += looked_up - missed_lines;
  misses_ += missed_lines;
  return missed_lines;
}

void Mall::serve_one(const MemAccess& a, Tick arrive, Tick now, BatchAnswer& answer) {
  const std::uint64_t line = tag_line_;
  const std::uint64_t missed_lines = look_up(a);
  Tick done = arrive;
  Tick unloaded = 0, wait = 0;
  for (std::size_t sl = 0; sl < slice_bus_.size(); ++sl) {
    if (lines_per_slice_[sl] == 0) continue;
    const Tick dur = transfer_ticks(line * lines_per_slice_[sl], slice_bw_);
    lines_per_slice_[sl] = 0;  // (zero again for the next look_up)
    const Tick end = slice_bus_[sl].reserve(arrive, dur);
    done = std::max(done, end + ticks(spec_.hit_latency));
    unloaded = ticks(spec_.hit_latency);
    wait = std::max(wait, end - dur - arrive);
  }
  if (a.write) {
    done = std::max(done, port_.send(hbm_link_, a, arrive, now));
    unloaded = std::max(unloaded, port_.unloaded());
    wait = std::max(wait, port_.wait());
  }
  if (!a.write && missed_lines > 0 && missed_lines * line == a.bytes() && a.line_aligned(line)) {
    done = std::max(done, port_.send(hbm_link_, a, arrive, now));  // all missed: forward whole
    unloaded = std::max(unloaded, port_.unloaded());
    wait = std::max(wait, port_.wait());
    misses_v_.clear();
  }
  send_runs(port_, hbm_link_, misses_v_, batch_, false, a.die, arrive, now, [&](Tick d, Tick u, Tick w) {
    done = std::max(done, d);
    unloaded = std::max(unloaded, u);
    wait = std::max(wait, w);
  }, one_by_one_);
  answer.fold(done, unloaded, wait);
}

}  // namespace tdmsim::sim
