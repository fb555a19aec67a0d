// Synthetic routing sources: uniform, Zipf(s), log-normal per-expert load and
// a fixed hot-expert set. Each token draws top_k DISTINCT experts; all
// randomness is counter-based (routing_draw stream), so a token's draws depend
// only on (seed, token) and never on threads or on other tokens.
#include "descriptors/plan/routing.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numbers>
#include <numeric>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

namespace tdmsim::plan {
namespace {

bool contains(std::span<const std::uint32_t> chosen, std::uint32_t e) {
  return std::find(chosen.begin(), chosen.end(), e) != chosen.end();
}

// Draws one expert not in `chosen` with probability proportional to its
// popularity. Rejection of repeats from the full distribution IS the
// conditional distribution; after kPickAttempts repeats an exact scan over
// the remaining mass finishes the draw (needed when few experts carry most
// of the mass, e.g. a steep Zipf).
std::uint32_t draw_weighted(const std::vector<double>& popularity, const std::vector<double>& cdf,
                            std::span<const std::uint32_t> chosen, std::uint64_t seed,
                            std::uint64_t pick) {
  const double total = cdf.back();
  const auto experts = static_cast<std::uint32_t>(cdf.size());
  for (std::uint64_t a = 0; a < kPickAttempts; ++a) {
    const double target = draw_unit(seed, DrawPart::pick, pick * kPickStride + a) * total;
    const auto it = std::upper_bound(cdf.begin(), cdf.end(), target);
    const auto e = static_cast<std::uint32_t>(
        std::min<std::ptrdiff_t>(it - cdf.begin(), std::ptrdiff_t(experts) - 1));
    if (!contains(chosen, e)) return e;
  }
  double remaining = 0.0;
  for (std::uint32_t e = 0; e < experts; ++e) {
    if (!contains(chosen, e)) remaining += popularity[e];
  }
  double target = draw_unit(seed, DrawPart::pick, pick * kPickStride + kPickAttempts) * remaining;
  std::uint32_t last = experts;
  for (std::uint32_t e = 0; e < experts; ++e) {
    if (contains(chosen, e)) continue;
    if (popularity[e] > 0.0) last = e;
    if (popularity[e] > 0.0 && target < popularity[e]) return e;
    target -= popularity[e];
  }
  if (last != experts) return last;  // rounding left the target just past the end
  // Only zero-popularity experts remain: take the lowest-numbered one.
  for (std::uint32_t e = 0; e < experts; ++e) {
    if (!contains(chosen, e)) return e;
  }
  assert(false && "more picks than experts");
  return 0;
}

// Uniform draw of a member of `set` not in `chosen`; `set.size()` must exceed
// the members already chosen. Same rejection-then-exact scheme as above.
std::uint32_t draw_from_set(std::span<const std::uint32_t> set,
                            std::span<const std::uint32_t> chosen, std::uint64_t seed,
                            std::uint64_t pick) {
  const auto n = static_cast<double>(set.size());
  for (std::uint64_t a = 0; a < kPickAttempts; ++a) {
    const auto i = static_cast<std::size_t>(draw_unit(seed, DrawPart::pick, pick * kPickStride + a) * n);
    const std::uint32_t e = set[std::min(i, set.size() - 1)];
    if (!contains(chosen, e)) return e;
  }
  std::size_t free_members = 0;
  for (const std::uint32_t e : set) free_members += contains(chosen, e) ? 0 : 1;
  auto r = static_cast<std::size_t>(
      draw_unit(seed, DrawPart::pick, pick * kPickStride + kPickAttempts) *
      static_cast<double>(free_members));
  r = std::min(r, free_members - 1);
  for (const std::uint32_t e : set) {
    if (contains(chosen, e)) continue;
    if (r == 0) return e;
    --r;
  }
  assert(false && "set exhausted");
  return set.front();
}

std::size_t free_in(std::span<const std::uint32_t> set, std::span<const std::uint32_t> chosen) {
  std::size_t n = 0;
  for (const std::uint32_t e : set) n += contains(chosen, e) ? 0 : 1;
  return n;
}

}  // namespace

std::vector<double> expert_popularity(const RoutingSpec& spec, std::uint32_t experts,
                                      std::uint64_t seed) {
  std::vector<double> p(experts, 1.0);
  if (spec.source == RoutingSource::zipf) {
    // Rank experts by a seeded key so the popular ones are not always 0, 1, ...
    std::vector<std::uint32_t> order(experts);
    std::iota(order.begin(), order.end(), 0u);
    const auto key = [seed](std::uint32_t e) {
      return tensor_bits(seed, TensorId::routing_draw,
                         static_cast<std::uint64_t>(DrawPart::permutation), e);
    };
    std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
      const auto ka = key(a);
      const auto kb = key(b);
      return ka != kb ? ka < kb : a < b;
    });
    for (std::uint32_t rank = 0; rank < experts; ++rank) {
      p[order[rank]] = std::pow(static_cast<double>(rank + 1), -spec.zipf_s);
    }
  } else if (spec.source == RoutingSource::lognormal) {
    for (std::uint32_t e = 0; e < experts; ++e) {
      // Box-Muller; 1 - u lies in (0, 1], so the log is finite.
      const double u1 = 1.0 - draw_unit(seed, DrawPart::lognormal, 2 * std::uint64_t(e));
      const double u2 = draw_unit(seed, DrawPart::lognormal, 2 * std::uint64_t(e) + 1);
      const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
      p[e] = std::exp(spec.lognormal_sigma * z);
    }
  }
  return p;
}

