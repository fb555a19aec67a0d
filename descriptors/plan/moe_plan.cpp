#include "descriptors/plan/moe_plan.h"

namespace tdmsim::plan {

LayerShape layer_shape(const config::ResolvedScenario& r) {
  const ScenarioSpec& s = r.scenario.spec;
  const ModelSpec& m = r.model.spec;
  LayerShape shape;
  shape.tokens = s.tokens;
  shape.hidden = m.hidden_size;
  shape.inter = m.intermediate_size / s.parallel.tp;
  shape.shared_inter = m.shared_intermediate_size / s.parallel.tp;
  shape.experts_total = m.experts;
  shape.experts_local = m.experts / s.parallel.ep;
  shape.shared = m.shared_experts;
  shape.top_k = m.top_k;
  shape.dtype = s.dtype;
  shape.quant = s.quant;
  shape.activation = m.activation;
  shape.activation_limit = m.activation_limit;
  shape.weight_on_input = m.gating.weight_on_input;
  return shape;
}

}  // namespace tdmsim::plan
