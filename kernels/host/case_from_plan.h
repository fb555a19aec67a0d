// The GPU case of a scenario: what `tdmsim gpu-case` writes for the GPU runner
// (kernels/runner), taken from the plan every backend shares.
#pragma once

#include <stdexcept>
#include <string>

#include "descriptors/plan/moe_plan.h"
#include "kernels/moe/moe_case.h"

namespace tdmsim::gpu {

// Whether the GPU kernels (kernels/moe/*.hip) run a format: bf16, and fp8
// e4m3 OCP with per_token or block_128 scales, weights in the activation
// dtype. The others are emulator and timing model only.
bool gpu_kernels_run(const OperandFormats& f);

// A layer the kernels cannot take: the message says why, `key` which key
// of the scenario (or of its model, with `in_model`) set it, so that a
// command can name the key at its line.
struct CaseRefused : std::invalid_argument {
  CaseRefused(std::string key_, bool in_model_, const std::string& message)
      : std::invalid_argument(message), key(std::move(key_)), in_model(in_model_) {}
  std::string key;
  bool in_model = false;
};

// Throws CaseRefused for a layer the kernels cannot take: a weight_on_input
// model, a format gpu_kernels_run refuses ("emulator and timing model only;
// the GPU kernels run: ..."), AITER's stage-1-only split-K.
MoeCase make_case(const config::ResolvedScenario& scenario, const plan::MoePlan& plan);

}  // namespace tdmsim::gpu
