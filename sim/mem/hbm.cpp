#include "sim/mem/hbm.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <new>
#include <stdexcept>

#include "sim/mem/hbm_walk.h"
#include "sim/mem/run_batch.h"

namespace tdmsim::sim {

Hbm::Hbm(sc_core::sc_module_name name, const HbmSpec& spec, StatRegistry& stats, const SimClock& time)
    : sc_module(name), target("target"), time_(time), spec_(spec) {
  // serve_chunk() takes every refresh due before a transfer: one that lasts
  // an interval or more would never let one through (machine_spec.cpp
  // refuses such a machine; this guards specs built in code).
  if (spec.refresh_time >= spec.refresh_interval) {
    throw std::invalid_argument("HBM refresh_time must be shorter than refresh_interval");
  }
  map_ = HbmAddressMap(spec.interleave.bytes,
                       spec.stacks * spec.channels_per_stack * spec.pseudo_channels, spec.banks,
                       spec.row_buffer.bytes);
  channel_bw_ = units::Bandwidth{spec.bandwidth.bytes_per_s / map_.channels};
  {
    const unsigned bits = std::has_single_bit(map_.banks) ? map_.bank_shift() : 0;
    const unsigned rows = std::has_single_bit(map_.banks) && std::has_single_bit(map_.interleave) &&
                                  std::has_single_bit(map_.row_bytes) && map_.interleave > map_.row_bytes
                              ? std::min(map_.interleave_shift() - map_.row_shift(), bits)
                              : 0;
    for (std::uint32_t b = 0; b < map_.banks; ++b) {
      const std::uint32_t place = rows == 0 ? b : ((b >> rows) | (b << (bits - rows))) & (map_.banks - 1);
      bank_at_.push_back(static_cast<std::uint32_t>(sizeof(Channel) + sizeof(Bank) * place));
    }
  }
  channels_ = ChannelRecords(map_.channels, map_.banks);
  chunk_ticks_ = transfer_ticks(map_.interleave, channel_bw_);
  for (std::uint64_t b = 0; b < map_.interleave; b += kPartGrain) part_ticks_.push_back(transfer_ticks(b, channel_bw_));
  for (std::size_t i = 0; i < channels_.size(); ++i) {
    auto& c = channels_[i];
    // Stagger refreshes so channels do not all refresh at once.
    c.next_refresh = ticks(spec.refresh_interval) * (i + 1) / channels_.size();
  }
  target.register_b_transport(this, &Hbm::b_transport);
  const std::string me = this->name();
  stats.add(me, "reads", &reads_, "count", "read accesses served");
  stats.add(me, "writes", &writes_, "count", "write accesses served");
  stats.add(me, "read_bytes", &read_bytes_, "bytes", "bytes read from DRAM");
  stats.add(me, "write_bytes", &write_bytes_, "bytes", "bytes written to DRAM");
  for (std::size_t i = 0; i < channels_.size(); ++i) {
    const std::string ch = me + ".ch[" + std::to_string(i) + "]";
    stats.add(ch, "bytes", &channels_[i].bytes, "bytes", "bytes moved by this pseudo-channel");
    stats.add(ch, "row_hits", &channels_[i].row_hits, "count", "row-buffer hits");
    stats.add(ch, "row_misses", &channels_[i].row_misses, "count", "row-buffer misses");
    stats.add(ch, "refreshes", &channels_[i].refreshes, "count", "refreshes taken");
  }
}

Hbm::ChannelRecords::ChannelRecords(std::uint32_t channels, std::uint32_t banks)
    : bytes_(sizeof(Channel) + (std::size_t{banks} * sizeof(Bank) + 63) / 64 * 64), count_(channels) {
  base_ = static_cast<std::byte*>(::operator new[](bytes_ * count_, std::align_val_t{64}));
  for (std::size_t c = 0; c < count_; ++c) {
    std::byte* const rec = base_ + c * bytes_;
    new (rec) Channel{};
    for (std::uint32_t b = 0; b < banks; ++b) new (rec + sizeof(Channel) + b * sizeof(Bank)) Bank{};
  }
}

Hbm::ChannelRecords::~ChannelRecords() {
  // (Channel and Bank are trivially destructible: only the storage goes.)
  if (base_ != nullptr) ::operator delete[](base_, std::align_val_t{64});
}

template <bool Whole>
[[gnu::always_inline]] inline Tick Hbm::serve_chunk(Channel& ch, Bank& bank, std::uint64_t row, std::uint64_t bytes,
                                                    bool write, Tick arrive, const ChunkTiming& t, Tick& wait) {
  // A row miss occupies its bank (precharge + activate) but not the data bus,
  // so activations in other banks overlap the current transfer.
  Tick ready = std::max(arrive, bank.free);
  if (bank.open_row != row) {
    ready += t.row_miss;
    bank.open_row = row;
    ++ch.row_misses;
  } else {
    ++ch.row_hits;
  }
  // (The queueing wait, zero where the bus is free, apart: as the longest
  // of max(ready, busy) - ready it took a branch more and kept the longest
  // wait on the stack.)
  const Tick busy = ch.bus.free_at;
  const Tick queued = busy > ready ? busy - ready : 0;
  Tick start = ready + queued;
  wait = std::max(wait, queued);
  while (start >= ch.next_refresh) {  // refreshes due before this chunk
    start = std::max(start, ch.next_refresh + t.refresh_time);
    ch.next_refresh += t.refresh_interval;
    ++ch.refreshes;
  }
  if (write != ch.last_write) start += t.turnaround;
  ch.last_write = write;
  ch.bus.free_at = start + (Whole ? t.chunk_ticks : t.transfer(bytes));
  bank.free = ch.bus.free_at;
  ch.bytes += bytes;
  return ch.bus.free_at;
}

Hbm::ChunkTiming Hbm::timing() const {
  return {ticks(spec_.row_miss_penalty),
          ticks(spec_.refresh_time),
          ticks(spec_.refresh_interval),
          ticks(spec_.turnaround),
          map_.interleave,
          chunk_ticks_,
          channel_bw_,
          part_ticks_.data(),
          part_ticks_.size()};
}

template <bool Pow2>
Tick Hbm::serve_rows(const HbmAddressMap& map, const ChunkTiming& t, const MemAccess& a, Tick arrive, Tick& wait) {
  // (`map` and `t` are the caller's locals: the chunks' stores (channel and
  // bank state) could alias this object's fields as far as the compiler
  // knows, which would then be reloaded for every chunk.)
  std::byte* const records = channels_.base();
  const std::size_t record_bytes = channels_.bytes();
  const std::uint32_t* const bank_at = bank_at_.data();
  Tick done = arrive, longest = 0;
  for (std::uint32_t r = 0; r < a.rows; ++r) {
    std::uint64_t addr = a.row(r);
    std::uint64_t left = a.row_bytes;
    while (left > 0) {  // split the row at interleave boundaries
      const std::uint64_t chunk = std::min(left, map.to_block_end<Pow2>(addr));
      const HbmAddressMap::Place at = map.place<Pow2>(addr);
      std::byte* const rec = records + at.channel * record_bytes;
      done = std::max(done, serve_chunk(ChannelRecords::channel(rec), ChannelRecords::bank(rec, bank_at[at.bank]),
                                        at.row, chunk, a.write, arrive, t, longest));
      addr += chunk;
      left -= chunk;
    }
  }
  wait = longest;
  return done;
}

template <class Runs>
Tick Hbm::walk_runs(const HbmAddressMap& map, const ChunkTiming& t, bool write, Tick arrive, Tick& wait,
                    Runs runs) {
  // serve_rows<true>'s chunks, in its order: a run's part chunk up to its
  // first interleave boundary, its whole chunks (walked), its part chunk
  // after the last boundary.
  std::byte* const records = channels_.base();
  const std::size_t record_bytes = channels_.bytes();
  const std::uint32_t* const bank_at = bank_at_.data();
  const HbmBlockWalk walk(map);
  const std::uint64_t low = (std::uint64_t{1} << walk.run_bits()) - 1;
  const std::uint64_t whole = map.interleave;
  Tick done = arrive, longest = 0;
  const auto part = [&](std::uint64_t addr, std::uint64_t bytes) __attribute__((always_inline)) {
    const HbmAddressMap::Place at = map.place<true>(addr);
    std::byte* const rec = records + at.channel * record_bytes;
    done = std::max(done, serve_chunk(ChannelRecords::channel(rec), ChannelRecords::bank(rec, bank_at[at.bank]), at.row,
                                      bytes, write, arrive, t, longest));
  };
  runs([&](std::uint64_t addr, std::uint64_t left) __attribute__((always_inline)) {
    if (left == 0) return;
    const std::uint64_t head = map.to_block_end<true>(addr);
    if (head != whole || left < whole) {
      const std::uint64_t chunk = std::min(left, head);
      part(addr, chunk);
      addr += chunk;
      left -= chunk;
    }
    if (left >= whole) {
      const std::uint64_t count = walk.block(left);  // (left / whole)
      // In aligned runs of 2^run_bits() blocks (8 on every shipped machine):
      // one full decode a run, its blocks on its bank and row, each on the
      // channel of the run's first XOR its offset (HbmBlockWalk). (Inside a
      // run the loop needs none of the decode's shifts and masks in its
      // registers.)
      for (std::uint64_t blk = walk.block(addr), end = blk + count; blk < end;) {
        const HbmAddressMap::Place at = walk.at(blk);
        const std::uint64_t stop = std::min(end, (blk | low) + 1);
        const std::size_t bank = bank_at[at.bank];
        for (std::uint64_t b = blk; b < stop; ++b) {
          std::byte* const rec = records + (at.channel ^ static_cast<std::uint32_t>(b ^ blk)) * record_bytes;
          done = std::max(done, serve_chunk<true>(ChannelRecords::channel(rec), ChannelRecords::bank(rec, bank), at.row,
                                                  whole, write, arrive, t, longest));
        }
        blk = stop;
      }
      addr += count * whole;
      left -= count * whole;
    }
    if (left > 0) part(addr, left);
  });
  wait = longest;
  return done;
}

Tick Hbm::walk_rows(const HbmAddressMap& map, const ChunkTiming& t, const MemAccess& a, Tick arrive, Tick& wait) {
  return walk_runs(map, t, a.write, arrive, wait, [&](auto run) __attribute__((always_inline)) {
    for (std::uint32_t r = 0; r < a.rows; ++r) run(a.row(r), a.row_bytes);
  });
}

Tick Hbm::walk_batch(const HbmAddressMap& map, const ChunkTiming& t, const MemAccess& b, Tick arrive, Tick& wait) {
  // serve_with() of each run as for_each_in_batch makes it (its bytes cut
  // to the row_bytes field), folded as b_transport folds them: the latest
  // completion and the longest wait over the runs are those over all their
  // chunks, and the stats add up.
  std::uint64_t bytes = 0;
  const Tick done = walk_runs(map, t, b.write, arrive, wait, [&](auto run) __attribute__((always_inline)) {
    for (std::uint32_t i = 0; i < b.run_count; ++i) {
      const std::uint32_t run_bytes = static_cast<std::uint32_t>(b.runs[i].bytes);
      run(b.runs[i].addr, run_bytes);
      bytes += run_bytes;
    }
  });
  if (b.write) {
    writes_ += b.run_count;
    write_bytes_ += bytes;
  } else {
    reads_ += b.run_count;
    read_bytes_ += bytes;
  }
  return done + ticks(spec_.latency);
}

Tick Hbm::serve(const MemAccess& a, Tick arrive) {
  const HbmAddressMap map = map_;
  const ChunkTiming t = timing();
  return serve_with(map, t, a, arrive, last_wait_);
}

Tick Hbm::serve_with(const HbmAddressMap& map, const ChunkTiming& t, const MemAccess& a, Tick arrive, Tick& wait) {
  const Tick done = !map.pow2()        ? serve_rows<false>(map, t, a, arrive, wait)
                    : reference_walk_ ? serve_rows<true>(map, t, a, arrive, wait)
                                      : walk_rows(map, t, a, arrive, wait);
  if (a.write) {
    ++writes_;
    write_bytes_ += a.bytes();
  } else {
    ++reads_;
    read_bytes_ += a.bytes();
  }
  if (trace_ != nullptr) {
    auto& b = traffic_[done / bucket_];
    (a.write ? b.second : b.first) += a.bytes();
  }
  return done + ticks(spec_.latency);
}

void Hbm::b_transport(int, tlm::tlm_generic_payload& p, sc_core::sc_time& delay) {
  const Tick now = time_.now();
  delay = to_sc_time(transport(*p.get_extension<MemAccessExt>(), now + delay.value(), now) - now);
  p.set_response_status(tlm::TLM_OK_RESPONSE);
}

Tick Hbm::transport(MemAccessExt& ext, Tick arrive, Tick) {
  // A batch's runs one by one, as if each came on its own (run_batch.h),
  // with the map and timing set up once.
  const HbmAddressMap map = map_;
  const ChunkTiming t = timing();
  Tick done = 0, wait = 0;
  if (ext.access.batch() && ext.access.run_count > 0 && map.pow2() && !reference_walk_ && trace_ == nullptr) {
    done = walk_batch(map, t, ext.access, arrive, wait);  // (the same, in one walk)
  } else {
    for_each_in_batch(ext.access, [&](const MemAccess& a) {
      Tick w = 0;
      done = std::max(done, serve_with(map, t, a, arrive, w));
      wait = std::max(wait, w);
    });
  }
  // A lone request opens its row and waits the access latency.
  ext.unloaded = ticks(spec_.latency) + ticks(spec_.row_miss_penalty);
  ext.wait = wait;
  return done;
}

void Hbm::enable_trace(TraceWriter* trace, Tick bucket) {
  trace_ = trace;
  bucket_ = bucket;
}

void Hbm::emit_trace() {
  if (trace_ == nullptr || traffic_.empty()) return;
  const std::uint32_t pid = trace_->process(name());
  const double secs = static_cast<double>(bucket_) * 1e-12;
  Tick last = ~Tick{0};
  for (const auto& [bucket, bytes] : traffic_) {
    if (last != ~Tick{0} && bucket > last + 1) {  // an idle stretch: drop to zero
      trace_->counter(pid, "read GB/s", (last + 1) * bucket_, 0);
      trace_->counter(pid, "write GB/s", (last + 1) * bucket_, 0);
    }
    trace_->counter(pid, "read GB/s", bucket * bucket_, static_cast<double>(bytes.first) / secs / 1e9);
    trace_->counter(pid, "write GB/s", bucket * bucket_, static_cast<double>(bytes.second) / secs / 1e9);
    last = bucket;
  }
  traffic_.clear();
}

}  // namespace tdmsim::sim
