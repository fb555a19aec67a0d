// The token-row gather of one token block of the MoE plan as tensor-mover gather
// descriptors: the block's sorted rows (token * slots + slot) become token
// indices into the activation tensor x, padding rows (the sentinel) become
// index `tokens`, one past the last row, which the tensor mover zero-fills.
#pragma once

#include <cstdint>
#include <vector>

#include "descriptors/format/row_gather.h"
#include "descriptors/plan/moe_plan.h"

namespace tdmsim::format {

// Token indices of block `block` (block_m entries; padding rows -> tokens).
std::vector<std::uint32_t> block_token_rows(const plan::BlockLayout& layout, std::uint32_t block,
                                            std::uint32_t slots_per_token, std::uint32_t tokens);

// Gather descriptors for block `block`. `x` describes the activation tensor
// (global_addr, tensor_cols, tile_cols, row_stride, element_bytes, lds_addr,
// padding); its tensor_rows is set to `tokens` here. Throws
// std::invalid_argument if the block is outside the layout.
std::vector<TensorDescriptor> make_token_gather(const plan::BlockLayout& layout,
                                                std::uint32_t block, std::uint32_t slots_per_token,
                                                std::uint32_t tokens, RowGatherSpec x);

}  // namespace tdmsim::format
