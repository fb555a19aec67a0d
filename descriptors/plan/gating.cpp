#include "descriptors/plan/gating.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numeric>
#include <vector>

namespace tdmsim::plan {
namespace {

// Strict "a ranks before b": higher score first, equal scores by lower index,
// so every selection below is deterministic whatever the sort algorithm.
struct RanksBefore {
  const std::vector<double>& score;
  bool operator()(std::uint32_t a, std::uint32_t b) const {
    if (score[a] != score[b]) return score[a] > score[b];
    return a < b;
  }
};

// Which experts survive grouped top-k: DeepSeek-V3 (noaux_tc, with a
// correction bias) scores a group by the sum of its two best selection
// scores; without a bias (DeepSeek-V2 group_limited_greedy) by its best one.
std::vector<char> kept_experts(const Gate& gate, const std::vector<double>& select, bool biased) {
  const auto experts = static_cast<std::uint32_t>(select.size());
  std::vector<char> kept(experts, 1);
  if (gate.n_group <= 1 || gate.topk_group >= gate.n_group) return kept;
  assert(experts % gate.n_group == 0);
  const std::uint32_t group_size = experts / gate.n_group;
  std::vector<double> group_score(gate.n_group);
  for (std::uint32_t g = 0; g < gate.n_group; ++g) {
    double best = -INFINITY;
    double second = -INFINITY;
    for (std::uint32_t i = 0; i < group_size; ++i) {
      const double s = select[g * group_size + i];
      if (s > best) {
        second = best;
        best = s;
      } else if (s > second) {
        second = s;
      }
    }
    // A one-expert group has no second score: its best alone counts.
    group_score[g] = biased && group_size > 1 ? best + second : best;
  }
  std::vector<std::uint32_t> groups(gate.n_group);
  std::iota(groups.begin(), groups.end(), 0u);
  std::partial_sort(groups.begin(), groups.begin() + gate.topk_group, groups.end(),
                    RanksBefore{group_score});
  std::fill(kept.begin(), kept.end(), 0);
  for (std::uint32_t i = 0; i < gate.topk_group; ++i) {
    const std::uint32_t g = groups[i];
    std::fill(kept.begin() + g * group_size, kept.begin() + (g + 1) * group_size, 1);
  }
  return kept;
}

}  // namespace

Gate Gate::from_model(const ModelSpec& model) {
  Gate g;
  g.scoring = model.gating.scoring;
  g.renormalize = model.gating.renormalize;
  g.top_k = model.top_k;
  g.n_group = model.gating.n_group;
  g.topk_group = model.gating.topk_group;
  g.routed_scaling = model.gating.routed_scaling;
  return g;
}

void score_logits(Scoring scoring, std::span<const float> logits, std::span<double> scores) {
  assert(scores.size() == logits.size());
  if (scoring == Scoring::sigmoid) {
    for (std::size_t e = 0; e < logits.size(); ++e) {
      scores[e] = 1.0 / (1.0 + std::exp(-static_cast<double>(logits[e])));
    }
    return;
  }
  // Max-subtracted softmax: exp never overflows; the sum runs in expert order.
  double max_logit = -INFINITY;
  for (const float l : logits) max_logit = std::max(max_logit, static_cast<double>(l));
  double sum = 0.0;
  for (std::size_t e = 0; e < logits.size(); ++e) {
    scores[e] = std::exp(static_cast<double>(logits[e]) - max_logit);
    sum += scores[e];
  }
  for (double& s : scores) s /= sum;
}

void finish_weights(const Gate& gate, std::span<const double> scores, std::span<float> weights) {
  assert(scores.size() == weights.size());
  double sum = 0.0;
  for (const double s : scores) sum += s;
  // A zero sum (every score underflowed) has no meaningful renormalisation;
  // the weights then stay the (zero) scores rather than becoming NaN.
  const bool renormalize = gate.renormalize && sum > 0.0;
  for (std::size_t j = 0; j < scores.size(); ++j) {
    const double w = renormalize ? scores[j] / sum : scores[j];
    weights[j] = static_cast<float>(w * gate.routed_scaling);
  }
}

void gate_token(const Gate& gate, std::span<const float> logits,
                std::span<const float> correction_bias, std::span<std::uint32_t> ids,
                std::span<float> weights) {
  const auto experts = static_cast<std::uint32_t>(logits.size());
  assert(gate.top_k >= 1 && gate.top_k <= experts);
  assert(ids.size() == gate.top_k && weights.size() == gate.top_k);
  assert(correction_bias.empty() || correction_bias.size() == experts);

  std::vector<double> scores(experts);
  score_logits(gate.scoring, logits, scores);
  const bool biased = !correction_bias.empty();
  std::vector<double> select = scores;
  if (biased) {
    for (std::uint32_t e = 0; e < experts; ++e) select[e] += correction_bias[e];
  }

  const std::vector<char> kept = kept_experts(gate, select, biased);
  std::vector<std::uint32_t> candidates;
  candidates.reserve(experts);
  for (std::uint32_t e = 0; e < experts; ++e) {
    if (kept[e]) candidates.push_back(e);
  }
  assert(candidates.size() >= gate.top_k);
  std::partial_sort(candidates.begin(), candidates.begin() + gate.top_k, candidates.end(),
                    RanksBefore{select});

  std::vector<double> chosen(gate.top_k);
  for (std::uint32_t j = 0; j < gate.top_k; ++j) {
    ids[j] = candidates[j];
    chosen[j] = scores[candidates[j]];  // unbiased: the bias only selects
  }
  finish_weights(gate, chosen, weights);
}

}  // namespace tdmsim::plan
