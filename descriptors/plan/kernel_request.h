// What the plan asks choose_kernel for: the scenario's kernel: section, with
// the values a tuned table's row (kernel.config) or AITER's heuristic
// (kernel.heuristic: aiter) fixes filled in, and where they came from.
#pragma once

#include <string>

#include "descriptors/plan/aiter_heuristic.h"
#include "descriptors/plan/kernel_config.h"
#include "descriptors/plan/moe_plan.h"

namespace tdmsim::plan {

struct KernelRequest {
  KernelSpec spec;
  std::string fixed_by = "scenario";  // for choose_kernel's reason
  std::string prefix;                 // put before choose_kernel's reason
  KernelSource source;
  AiterKernelTraits aiter_traits;  // from the row's kernel names, or the scenario's keys
};

// The lookup key of a layer (docs/moe-plan.md "Tuned kernel tables"):
// cu_num = the machine's CUs, model_dim = H, inter_dim = I / tp, expert =
// E / ep + fused shared slots, topk = top_k + fused shared slots, act_type and
// the formats from the model and scenario.
KernelConfigQuery kernel_config_query(const LayerShape& shape, const MachineSpec& machine);
AiterLayer aiter_layer(const LayerShape& shape, const MachineSpec& machine);

// Reads the table a scenario names (config::ConfigError for a bad one, at
// its file, line and column), looks the layer up, and fills in the spec.
KernelRequest kernel_request(const config::ResolvedScenario& scenario, const LayerShape& shape);

// The same with an already read table (tests); `table` may be null.
KernelRequest kernel_request(const KernelSpec& spec, const KernelConfigTable* table, const LayerShape& shape,
                             const MachineSpec& machine);

}  // namespace tdmsim::plan
