#include "sim/mem/l1_cache.h"

#include <algorithm>

#include "sim/mem/l2_cache.h"
#include "sim/mem/run_merge.h"

namespace tdmsim::sim {

namespace {
CacheTags make_tags(const ComputeSpec& cu) {
  return CacheTags(cu.l1_per_cu.bytes, static_cast<std::uint32_t>(cu.l1_line.bytes), cu.l1_ways);
}
}  // namespace

L1Cache::L1Cache(sc_core::sc_module_name name, const ComputeSpec& cu, StatRegistry& stats, const SimClock& time)
    : sc_module(name), target("target"), initiator("initiator"), time_(time), spec_(cu), tags_(make_tags(cu)),
      line_(cu.l1_line.bytes), capacity_(cu.l1_per_cu.bytes), hit_latency_(ticks(cu.l1_hit_latency)),
      bandwidth_{std::uint64_t{cu.l1_bytes_per_clock} * cu.clock.hz} {
  target.register_b_transport(this, &L1Cache::b_transport);
  const std::string me = this->name();
  stats.add(me, "hits", &hits_, "lines", "L1 line hits (loads looked up)");
  stats.add(me, "misses", &misses_count_, "lines", "L1 line misses (loads looked up)");
  stats.add(me, "hit_bytes", &hit_bytes_, "bytes", "bytes served by the L1");
  stats.add(me, "passed_bytes", &passed_bytes_, "bytes",
            "bytes sent below unlooked-up (stores, K-grouped main-loop tile loads, loads of at least the L1's capacity)");
  stats.share(me, "hit_rate", &hits_, &misses_count_, "L1 hits / line lookups");
}

void L1Cache::invalidate() { tags_ = make_tags(spec_); }

void L1Cache::connect(L2Cache& l2) {
  initiator.bind(l2.target);
  below_.target = &l2;
}

// (The socket's call out of line: each send is then a test and a direct
// call in the L1's hot code.)
[[gnu::cold, gnu::noinline]] void L1Cache::send_by_socket(tlm::tlm_generic_payload& p, sc_core::sc_time& delay) {
  initiator->b_transport(p, delay);
}

inline void L1Cache::pass_below(tlm::tlm_generic_payload& p, MemAccessExt& ext, sc_core::sc_time& delay) {
  if (below_.target != nullptr) [[likely]] {
    const Tick now = time_.now();
    delay = to_sc_time(below_.target->transport(ext, now + delay.value(), now) - now);
  } else {
    send_by_socket(p, delay);
  }
}

void L1Cache::b_transport(tlm::tlm_generic_payload& p, sc_core::sc_time& delay) {
  auto* ext = p.get_extension<MemAccessExt>();
  const MemAccess& a = ext->access;
  // Write-through without allocation; streamed tiles; and loads of at least
  // the L1's capacity (a stream, whose own lines would evict each other).
  // (One test of the three, not three branches: which loads pass is
  // data-dependent, and each branch of its own was mispredicted often.)
  if (static_cast<bool>(static_cast<unsigned>(a.write) | static_cast<unsigned>(a.streamed) |
                        static_cast<unsigned>(a.bytes() >= capacity_))) {
    passed_bytes_ += a.bytes();
    pass_below(p, *ext, delay);
    return;
  }
  const Tick now = time_.now();
  const Tick arrive = now + delay.value();
  // (misses_ is empty here: each way out below that filled it clears it,
  // where it is rarely empty. Cleared here, whether the last access left
  // runs in it was a branch mispredicted more often than not.)
  std::uint64_t lines = 0, missed = 0, hit_bytes = 0;
  // The geometry in a local (CacheTags::Walker), the line size too: the
  // lookups' stores could alias this object's fields. An L1's records (a
  // few KiB) stay in the host's caches: not asked for ahead
  // (access_resident; a host-speed choice only).
  CacheTags::Walker tags = tags_.walker();
  const std::uint64_t line = line_;
  for (std::uint32_t r = 0; r < a.rows; ++r) {
    const std::uint64_t begin = a.row(r);
    const std::uint64_t end = begin + a.row_bytes;
    for (std::uint64_t l = begin & ~(line - 1); l < end; l += line) {
      ++lines;
      const CacheTags::Run res = tags.access_resident(l, 1, false);
      if (res.missed != 0) {
        ++missed;
        append_run(misses_, l, line);
      } else {
        hit_bytes += std::min(end, l + line) - std::max(begin, l);
      }
    }
  }
  hits_ += lines - missed;
  misses_count_ += missed;
  hit_bytes_ += hit_bytes;
  if (missed == lines) {  // nothing to serve here: below as it came
    misses_.clear();
    pass_below(p, *ext, delay);
    return;
  }
  // The hits: the port moves their bytes, then the hit latency.
  const Tick transfer = transfer_ticks(hit_bytes, bandwidth_);
  const Tick served = port_busy_.reserve(arrive, transfer);
  BelowResponse r{served + hit_latency_, hit_latency_ + transfer, served - transfer - arrive};
  // The misses go below as runs of lines (in address order, touching runs merged).
  std::sort(misses_.begin(), misses_.end(), [](const ByteRun& x, const ByteRun& y) { return x.addr < y.addr; });
  for_each_run(misses_, false, a.die, [&](const MemAccess& m) { r.send(port_, below_, m, arrive, now); });
  misses_.clear();
  r.answer(*ext, delay, now);
}

}  // namespace tdmsim::sim
