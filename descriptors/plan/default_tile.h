// The default tile of AITER-like kernels for a layer's operand dtypes
// (descriptors/plan/kernel_heuristic.cpp; docs/moe-plan.md "Kernel heuristic").
#pragma once

#include <cstdint>

#include "descriptors/plan/moe_plan.h"

namespace tdmsim::plan {

// default_tile(block_m, quant) with K in proportion to the narrower operands
// (the same LDS bytes as the bf16 default): x2 for 8-bit, x4 for 4-bit.
KernelTile default_tile(std::uint32_t block_m, Quant quant, DType dtype, DType weight_dtype);

}  // namespace tdmsim::plan
