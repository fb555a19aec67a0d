#include "sim/mem/deferred_channels.h"

#include <algorithm>

namespace tdmsim::sim {

Tick DeferredChannels::reserve_counted(Tick arrive) const {
  // A channel serves its lines one after another from max(arrive, free):
  // one reservation of all its lines ends where line-by-line ones would.
  Tick served = arrive;
  const Tick line_time = line_time_;
  BusyUntil* const ch_busy = channel_;
  std::uint32_t* const count = reserve_count_;
  const std::uint64_t every = *reserve_every_;
  *reserve_every_ = 0;
  for (std::size_t ch = 0; ch < channels_; ++ch) {
    const std::uint64_t n = count[ch] + every;
    if (n == 0) continue;
    count[ch] = 0;
    served = std::max(served, ch_busy[ch].reserve(arrive, line_time * n));
  }
  return served + hit_latency_;
}

Tick DeferredChannels::reserve_lines(const std::uint16_t* lines, Tick arrive) const {
#if TDMSIM_X86_VARIANTS
  if (avx2_) return channel_reserve::lines_avx2(lines, arrive, line_time_, channel_, channels_) + hit_latency_;
#endif
  return channel_reserve::lines_scalar(lines, arrive, line_time_, channel_, channels_) + hit_latency_;
}

}  // namespace tdmsim::sim
