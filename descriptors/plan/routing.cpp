// The router source (real router math) and the dispatch over sources.
#include "descriptors/plan/routing.h"

#include <algorithm>
#include <memory>
#include <sstream>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "descriptors/plan/capacity.h"
#include "descriptors/plan/router_accumulate.h"
#include "descriptors/plan/tensor_fill.h"
#include "workloads/util/input_file.h"

namespace tdmsim::plan {

std::vector<float> router_logits(const ModelSpec& model, std::uint32_t tokens,
                                 std::uint64_t seed) {
  const std::uint32_t experts = model.experts;
  const std::uint32_t hidden = model.hidden_size;
  // W^T [h][e] as float: the multiply-adds then run over experts with unit
  // stride (router_accumulate.h), while each expert's sum still accumulates
  // in increasing h, the documented order. Filled row by row of W^T so the
  // writes are sequential.
  const float scale = router_weight_scale(hidden);
  const FillIsa fill = fill_isa_best();
  // (router_weight_value(seed, hidden, scale, e, h) is element e * hidden + h
  // of the router_weight tensor: row h of W^T is every hidden-th element.)
  const auto fill_wt = [&](std::uint32_t h0, std::uint32_t rows, float* out) {
    for (std::uint32_t h = h0; h < h0 + rows; ++h) {
      tensor_fill(fill, seed, TensorId::router_weight, 0, h, hidden, experts, scale, &out[std::size_t(h - h0) * experts]);
    }
  };
  std::vector<double> bias(experts, 0.0);
  if (model.gating.router_bias) {
    for (std::uint32_t e = 0; e < experts; ++e) bias[e] = router_bias_value(seed, e);
  }
  std::vector<float> logits(std::size_t(tokens) * experts);
  // Tokens are independent and each one's arithmetic is fixed, so splitting
  // them over threads (or over vector lanes) cannot change a bit. A block of
  // tokens walks W^T (7 MiB for DeepSeek-V3, beyond the host's L2) in slices
  // of kRows rows, each slice staying in cache while every token of the block
  // passes over it; each (token, expert) sum still runs over h in increasing
  // order. The grain keeps small batches on one thread: a second one would
  // cost more CPU time in hand-over than it saves.
  constexpr std::uint32_t kTokenBlock = 64, kRows = 256, kGrain = 64;
  const RouterIsa isa = router_isa_best();
  // Tokens [t0, t0 + nt) (nt <= kTokenBlock), W^T's rows [h0, h0 + rows) at
  // wt_rows(h0, rows); acc and x are the block's buffers.
  const auto route_block = [&](std::uint32_t t0, std::uint32_t nt, const auto& wt_rows, std::vector<double>& acc,
                               std::vector<float>& x) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (std::uint32_t h0 = 0; h0 < hidden; h0 += kRows) {
      const std::uint32_t rows = std::min(kRows, hidden - h0);
      for (std::uint32_t j = 0; j < nt; ++j) {
        // activation_value(seed, hidden, t, h): element t * hidden + h.
        tensor_fill(fill, seed, TensorId::activations, 0, std::uint64_t(t0 + j) * hidden + h0, 1, rows, 1.0f,
                    &x[std::size_t(j) * kRows]);
      }
      router_accumulate(isa, wt_rows(h0, rows), rows, experts, x.data(), kRows, nt, acc.data());
    }
    for (std::uint32_t j = 0; j < nt; ++j) {
      float* out = &logits[std::size_t(t0 + j) * experts];
      const double* a = &acc[std::size_t(j) * experts];
      for (std::uint32_t e = 0; e < experts; ++e) out[e] = static_cast<float>(a[e] + bias[e]);
    }
  };
  if (tokens == 0) return logits;
  if (tokens <= kTokenBlock) {
    // One block (a decode batch): each slice of W^T is filled just before
    // the block passes over it, into one buffer that stays in cache, on this
    // thread; no whole W^T, no worker threads.
    std::unique_ptr<float[]> slice(new float[std::size_t(kRows) * experts]);
    std::vector<double> acc(std::size_t(tokens) * experts);
    std::vector<float> x(std::size_t(kTokenBlock) * kRows);
    route_block(0, tokens, [&](std::uint32_t h0, std::uint32_t rows) {
      fill_wt(h0, rows, slice.get());
      return static_cast<const float*>(slice.get());
    }, acc, x);
    return logits;
  }
  // Every block passes over all of W^T: filled once (left uninitialised
  // until then, each element written once).
  std::unique_ptr<float[]> wt(new float[std::size_t(hidden) * experts]);
  fill_wt(0, hidden, wt.get());
  const auto wt_rows = [&](std::uint32_t h0, std::uint32_t) {
    return static_cast<const float*>(&wt[std::size_t(h0) * experts]);
  };
  tbb::parallel_for(tbb::blocked_range<std::uint32_t>(0, tokens, kGrain),
                    [&](const tbb::blocked_range<std::uint32_t>& range) {
    std::vector<double> block_acc(std::size_t(kTokenBlock) * experts);
    std::vector<float> block_x(std::size_t(kTokenBlock) * kRows);
    for (std::uint32_t t0 = range.begin(); t0 < range.end(); t0 += kTokenBlock) {
      const std::uint32_t nt = std::min(kTokenBlock, range.end() - t0);
      route_block(t0, nt, wt_rows, block_acc, block_x);
    }
  });
  return logits;
}