namespace {

// The scores of a token's k chosen experts under the synthetic weight model
// (below), in `score`; returns the softmax denominator (1 for sigmoid).
double synthetic_scores(const Gate& gate, std::uint32_t experts, std::uint64_t seed,
                        std::uint32_t token, std::span<double> score) {
  const auto k = static_cast<std::uint32_t>(score.size());
  // The chosen experts get logits uniform in [0, 2); the experts not chosen
  // are taken to lie uniformly in [-2, 0), entering a softmax denominator by
  // their expected exp, (1 - e^-2) / 2 each. That gives no-renormalisation
  // models (OLMoE, Qwen2) realistic weight sums without E draws per token.
  std::vector<double> logit(k);
  for (std::uint32_t j = 0; j < k; ++j) {
    logit[j] = 2.0 * draw_unit(seed, DrawPart::logits, std::uint64_t(token) * k + j);
  }
  if (gate.scoring == Scoring::sigmoid) {
    for (std::uint32_t j = 0; j < k; ++j) score[j] = 1.0 / (1.0 + std::exp(-logit[j]));
    return 1.0;
  }
  const double rest_mass = (1.0 - std::exp(-2.0)) / 2.0;
  double sum = static_cast<double>(experts - k) * rest_mass;
  for (std::uint32_t j = 0; j < k; ++j) {
    score[j] = std::exp(logit[j]);
    sum += score[j];
  }
  for (double& v : score) v /= sum;
  return sum;
}

// overflow: reroute for the synthetic sources: a token's next-best expert is
// its next draw from the source, among the experts it does not hold that have
// room (popularity-weighted; hot: the hot set with probability hot_fraction,
// falling back to the other set). An expert not chosen has a logit uniform in
// [-2, 0) in the weight model, so the new expert draws one there; its score
// goes on the token's original scale (softmax: the token's denominator;
// renormalising models: divided by the sum of the original picks' scores),
// then routed_scaling, so the kept picks keep their weights unchanged.
class SyntheticRanking final : public RerouteRanking {
 public:
  SyntheticRanking(const ModelSpec& model, const RoutingSpec& spec, std::uint64_t seed)
      : gate_(Gate::from_model(model)),
        experts_(model.experts),
        seed_(seed),
        hot_(spec.source == RoutingSource::hot),
        hot_fraction_(spec.hot_fraction) {
    if (hot_) {
      is_hot_.assign(experts_, 0);
      for (const std::uint32_t e : spec.hot_experts) {
        if (e < experts_) is_hot_[e] = 1;
      }
    } else {
      popularity_ = expert_popularity(spec, experts_, seed);
      cdf_.resize(experts_);
      std::partial_sum(popularity_.begin(), popularity_.end(), cdf_.begin());
    }
  }

