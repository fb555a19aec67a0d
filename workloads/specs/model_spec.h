// The MoE layer of a model, described by workloads/models/<model>.yaml.
#pragma once

#include <cstdint>
#include <string>

#include "workloads/specs/machine_spec.h"

namespace tdmsim {

struct GatingSpec {
  Scoring scoring{};
  bool renormalize{};
  bool correction_bias{};
  bool router_bias{};
  std::uint32_t n_group{};
  std::uint32_t topk_group{};
  double routed_scaling{};
  bool weight_on_input{};

  template <class V>
  void visit(V& v) {
    v.param(scoring, "scoring", "router logits to scores: softmax or sigmoid", Required{});
    v.param(renormalize, "renormalize", "renormalise the top-k weights to sum to 1",
            Required{});
    v.param(correction_bias, "correction_bias",
            "per-expert bias added to scores for selection only (DeepSeek-V3 noaux_tc)",
            Default{false});
    v.param(router_bias, "router_bias", "the router linear layer has a bias (gpt-oss)",
            Default{false});
    v.param(n_group, "n_group", "expert groups for grouped top-k (1 = ungrouped)", Default{1u},
            Min{1u}, Max{1024u});
    v.param(topk_group, "topk_group", "groups kept before the final top-k", Default{1u}, Min{1u},
            Max{1024u});
    v.param(routed_scaling, "routed_scaling", "factor applied to routed expert weights",
            Default{1.0}, Min{0.0}, Max{1000.0});
    v.param(weight_on_input, "weight_on_input",
            "apply the routing weight to the expert input instead of its output (Llama-4)",
            Default{false});
  }
};

struct LayersSpec {
  std::uint32_t moe{};
  std::uint32_t total{};

  template <class V>
  void visit(V& v) {
    v.param(moe, "moe", "MoE layers in the model (descriptive, not modelled: tdmsim times one layer)",
            Required{}, Min{1u}, Max{10000u});
    v.param(total, "total", "all transformer layers (descriptive, not modelled: tdmsim times one layer)",
            Required{}, Min{1u}, Max{10000u});
  }
};

struct ModelSpec {
  std::string name;
  std::string description;
  std::string source;
  std::uint32_t hidden_size{};
  std::uint32_t intermediate_size{};
  std::uint32_t experts{};
  std::uint32_t top_k{};
  std::uint32_t shared_experts{};
  std::uint32_t shared_intermediate_size{};
  GatingSpec gating;
  Activation activation{};
  double activation_limit{};
  LayersSpec layers;

  template <class V>
  void visit(V& v) {
    v.param(name, "name", "short model name used in reports", Required{});
    v.param(description, "description", "one line on the model");
    v.param(source, "source", "where the shape comes from (model card or config)", Required{});
    v.param(hidden_size, "hidden_size", "model (hidden) dimension H", Required{}, Min{1u},
            Max{1048576u});
    v.param(intermediate_size, "intermediate_size", "per-expert intermediate dimension I",
            Required{}, Min{1u}, Max{1048576u});
    v.param(experts, "experts", "routed experts E", Required{}, Min{1u}, Max{65536u});
    v.param(top_k, "top_k", "experts per token", Required{}, Min{1u}, Max{1024u});
    v.param(shared_experts, "shared_experts", "always-active shared experts", Default{0u},
            Max{64u});
    v.param(shared_intermediate_size, "shared_intermediate_size",
            "intermediate dimension of each shared expert (0 when there are none)", Default{0u},
            Max{1048576u});
    v.section(gating, "gating", "router scoring and top-k selection");
    v.param(activation, "activation", "expert MLP activation", Required{});
    v.param(activation_limit, "activation_limit",
            "clamp limit of swiglu_oai (gpt-oss swiglu_limit; 0 = none)", Default{0.0},
            Min{0.0}, Max{1e6});
    v.section(layers, "layers", "layer counts of the whole model (descriptive)");
  }
};

void check(const ModelSpec& m, config::Checker& c);

}  // namespace tdmsim
