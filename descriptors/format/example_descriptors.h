// Small, valid example descriptors for users to inspect (`tdmsim describe
// --example moe|tensor`) and for tests: a Mixtral-8x7B-shaped layer at 16
// tokens, built through the same plan->descriptor path the backends use. The
// shipped copies under validation/data/descriptors/ are these bytes (a test
// keeps them in sync).
#pragma once

#include "descriptors/format/moe_descriptor.h"
#include "descriptors/format/tensor_file.h"
#include "descriptors/plan/moe_plan.h"

namespace tdmsim::format {

// A hand-made plan (deterministic routing, no RNG): 16 tokens, 8 experts,
// top-2, block_m 16, 2 stages, bf16, H 4096, I 14336.
plan::MoePlan example_plan();

// The stage-1 (gate_up) descriptor of example_plan(), buffers packed from 4 GiB.
MoeDescriptor example_moe_descriptor();

// Block 0's token-row gather (first 128-column K tile, padded LDS rows) and
// the matching gate_up weight tile of the block's expert.
TensorDescriptorFile example_tensor_file();

}  // namespace tdmsim::format