  Choice next(std::uint32_t token, std::uint32_t j, std::span<const std::uint32_t> held,
              std::span<const std::uint32_t> load, std::uint32_t capacity) const override {
    const std::uint32_t k = gate_.top_k;
    const std::uint64_t pick = std::uint64_t(token) * k + j;
    const auto open = [&](std::uint32_t e) { return load[e] < capacity && !contains(held, e); };
    Choice c;
    c.expert = hot_ ? next_hot(pick, open) : next_weighted(pick, open);
    if (c.expert == kDroppedPick) return c;
    std::vector<double> score(k);
    const double denominator = synthetic_scores(gate_, experts_, seed_, token, score);
    const double logit = -2.0 + 2.0 * draw_unit(seed_, DrawPart::reroute_logit, pick);
    const double s = gate_.scoring == Scoring::sigmoid ? 1.0 / (1.0 + std::exp(-logit))
                                                       : std::exp(logit) / denominator;
    double sum = 0.0;
    for (const double v : score) sum += v;
    // finish_weights' arithmetic, for one more expert on the same scale.
    const double w = gate_.renormalize && sum > 0.0 ? s / sum : s;
    c.weight = static_cast<float>(w * gate_.routed_scaling);
    return c;
  }

 private:
  // Popularity-weighted among the open experts: rejection from the full
  // distribution first (cheap while most mass is open), then an exact scan.
  template <class Open>
  std::uint32_t next_weighted(std::uint64_t pick, const Open& open) const {
    const double total = cdf_.back();
    for (std::uint64_t a = 0; a < kPickAttempts; ++a) {
      const double target = draw_unit(seed_, DrawPart::reroute_pick, pick * kPickStride + a) * total;
      const auto it = std::upper_bound(cdf_.begin(), cdf_.end(), target);
      const auto e = static_cast<std::uint32_t>(
          std::min<std::ptrdiff_t>(it - cdf_.begin(), std::ptrdiff_t(experts_) - 1));
      if (popularity_[e] > 0.0 && open(e)) return e;
    }
    double remaining = 0.0;
    std::uint32_t any = kDroppedPick;
    for (std::uint32_t e = 0; e < experts_; ++e) {
      if (!open(e)) continue;
      remaining += popularity_[e];
      if (any == kDroppedPick) any = e;
    }
    if (!(remaining > 0.0)) return any;  // only zero-popularity experts (or none) are open
    double target =
        draw_unit(seed_, DrawPart::reroute_pick, pick * kPickStride + kPickAttempts) * remaining;
    std::uint32_t last = any;
    for (std::uint32_t e = 0; e < experts_; ++e) {
      if (!open(e) || popularity_[e] <= 0.0) continue;
      last = e;
      if (target < popularity_[e]) return e;
      target -= popularity_[e];
    }
    return last;  // rounding left the target just past the end
  }

