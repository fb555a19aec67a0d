#include "kernels/host/case_from_plan.h"

#include <stdexcept>

#include "descriptors/plan/synthetic_tensors.h"
#include "workloads/config/writer.h"

namespace tdmsim::gpu {

bool gpu_kernels_run(const OperandFormats& f) {
  return f.weight == f.activation &&
         ((f.activation == DType::bf16 && f.quant == Quant::none) ||
          (f.activation == DType::fp8_e4m3 &&
           (f.quant == Quant::per_token || f.quant == Quant::block_128)));
}

MoeCase make_case(const config::ResolvedScenario& scenario, const plan::MoePlan& p) {
  const plan::LayerShape& s = p.shape;
  const ModelSpec& model = scenario.model.spec;
  if (s.weight_on_input) {
    throw CaseRefused("weight_on_input", true, "the GPU kernels do not run weight_on_input models (Llama-4)");
  }
  // The kernels (kernels/moe/*.hip) run bf16, and fp8 e4m3 OCP with per-token
  // or 1x128 block scales, weights in the activation dtype. Every other format
  // the scenario schema accepts is modelled by the emulator and the timing
  // model only (docs/yaml-reference.md, "Formats").
  if (!gpu_kernels_run({s.dtype, s.weight_dtype, s.quant})) {
    throw CaseRefused(
        s.dtype != DType::bf16 && s.dtype != DType::fp8_e4m3 ? "dtype"
        : s.weight_dtype != s.dtype                            ? "weight_dtype"
                                                               : "quant",
        false,
        "dtype " + std::string(config::enum_name(s.dtype)) + ", weight_dtype " +
        std::string(config::enum_name(s.weight_dtype)) + ", quant " +
        std::string(config::enum_name(s.quant)) +
        ": emulator and timing model only; the GPU kernels run: dtype bf16 (quant none) and "
        "dtype fp8_e4m3 (quant per_token or block_128), with weight_dtype same");
  }
  // Our kernels split both stages' K (kernels/moe/fused_moe.hip launch_down);
  // a plan of AITER's kernels splits stage 1 only (KernelChoice::split_down).
  if (!p.kernel.split_down && p.kernel.split_k > 1) {
    throw CaseRefused(
        "kernel.split_k", false,
        "split_k " + std::to_string(p.kernel.split_k) +
        " on stage 1 only (kernel.source aiter, as AITER splits): the GPU kernels split both stages; set "
        "kernel.source: tdmsim, or kernel.split_k: 1");
  }
  MoeCase c;
  c.name = scenario.scenario.spec.name;
  c.seed = p.seed;
  c.tokens = s.tokens;
  c.hidden = s.hidden;
  c.inter = s.inter;
  c.shared_inter = s.shared_inter;
  c.experts_total = s.experts_total;
  c.experts_local = s.experts_local;
  c.shared = s.shared;
  c.shared_chunks = s.shared_chunks;
  c.top_k = s.top_k;
  c.dtype = std::string(config::enum_name(s.dtype));
  c.quant = std::string(config::enum_name(s.quant));
  c.activation = std::string(config::enum_name(s.activation));
  c.activation_limit = static_cast<float>(s.activation_limit);
  c.routing_source =
      scenario.scenario.spec.routing.source == RoutingSource::router ? "router" : "given";
  c.scoring = std::string(config::enum_name(model.gating.scoring));
  c.renormalize = model.gating.renormalize;
  c.n_group = model.gating.n_group;
  c.topk_group = model.gating.topk_group;
  c.routed_scaling = model.gating.routed_scaling;
  c.router_bias = model.gating.router_bias;
  c.correction_bias = model.gating.correction_bias;
  c.router_weight_scale = plan::router_weight_scale(s.hidden);
  const plan::KernelChoice& k = p.kernel;
  c.stages = k.stages;
  c.block_m = k.block_m;
  c.split_k = k.split_k;
  c.pipeline_stages = k.pipeline_stages;
  c.raster_group = k.raster_group;
  c.gate_up_tile = {k.gate_up_tile.threads, k.gate_up_tile.m, k.gate_up_tile.n, k.gate_up_tile.k};
  c.down_tile = {k.down_tile.threads, k.down_tile.m, k.down_tile.n, k.down_tile.k};
  const plan::BlockLayout& l = p.layout;
  c.capacity = l.capacity;
  c.padded_rows = l.padded_rows;
  c.blocks = static_cast<std::uint32_t>(l.block_expert.size());
  c.routing_ids = p.routing.ids;
  c.routing_weights = p.routing.weights;
  c.sorted_rows = l.sorted_rows;
  c.sorted_weights = l.sorted_weights;
  c.block_expert = l.block_expert;
  c.expert_first_block = l.expert_first_block;
  return c;
}

}  // namespace tdmsim::gpu
