// build_plan and the layer shape: the pieces of the plan put together.
#include "descriptors/plan/moe_plan.h"

#include "descriptors/plan/expert_parallel.h"
#include "descriptors/plan/kernel_request.h"
#include "descriptors/plan/routing.h"

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
  shape.shared_experts = shape.shared_inter > 0 ? m.shared_experts : 0;
  // Shared experts are replicated on every expert-parallel rank and run as
  // routed-size chunks, so one kernel and one weight stride serve them all.
  shape.shared_chunks =
      shape.shared_experts > 0 ? (shape.shared_inter + shape.inter - 1) / shape.inter : 0;
  shape.shared = shape.shared_experts * shape.shared_chunks;
  shape.top_k = m.top_k;
  shape.dtype = s.dtype;
  shape.weight_dtype = operand_formats(s).weight;
  shape.quant = s.quant;
  shape.activation = m.activation;
  shape.activation_limit = m.activation_limit;
  shape.weight_on_input = m.gating.weight_on_input;
  shape.scoring = m.gating.scoring;
  shape.correction_bias = m.gating.correction_bias;
  shape.router_bias = m.gating.router_bias;
  shape.n_group = m.gating.n_group;
  shape.topk_group = m.gating.topk_group;
  shape.router_timed = s.routing.router_stage == RouterStage::timed;
  return shape;
}

void finish_plan(const config::ResolvedScenario& scenario, MoePlan& plan) {
  // A tuned table's row (kernel.config) or AITER's rule (kernel.heuristic)
  // fixes what the scenario leaves open; choose_kernel decides the rest.
  KernelRequest request = kernel_request(scenario, plan.shape);
  plan.kernel =
      choose_kernel(plan.shape, request.spec, scenario.machine.spec, plan.fused, request.fixed_by, request.aiter_traits);
  plan.kernel.reason = request.prefix + plan.kernel.reason;
  plan.kernel.source = std::move(request.source);
  // The scenario's CK pipelines (kernel.*_lds_buffers) describe AITER's
  // 2-stage CK kernels. Where the plan picks AITER's 1-stage assembly kernel
  // (kernel.stages 0: the heuristic's pick, a serving batch of few tokens)
  // they do not apply, as split_k does not: the kernel: line says so. (The
  // spec refuses them beside kernel.stages 1, where they never could.)
  const KernelSpec& asked = scenario.scenario.spec.kernel;
  if (plan.kernel.stages == 1 && (asked.gate_up_lds_buffers != 0 || asked.down_lds_buffers != 0)) {
    plan.kernel.reason += "; kernel.*_lds_buffers not used: AITER's 1-stage kernel is an assembly kernel, with no "
                          "CK pipeline";
  }
  if (plan.kernel.stages == 1 && asked.gate_up_workgroups_per_cu != 0) {
    plan.kernel.reason += "; kernel.gate_up_workgroups_per_cu not used: AITER's 1-stage kernel holds what its "
                          "kernel list says";
  }
  if (plan.kernel.stages == 1 && asked.down_combine != DownCombine::machine) {
    plan.kernel.reason += "; kernel.down_combine not used: AITER's 1-stage kernel adds its partial rows atomically";
  }
  plan.layout = sort_into_blocks(plan.shape, plan.fused, plan.kernel.block_m);
  if (plan.kernel.stages == 1) {
    plan.stage1 = tile_jobs(plan.shape, plan.layout, plan.kernel, Stage::fused);
  } else {
    plan.stage1 = tile_jobs(plan.shape, plan.layout, plan.kernel, Stage::gate_up);
    plan.stage2 = tile_jobs(plan.shape, plan.layout, plan.kernel, Stage::down);
  }
}

MoePlan build_plan(const config::ResolvedScenario& scenario) {
  MoePlan plan;
  plan.shape = layer_shape(scenario);
  plan.seed = scenario.scenario.spec.seed;
  plan.routing = route(scenario, &plan.capacity);
  plan.fused = fuse_routing(plan.shape, plan.routing);
  finish_plan(scenario, plan);
  return plan;
}

}  // namespace tdmsim::plan
