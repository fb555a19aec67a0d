#include "sim/mem/channel_count.h"

#include <bit>

namespace tdmsim::sim {

ChannelCounter::ChannelCounter(std::size_t channels) : channels_(channels), div_(channels) {
  pow2_ = std::has_single_bit(channels);
  shift_ = static_cast<std::uint32_t>(std::countr_zero(channels));
  mask_ = std::uint64_t{channels} - 1;
}

}  // namespace tdmsim::sim
