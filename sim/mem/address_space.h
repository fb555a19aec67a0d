// Simulated device memory's address allocator: where the buffers of a kernel
// or a MoE layer live. The caches and HBM see these addresses, so placement
// decides set and channel conflicts; every program builder (sim/programs)
// takes one.
#pragma once

#include <cstdint>

namespace tdmsim::sim {

// Buffers are placed at 2 MiB-aligned offsets from 4 GiB up, in allocation
// order, never freed: two runs that allocate alike see the same addresses.
// A tenant of a partitioned GPU starts at its partition's own base (a
// 2 MiB-aligned address above 4 GiB, apps/tdmsim/tenants_run.cpp).
class AddressSpace {
 public:
  AddressSpace() = default;
  explicit AddressSpace(std::uint64_t base) : next_(base) {}
  std::uint64_t allocate(std::uint64_t bytes);

 private:
  std::uint64_t next_ = 1ull << 32;
};

}  // namespace tdmsim::sim
