// Shared helpers of the plan tests: hand-built models and scenarios (so a
// test states every parameter it depends on) and the shipped machines.
#pragma once

#include <filesystem>
#include <string>

#include "descriptors/plan/moe_plan.h"
#include "workloads/config/resolved.h"

namespace tdmsim::plan::test {

inline const std::filesystem::path kWorkloads =
    std::filesystem::path(TDMSIM_SOURCE_DIR) / "workloads";

MachineSpec shipped_machine(const std::string& name);  // workloads/machines/<name>.yaml

inline ModelSpec make_model(std::uint32_t experts, std::uint32_t top_k,
                            std::uint32_t hidden = 256, std::uint32_t inter = 128) {
  ModelSpec m = config::defaults<ModelSpec>();
  m.name = "test-model";
  m.hidden_size = hidden;
  m.intermediate_size = inter;
  m.experts = experts;
  m.top_k = top_k;
  m.gating.scoring = Scoring::softmax;
  m.gating.renormalize = true;
  return m;
}

// A resolved scenario built in memory, on the shipped mi300x (304 CUs).
inline config::ResolvedScenario make_scenario(const ModelSpec& model, std::uint32_t tokens,
                                              std::uint64_t seed,
                                              RoutingSource source = RoutingSource::uniform) {
  config::ResolvedScenario r;
  r.model.spec = model;
  r.machine.spec = shipped_machine("mi300x");
  ScenarioSpec& s = r.scenario.spec;
  s = config::defaults<ScenarioSpec>();
  s.name = "test-scenario";
  s.tokens = tokens;
  s.seed = seed;
  s.routing.source = source;
  r.scenario.file = kWorkloads / "scenarios" / "in-memory.yaml";
  return r;
}

// Token t picks experts (t*top_k + j) mod E, each with weight 1/top_k: every
// expert gets the same rows.
inline FusedRouting round_robin(const LayerShape& s) {
  Routing r;
  for (std::uint32_t t = 0; t < s.tokens; ++t) {
    for (std::uint32_t j = 0; j < s.top_k; ++j) {
      r.ids.push_back((t * s.top_k + j) % s.experts_total);
      r.weights.push_back(1.0f / static_cast<float>(s.top_k));
    }
  }
  return fuse_routing(s, r);
}

}  // namespace tdmsim::plan::test
