#include "workloads/specs/model_spec.h"

#include "workloads/config/reader.h"

namespace tdmsim {

void check(const ModelSpec& m, config::Checker& c) {
  c.one_line("name", m.name);
  c.one_line("description", m.description);
  const auto s = [](std::uint64_t v) { return std::to_string(v); };
  if (m.top_k > m.experts) {
    c.fail("top_k", "top_k (" + s(m.top_k) + ") exceeds the number of experts (" +
                        s(m.experts) + ")", {"experts"});
  }
  const auto& g = m.gating;
  if (g.n_group > 1 || g.topk_group > 1) {
    if (m.experts % g.n_group != 0) {
      c.fail("gating.n_group", "experts (" + s(m.experts) + ") do not split into " +
                                   s(g.n_group) + " equal groups");
    } else if (g.topk_group > g.n_group) {
      c.fail("gating.topk_group", "topk_group (" + s(g.topk_group) + ") exceeds n_group (" +
                                      s(g.n_group) + ")");
    } else if (m.top_k > g.topk_group * (m.experts / g.n_group)) {
      c.fail("top_k", "top_k (" + s(m.top_k) + ") exceeds the experts in the " +
                          s(g.topk_group) + " kept groups (" +
                          s(g.topk_group * (m.experts / g.n_group)) + ")");
    }
  }
  if ((m.shared_experts > 0) != (m.shared_intermediate_size > 0)) {
    c.fail(m.shared_experts > 0 ? "shared_intermediate_size" : "shared_experts",
           "shared_experts and shared_intermediate_size must both be zero or both be set",
           {"shared_experts", "shared_intermediate_size"});
  }
  if (m.layers.moe > m.layers.total) {
    c.fail("layers.moe", "MoE layers (" + s(m.layers.moe) + ") exceed all layers (" +
                             s(m.layers.total) + ")");
  }
  if (m.activation_limit > 0 && m.activation != Activation::swiglu_oai) {
    c.fail("activation_limit", "a clamp limit applies only to activation swiglu_oai",
           {"activation"});
  }
}

}  // namespace tdmsim
