// The GPU case of a scenario: what `tdmsim gpu-case` writes for the GPU runner
// (kernels/runner), taken from the plan every backend shares.
#pragma once

#include "descriptors/plan/moe_plan.h"
#include "kernels/moe/moe_case.h"

namespace tdmsim::gpu {

// Whether the GPU kernels (kernels/moe/*.hip) run a format: bf16, and fp8
// e4m3 OCP with per_token or block_128 scales, weights in the activation
// dtype. The others are emulator and timing model only.
bool gpu_kernels_run(const OperandFormats& f);

// Throws std::invalid_argument for a layer the kernels cannot take (the
// message says why): a weight_on_input model, a format gpu_kernels_run
// refuses ("emulator and timing model only; the GPU kernels run: ...").
MoeCase make_case(const config::ResolvedScenario& scenario, const plan::MoePlan& plan);

}  // namespace tdmsim::gpu
