// The GPU case of a scenario: what `tdmsim gpu-case` writes for the GPU runner
// (kernels/runner), taken from the plan every backend shares.
#pragma once

#include "descriptors/plan/moe_plan.h"
#include "kernels/moe/moe_case.h"

namespace tdmsim::gpu {

// Throws std::invalid_argument for a layer the kernels cannot take (the
// message says why): a weight_on_input model, fp8 without per_token or
// block_128 scales, a dtype other than bf16 / fp8_e4m3.
MoeCase make_case(const config::ResolvedScenario& scenario, const plan::MoePlan& plan);

}  // namespace tdmsim::gpu
