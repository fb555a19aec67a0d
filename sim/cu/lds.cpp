#include "sim/cu/lds.h"

#include <algorithm>

#include "workloads/specs/enums.h"

namespace tdmsim::sim {

Lds::Lds(const ComputeSpec& cu)
    : bytes_per_clock_(static_cast<double>(std::min<std::uint64_t>(cu.lds_bytes_per_clock, 4ull * cu.lds_banks))) {}

double Lds::iteration_bytes(const isa::Loop& loop) {
  double bytes = 0;
  for (const auto& r : loop.loads) {
    if (!r.to_registers) bytes += static_cast<double>(r.row_bytes) * r.rows;
  }
  if (loop.m > 0) {
    const double rows = static_cast<double>(loop.m) + (loop.b_in_registers ? 0.0 : loop.n);
    bytes += rows * loop.k * dtype_bits(loop.dtype) / 8.0;
  }
  return bytes;
}

}  // namespace tdmsim::sim
