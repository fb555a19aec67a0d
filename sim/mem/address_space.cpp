#include "sim/mem/address_space.h"

namespace tdmsim::sim {

std::uint64_t AddressSpace::allocate(std::uint64_t bytes) {
  // 2 MiB: a huge page, as the device allocator hands large buffers out.
  constexpr std::uint64_t kAlign = 2ull << 20;
  const std::uint64_t at = next_;
  next_ += (bytes + kAlign - 1) / kAlign * kAlign;
  return at;
}

}  // namespace tdmsim::sim
