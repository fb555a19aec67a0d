// Consistency checks of a MoePlan before the emulator trusts its indices: a
// plan may come from another build, a file or a test, and a wrong row id must
// give a clear error, never an out-of-bounds access or a silently dropped row.
#pragma once

#include "descriptors/plan/moe_plan.h"

namespace tdmsim::emu {

// Throws std::invalid_argument naming the first inconsistency:
//   shape: tokens, hidden, slots, intermediate size non-zero; shared slots
//          = shared experts x chunks covering shared_inter; a runnable
//          dtype/quant pair;
//   fused routing: [tokens][slots] entries, expert ids < experts_fused or
//          kRemoteExpert, finite weights;
//   layout: sentinel == tokens * slots, padded_rows a multiple of block_m and
//          within sorted_rows, one block expert per block, every real row
//          exactly once (remote picks never), in a block of its own expert,
//          with its routing weight in sorted_weights.
void check_plan(const plan::MoePlan& plan);

}  // namespace tdmsim::emu
