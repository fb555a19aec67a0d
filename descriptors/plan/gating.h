// Gating: one token's router logits -> the top-k expert ids and their routing
// weights, as the model's router computes them (softmax or sigmoid scores, an
// optional selection-only correction bias, grouped or plain top-k,
// renormalisation, routed scaling). See docs/moe-plan.md "Gating".
#pragma once

#include <cstdint>
#include <span>

#include "workloads/specs/model_spec.h"

namespace tdmsim::plan {

// The gating parameters of a model, flattened for the hot loop.
struct Gate {
  Scoring scoring = Scoring::softmax;
  bool renormalize = false;
  std::uint32_t top_k = 1;
  std::uint32_t n_group = 1;     // 1 = ungrouped
  std::uint32_t topk_group = 1;  // groups kept before the final top-k
  double routed_scaling = 1.0;

  static Gate from_model(const ModelSpec& model);
};

// Scores of all experts from their logits, in double: softmax (max-subtracted,
// summed in expert order) or the logistic sigmoid.
void score_logits(Scoring scoring, std::span<const float> logits, std::span<double> scores);

// Routes one token. `logits` has one entry per expert; `correction_bias`
// is either empty or one entry per expert and is added to the scores for
// SELECTION only (the weights stay the unbiased scores, DeepSeek-V3 noaux_tc).
// Writes `gate.top_k` ids in selection order (highest selection score first;
// equal scores: the lower expert id first) and their final weights.
void gate_token(const Gate& gate, std::span<const float> logits,
                std::span<const float> correction_bias, std::span<std::uint32_t> ids,
                std::span<float> weights);

// The final weights of an already chosen set of experts, from their scores:
// renormalised (weights / sum) if the model says so, then scaled by
// routed_scaling. `scores` and `weights` have top_k entries.
void finish_weights(const Gate& gate, std::span<const double> scores, std::span<float> weights);

}  // namespace tdmsim::plan
