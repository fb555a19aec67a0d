// A streaming read kernel for the partition tests: `wgs` workgroups, each
// reading 16 x 8 KiB from its own 128 KiB block above `base` (HBM-bound on
// MI300X once the grid fills a partition).
#pragma once

#include <cstdint>
#include <vector>

#include "isa/tile_program.h"

namespace tdmsim::test {

inline std::vector<isa::KernelLaunch> stream_kernel(std::uint64_t base, std::uint32_t wgs) {
  return {{"stream", wgs, [base](std::uint32_t wg) {
             isa::TileProgram p;
             p.threads = 256;
             p.vgprs_per_thread = 64;
             isa::Loop loop;
             loop.iterations = 16;
             loop.loads.push_back(isa::strided(base + std::uint64_t{wg} * (128u << 10), 8192, 1, 0, 8192));
             p.loops.push_back(std::move(loop));
             return p;
           },
           nullptr, nullptr}};
}

}  // namespace tdmsim::test
