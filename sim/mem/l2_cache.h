// One die's L2: channels (banks) with a bandwidth each, a set-associative tag
// array with real addresses, write-back with write-allocate, a per-channel
// miss limit (MSHRs) that bounds how much miss traffic can be in flight, and
// per-channel atomic units for read-modify-writes (fetched on a miss).
#pragma once

#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>
#include <tlm_utils/simple_initiator_socket.h>

#include "sim/core/divisor.h"
#include "sim/core/sim_time.h"
#include "sim/core/stats.h"
#include "sim/mem/cache_tags.h"
#include "sim/mem/mem_access.h"
#include "workloads/specs/machine_spec.h"

namespace tdmsim::sim {

// The L2 channel time of a K group of loop iterations whose loads were looked
// up together, handed out to the iterations one at a time: of a channel's N
// lines, iteration j of the group's g gets floor((j + 1) N / g) -
// floor(j N / g). The group reserves exactly its lines, and each iteration
// its share of them. (Counting each iteration's own lines per channel, as
// before, took a channel hash per line per iteration: most of the time of a
// simulated MoE layer, for predictions within a fraction of a percent,
// docs/moe-timing.md "Speed".) A tile row's lines over 16 consecutive
// iterations fall on 16 distinct channels (channel_of), so a group's lines
// are spread almost evenly, as are each iteration's over a few iterations.
class ChannelShare {
 public:
  // Clears the counts for a group on `channels` channels; the access(es)
  // then add their lines through counts() (MemAccess::channel_lines).
  void clear(std::size_t channels) { ch_.assign(channels, Lines{}); counts_.assign(channels, 0u); }
  std::uint32_t* counts() { return counts_.data(); }
  // Starts handing out the counted lines over `g` iterations.
  void start(std::uint32_t g);
  // The next iteration's lines on channel `ch` (call for every channel, in
  // order, once per iteration).
  std::uint32_t next(std::size_t ch) {
    Lines& l = ch_[ch];
    l.acc += l.r;
    if (l.acc >= g_) {
      l.acc -= g_;
      return l.q + 1;
    }
    return l.q;
  }

 private:
  struct Lines {
    std::uint32_t q = 0, r = 0, acc = 0;  // N = q g + r; acc = j r mod g
  };
  std::vector<Lines> ch_;
  std::vector<std::uint32_t> counts_;
  std::uint32_t g_ = 1;
};

class L2Cache : public sc_core::sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<L2Cache> target;
  tlm_utils::simple_initiator_socket<L2Cache> initiator;

  // `miss_latency` is the expected round trip of a miss below the L2 (used to
  // size how long a miss holds an MSHR).
  L2Cache(sc_core::sc_module_name name, const L2Spec& spec, units::Frequency clock,
          Tick miss_latency, StatRegistry& stats);

  // The channel serving a line: the line number XOR-folded with its higher
  // bits, so that power-of-two strides (a tile's rows) spread over channels.
  std::size_t channel_of(std::uint64_t line) const {
    if (channels_pow2_) {  // the same fold by shifts (runs per line: keep it branch-light)
      const std::uint32_t s = channel_shift_;
      return static_cast<std::size_t>((line ^ (line >> s) ^ (line >> 2 * s) ^ (line >> 3 * s)) &
                                      channel_mask_);
    }
    const std::uint64_t a = channels_.div(line), b = channels_.div(a), c = channels_.div(b);
    return static_cast<std::size_t>(channels_.mod(line ^ a ^ b ^ c));
  }

  // Reserves the next iteration's share of a K group's channel time
  // (`share`, counted by an access with MemAccess::channel_lines) from
  // `arrive`; returns when the data of its lines that hit is back at the
  // requester. Each channel serves its lines after those reserved before, as
  // b_transport's own reservation would.
  Tick reserve_next(ChannelShare& share, Tick arrive);
  std::size_t channels() const { return channel_.size(); }

  // Writes every dirty line back to memory (the lines stay valid, now
  // clean); returns when the last write-back has landed. Called at the end
  // of each kernel, so a kernel's time includes making its writes visible.
  Tick flush(Tick at);

 private:
  void b_transport(int id, tlm::tlm_generic_payload& p, sc_core::sc_time& delay);

  // Lines sharing one tag (sector block, cache_tags.h): a 4 KiB block, so a
  // tile row streamed in a K group is a handful of tag operations.
  static constexpr std::uint32_t kBlockLines = 32;
  // Adds `n` consecutive lines from line number `line` to their channels'
  // counts (`every`: lines that fell on every channel alike).
  void count_lines(std::uint64_t line, std::uint64_t n, std::vector<std::uint32_t>& per_channel,
                   std::uint64_t& every) const {
    // Whole aligned groups of `channels` lines (a 4 KiB block on 16 channels
    // of 128 B lines, the common run) touch every channel alike.
    if (channels_pow2_ && ((line | n) & channel_mask_) == 0) {
      every += n >> channel_shift_;
      return;
    }
    count_lines_any(line, n, per_channel, every);
  }
  void count_lines_any(std::uint64_t line, std::uint64_t n, std::vector<std::uint32_t>& per_channel,
                       std::uint64_t& every) const;

  MemPort port_;  // reused request payload
  L2Spec spec_;
  CacheTags tags_;
  units::Bandwidth channel_bw_;
  Tick mshr_hold_per_line_;
  Divisor channels_;
  std::vector<BusyUntil> channel_;
  std::vector<BusyUntil> mshr_;
  std::vector<BusyUntil> atomic_unit_;  // per channel: read-modify-writes
  Tick line_time_ = 0;
  Tick hit_latency_ = 0;
  bool channels_pow2_ = true;
  std::uint32_t channel_shift_ = 0;     // log2(channels) when channels_pow2_
  std::uint64_t channel_mask_ = 0;      // channels - 1 when channels_pow2_
  std::uint32_t line_shift_ = 7;
  // Scratch reused by every access (no allocation on the hot path).
  std::vector<std::uint32_t> lines_per_channel_, misses_per_channel_;
  std::vector<std::uint64_t> atomic_bytes_per_channel_;
  units::Bandwidth atomic_bw_{};
  std::vector<ByteRun> misses_, victims_;
  std::uint64_t hits_ = 0, misses_count_ = 0, writebacks_ = 0, read_bytes_ = 0, write_bytes_ = 0,
                atomic_bytes_ = 0;
};

}  // namespace tdmsim::sim