namespace {

std::vector<float> correction_bias(const ModelSpec& model, std::uint64_t seed) {
  std::vector<float> correction;
  if (model.gating.correction_bias) {
    correction.resize(model.experts);
    for (std::uint32_t e = 0; e < model.experts; ++e) correction[e] = correction_bias_value(seed, e);
  }
  return correction;
}

// The router's own ranking for overflow: reroute: the expert with the next
// highest selection score (score + correction bias; the grouped top-k's group
// limit is not applied, as it only narrows the first choices), weighted with
// its unbiased score on the token's original scale: divided by the sum of
// the token's original picks' scores when the model renormalises, then
// routed_scaling, so the token's kept picks keep their weights unchanged.
class RouterRanking final : public RerouteRanking {
 public:
  RouterRanking(const ModelSpec& model, const std::vector<float>& logits, std::uint64_t seed,
                std::vector<std::uint32_t> original)
      : gate_(Gate::from_model(model)),
        experts_(model.experts),
        logits_(logits),
        correction_(correction_bias(model, seed)),
        original_(std::move(original)) {}

  Choice next(std::uint32_t token, std::uint32_t, std::span<const std::uint32_t> held,
              std::span<const std::uint32_t> load, std::uint32_t capacity) const override {
    std::vector<double> scores(experts_);
    score_logits(gate_.scoring, std::span(logits_).subspan(std::size_t(token) * experts_, experts_),
                 scores);
    Choice c;
    double best = 0.0;
    for (std::uint32_t e = 0; e < experts_; ++e) {
      if (load[e] >= capacity || std::find(held.begin(), held.end(), e) != held.end()) continue;
      const double select = correction_.empty() ? scores[e] : scores[e] + correction_[e];
      // Strictly greater: equal scores go to the lower expert id, as in gating.
      if (c.expert == kDroppedPick || select > best) {
        c.expert = e;
        best = select;
      }
    }
    if (c.expert == kDroppedPick) return c;
    double sum = 0.0;
    for (std::uint32_t j = 0; j < gate_.top_k; ++j) {
      sum += scores[original_[std::size_t(token) * gate_.top_k + j]];
    }
    // finish_weights' arithmetic, for one more expert on the same scale.
    const double w = gate_.renormalize && sum > 0.0 ? scores[c.expert] / sum : scores[c.expert];
    c.weight = static_cast<float>(w * gate_.routed_scaling);
    return c;
  }