  // Uniform within the hot set (with probability hot_fraction) or the rest,
  // among its open members; the other set if this one has none open.
  template <class Open>
  std::uint32_t next_hot(std::uint64_t pick, const Open& open) const {
    const bool want_hot = draw_unit(seed_, DrawPart::reroute_coin, pick) < hot_fraction_;
    const double u = draw_unit(seed_, DrawPart::reroute_pick, pick * kPickStride);
    for (const bool hot : {want_hot, !want_hot}) {
      std::uint64_t n = 0;
      for (std::uint32_t e = 0; e < experts_; ++e) n += (is_hot_[e] != 0) == hot && open(e) ? 1 : 0;
      if (n == 0) continue;
      auto r = std::min<std::uint64_t>(static_cast<std::uint64_t>(u * static_cast<double>(n)), n - 1);
      for (std::uint32_t e = 0; e < experts_; ++e) {
        if ((is_hot_[e] != 0) != hot || !open(e)) continue;
        if (r == 0) return e;
        --r;
      }
    }
    return kDroppedPick;
  }

  Gate gate_;
  std::uint32_t experts_;
  std::uint64_t seed_;
  bool hot_;
  double hot_fraction_;
  std::vector<char> is_hot_;
  std::vector<double> popularity_;
  std::vector<double> cdf_;
};

}  // namespace

void synthetic_weights(const Gate& gate, std::uint32_t experts, std::uint64_t seed,
                       std::uint32_t token, std::span<float> weights) {
  std::vector<double> score(weights.size());
  synthetic_scores(gate, experts, seed, token, score);
  finish_weights(gate, score, weights);
}

std::unique_ptr<RerouteRanking> synthetic_ranking(const ModelSpec& model, const RoutingSpec& spec,
                                                  std::uint64_t seed) {
  return std::make_unique<SyntheticRanking>(model, spec, seed);
}

Routing route_synthetic(const ModelSpec& model, const RoutingSpec& spec, std::uint32_t tokens,
                        std::uint64_t seed) {
  const std::uint32_t experts = model.experts;
  const std::uint32_t k = model.top_k;
  assert(k <= experts);
  const Gate gate = Gate::from_model(model);
  const bool hot = spec.source == RoutingSource::hot;

  std::vector<double> popularity;
  std::vector<double> cdf;
  std::vector<std::uint32_t> hot_set;
  std::vector<std::uint32_t> rest_set;
  if (hot) {
    std::vector<char> is_hot(experts, 0);
    for (const std::uint32_t e : spec.hot_experts) {
      if (e < experts) is_hot[e] = 1;
    }
    for (std::uint32_t e = 0; e < experts; ++e) (is_hot[e] ? hot_set : rest_set).push_back(e);
  } else {
    popularity = expert_popularity(spec, experts, seed);
    cdf.resize(experts);
    std::partial_sum(popularity.begin(), popularity.end(), cdf.begin());
  }

  Routing r;
  r.ids.resize(std::size_t(tokens) * k);
  r.weights.resize(std::size_t(tokens) * k);
  tbb::parallel_for(tbb::blocked_range<std::uint32_t>(0, tokens),
                    [&](const tbb::blocked_range<std::uint32_t>& range) {
    for (std::uint32_t t = range.begin(); t != range.end(); ++t) {
      const std::span<std::uint32_t> ids = std::span(r.ids).subspan(std::size_t(t) * k, k);
      for (std::uint32_t j = 0; j < k; ++j) {
        const std::uint64_t pick = std::uint64_t(t) * k + j;
        const std::span<const std::uint32_t> chosen = ids.first(j);
        if (!hot) {
          ids[j] = draw_weighted(popularity, cdf, chosen, seed, pick);
          continue;
        }
        // hot_fraction of the picks go to the hot set; a set with every
        // member already chosen by this token passes the pick to the other.
        const bool want_hot = draw_unit(seed, DrawPart::hot_coin, pick) < spec.hot_fraction;
        const bool use_hot = want_hot ? free_in(hot_set, chosen) > 0
                                      : free_in(rest_set, chosen) == 0;
        ids[j] = draw_from_set(use_hot ? hot_set : rest_set, chosen, seed, pick);
      }
      synthetic_weights(gate, experts, seed, t, std::span(r.weights).subspan(std::size_t(t) * k, k));
    }
  });
  return r;
}

}  // namespace tdmsim::plan
