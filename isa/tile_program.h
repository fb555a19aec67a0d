// The program one workgroup runs, at tile granularity: loads and stores of
// (2-D strided) address ranges, matrix instructions, vector epilogue work.
// Kernels (the MoE stages, the microbenchmarks) are grids of these programs;
// the timing model executes them with costs from the matrix tables.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "workloads/specs/enums.h"

namespace tdmsim::isa {

// A (2-D strided) memory range; `iter_stride` moves it each loop iteration.
struct MemRange {
  std::uint64_t addr = 0;
  std::uint32_t row_bytes = 0;
  std::uint32_t rows = 1;
  std::uint64_t row_stride = 0;
  std::int64_t iter_stride = 0;
  std::uint64_t bytes() const { return static_cast<std::uint64_t>(row_bytes) * rows; }
};

// One workgroup: prologue loads, a software-pipelined main loop (each
// iteration loads its operands then issues matrix work), an epilogue of vector
// work, then stores.
struct TileProgram {
  std::uint32_t threads = 256;
  std::uint32_t lds_bytes = 0;
  std::uint32_t vgprs_per_thread = 128;

  std::vector<MemRange> prologue_loads;
  std::vector<MemRange> loop_loads;
  std::uint32_t iterations = 0;
  std::uint32_t pipeline_depth = 2;  // iterations of loads in flight
  // Matrix work per iteration: an MxNxK product in `dtype` (0 = none).
  DType dtype = DType::bf16;
  std::uint32_t m = 0, n = 0, k = 0;
  // Dependent loads: each iteration's load address comes from the previous
  // load (pointer chase); `chase` lists the addresses in order.
  std::vector<std::uint64_t> chase;
  std::uint64_t epilogue_vector_ops = 0;  // element operations (activation, scaling, ...)
  std::vector<MemRange> stores;
};

struct KernelLaunch {
  std::string name;
  std::uint32_t workgroups = 0;
  // Resources are uniform over the grid: taken from program(0).
  std::function<TileProgram(std::uint32_t wg)> program;
};

}  // namespace tdmsim::isa