 private:
  Gate gate_;
  std::uint32_t experts_;
  const std::vector<float>& logits_;
  std::vector<float> correction_;
  std::vector<std::uint32_t> original_;
};

Routing gate_tokens(const ModelSpec& model, const std::vector<float>& logits, std::uint32_t tokens,
                    std::uint64_t seed) {
  const Gate gate = Gate::from_model(model);
  const std::uint32_t experts = model.experts;
  const std::uint32_t k = model.top_k;
  const std::vector<float> correction = correction_bias(model, seed);
  Routing r;
  r.ids.resize(std::size_t(tokens) * k);
  r.weights.resize(std::size_t(tokens) * k);
  // (A few microseconds a token: in chunks of 256, so a decode batch stays on
  // one thread and wakes no other.)
  tbb::parallel_for(tbb::blocked_range<std::uint32_t>(0, tokens, 256),
                    [&](const tbb::blocked_range<std::uint32_t>& range) {
    for (std::uint32_t t = range.begin(); t != range.end(); ++t) {
      gate_token(gate, std::span(logits).subspan(std::size_t(t) * experts, experts), correction,
                 std::span(r.ids).subspan(std::size_t(t) * k, k),
                 std::span(r.weights).subspan(std::size_t(t) * k, k));
    }
  });
  return r;
}

}  // namespace

Routing route_router(const ModelSpec& model, std::uint32_t tokens, std::uint64_t seed) {
  return gate_tokens(model, router_logits(model, tokens, seed), tokens, seed);
}

std::filesystem::path trace_path(const config::ResolvedScenario& scenario) {
  return config::routing_trace_path(scenario.scenario);
}

Routing load_trace(const config::ResolvedScenario& scenario) {
  const std::filesystem::path path = trace_path(scenario);
  std::string text;
  try {
    text = util::read_input_file(path, util::InputKind::routing_trace);
  } catch (const util::InputFileError& e) {
    const config::Location fallback{scenario.scenario.file.string(), 0, 0};
    const config::Location where =
        config::nearest_location(scenario.scenario.set_at, "routing.trace", fallback);
    throw config::ConfigError({{where, "routing.trace", "routing trace " + std::string(e.what())}});
  }
  std::istringstream in(std::move(text));
  const ScenarioSpec& s = scenario.scenario.spec;
  return parse_trace(in, path.string(), scenario.model.spec, s.tokens, s.seed);
}

Routing route(const config::ResolvedScenario& scenario, CapacityReport* report) {
  const ScenarioSpec& s = scenario.scenario.spec;
  const ModelSpec& model = scenario.model.spec;
  const RoutingSpec& spec = s.routing;
  const auto capped = [&](Routing r, const RerouteRanking* ranking) {
    const CapacityReport rep = apply_capacity(spec.capacity_factor, spec.overflow, s.tokens,
                                              model.top_k, model.experts, r, ranking);
    if (report) *report = rep;
    return r;
  };
  // Only a reroute needs the source's ranking of the other experts.
  const bool rank = !spec.capacity_factor.none() && spec.overflow == CapacityOverflow::reroute;
  switch (spec.source) {
    case RoutingSource::router: {
      const std::vector<float> logits = router_logits(model, s.tokens, s.seed);
      Routing r = gate_tokens(model, logits, s.tokens, s.seed);
      if (!rank) return capped(std::move(r), nullptr);
      const RouterRanking ranking(model, logits, s.seed, r.ids);
      return capped(std::move(r), &ranking);
    }
    case RoutingSource::trace:
      // (check() refuses reroute with a trace: it ranks no other expert.)
      return capped(load_trace(scenario), nullptr);
    case RoutingSource::uniform:
    case RoutingSource::zipf:
    case RoutingSource::lognormal:
    case RoutingSource::hot: break;
  }
  Routing r = route_synthetic(model, spec, s.tokens, s.seed);
  if (!rank) return capped(std::move(r), nullptr);
  const auto ranking = synthetic_ranking(model, spec, s.seed);
  return capped(std::move(r), ranking.get());
}

}  // namespace tdmsim::plan
