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

#include "sim/core/sim_time.h"
#include "sim/core/stats.h"
#include "sim/mem/cache_tags.h"
#include "sim/mem/channel_count.h"
#include "sim/mem/mem_access.h"
#include "workloads/specs/machine_spec.h"

namespace tdmsim::sim {

class Fabric;

class L2Cache : public sc_core::sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<L2Cache> target;
  tlm_utils::simple_initiator_socket<L2Cache> initiator;

  // `miss_latency` is the round trip of a miss that goes to HBM (used to size
  // how long a miss holds an MSHR); `near_miss_latency`, where a memory-side
  // cache (MALL) sits below, the round trip of a miss it serves (0: none).
  // `time` is the GPU's global time.
  L2Cache(sc_core::sc_module_name name, const L2Spec& spec, units::Frequency clock,
          Tick miss_latency, Tick near_miss_latency, StatRegistry& stats, const SimClock& time);

  // The channel serving a line: the line number XOR-folded with its higher
  // bits, so that power-of-two strides (a tile's rows) spread over channels
  // (ChannelCounter::channel_of).
  std::size_t channel_of(std::uint64_t line) const { return count_.channel_of(line); }

  std::size_t channels() const { return channel_.size(); }

  // The bytes of tag records an L2 of `spec` allocates for one die (its
  // CacheTags, as the constructor makes it): for host-memory estimates.
  static std::uint64_t tag_bytes(const L2Spec& spec) {
    return CacheTags::records_bytes(spec.size_per_die.bytes, static_cast<std::uint32_t>(spec.line.bytes), spec.ways,
                                    kBlockLines, CacheTags::Writes::some);
  }

  // What the target socket's b_transport does, called directly by an
  // initiator that is always bound to this L2 (an L1, L1Cache::connect): the
  // same access without the socket's two indirect calls (a virtual call and
  // the multi-socket's member-function pointer, shared by every module's
  // sockets and so often mispredicted) and the extension's lookup: serves
  // `ext`'s access arriving at `arrive` (global time `now`), writes its
  // unloaded round trip and wait into `ext` and returns its completion.
  // (Out of line: the socket's b_transport and the L1 call one copy.)
  [[gnu::noinline]] Tick transport(MemAccessExt& ext, Tick arrive, Tick now);

  // Binds the initiator to `fabric`'s target and sends to that link by a
  // direct call (Fabric::transport, DirectLink) rather than through the
  // sockets: the same accesses, in the same order. (Bound any other way, the
  // L2 sends through its initiator socket.)
  void connect(Fabric& fabric);

  // Sends misses and write-backs below one run a call (the reference of the
  // batches of run_batch.h, for tests) instead of one batch per access.
  void set_runs_one_by_one(bool on) { one_by_one_ = on; }
  // Counts each access's lines per channel line by line (channel_of) and
  // visits every channel for its reservations: the reference, for tests, of
  // the counts in pieces, the whole-group counts, and the visits of only the
  // channels with lines.
  void set_plain_counts(bool on) { plain_counts_ = on; }

  // Writes every dirty line back to memory (the lines stay valid, now
  // clean); returns when the last write-back has landed. Called at the end
  // of each kernel, so a kernel's time includes making its writes visible.
  Tick flush(Tick at);

 private:
  void b_transport(int id, tlm::tlm_generic_payload& p, sc_core::sc_time& delay);
  // Out of b_transport's hot code (the host's instruction cache holds less
  // of it between accesses than it did):
  // set_plain_counts' reference, line by line: `n` lines from `first` added
  // to their channels' counts.
  [[gnu::cold, gnu::noinline]] void count_plain(std::uint64_t first, std::uint64_t n,
                                                std::uint32_t* per_channel) const;
  // The atomic units' reservations of an access whose old data is there at
  // `ready`: the latest end (at least `ready`); leaves the atomic counts zero.
  [[gnu::noinline]] Tick reserve_atomic(Tick ready, std::uint64_t every_atomic_lines);

  // Lines sharing one tag (sector block, cache_tags.h): a 4 KiB block, so a
  // tile row streamed in a K group is a handful of tag operations.
  static constexpr std::uint32_t kBlockLines = 32;

  MemPort port_;  // reused request payload
  DirectLink<tlm_utils::simple_initiator_socket<L2Cache>, Fabric> below_{initiator};  // the link (connect)
  const SimClock& time_;
  L2Spec spec_;
  CacheTags tags_;
  units::Bandwidth channel_bw_;
  Tick mshr_hold_per_line_;
  // With a MALL below: an MSHR is held for the MALL's round trip
  // (mshr_hold_per_line_ is then that share), and for far_hold_per_line_
  // longer per line when the access went on to HBM (known once it returns).
  Tick far_hold_per_line_ = 0;
  Tick near_miss_latency_ = 0;
  ChannelCounter count_;  // the channel hash, and lines counted per channel
  std::vector<BusyUntil> channel_;
  std::vector<BusyUntil> mshr_;
  std::vector<BusyUntil> atomic_unit_;  // per channel: read-modify-writes
  Tick line_time_ = 0;
  std::uint32_t line_shift_ = 7;
  // Scratch reused by every access (no allocation on the hot path); the
  // two counts are all zero between accesses.
  std::vector<std::uint32_t> lines_per_channel_, misses_per_channel_;
  std::vector<std::uint64_t> atomic_bytes_per_channel_;  // all zero between accesses
  // An atomic access's whole lines per channel (their bytes are the line's),
  // all zero between accesses.
  std::vector<std::uint32_t> atomic_lines_per_channel_;
  // At most 64 channels: an access visits only the channels it counted
  // lines on (a bit each, ChannelCounter::nonzero).
  bool masked_ = false;
  // The tag array stays in the host's caches (CacheTags::resident()): its
  // records are not asked for ahead of the lookups.
  bool resident_ = false;
  bool common_ = false;  // the tags have the common shape (Walker::common_shape)
  units::Bandwidth atomic_bw_{};
  std::vector<ByteRun> misses_, victims_;
  std::vector<ByteRun> batch_;  // scratch: the runs of a batch sent below (send_runs)
  bool one_by_one_ = false;
  bool plain_counts_ = false;
  std::uint64_t hits_ = 0, misses_count_ = 0, writebacks_ = 0, read_bytes_ = 0, write_bytes_ = 0,
                atomic_bytes_ = 0;
};

}  // namespace tdmsim::sim
