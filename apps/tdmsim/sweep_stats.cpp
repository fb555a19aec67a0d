#include "apps/tdmsim/sweep_stats.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace tdmsim::cli {

using config::Json;

double student_t_975(std::uint64_t df) {
  const double nu = static_cast<double>(std::max<std::uint64_t>(df, 1));
  const double c = std::exp(std::lgamma((nu + 1) / 2) - std::lgamma(nu / 2) - 0.5 * std::log(nu * std::numbers::pi));
  const auto density = [&](double x) { return c * std::pow(1 + x * x / nu, -(nu + 1) / 2); };
  // P(0 < T < x), Simpson's rule on 4096 intervals (the density is smooth and
  // the quantile lies below 13, so the error is far below 1e-9).
  const auto mass = [&](double x) {
    constexpr int n = 4096;
    const double h = x / n;
    double s = density(0) + density(x);
    for (int i = 1; i < n; ++i) s += (i % 2 == 1 ? 4 : 2) * density(i * h);
    return s * h / 3;
  };
  double lo = 0, hi = 64;  // t(0.975, 1) = 12.7 is the largest
  for (int i = 0; i < 60; ++i) {
    const double mid = (lo + hi) / 2;
    (mass(mid) < 0.475 ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

Json MeanCi::to_json() const {
  return {{"n", n}, {"mean", mean}, {"sd", sd}, {"ci95_low", low}, {"ci95_high", high}};
}

MeanCi mean_ci95(const std::vector<double>& v) {
  MeanCi r;
  r.n = v.size();
  if (v.empty()) return r;
  double sum = 0;
  for (double x : v) sum += x;
  r.mean = sum / static_cast<double>(r.n);
  r.low = r.high = r.mean;
  if (r.n < 2) return r;
  double sq = 0;
  for (double x : v) sq += (x - r.mean) * (x - r.mean);
  r.sd = std::sqrt(sq / static_cast<double>(r.n - 1));
  const double half = student_t_975(r.n - 1) * r.sd / std::sqrt(static_cast<double>(r.n));
  r.low = r.mean - half;
  r.high = r.mean + half;
  return r;
}

Json mean_of(const std::vector<const Json*>& draws) {
  if (draws.empty()) return nullptr;
  const Json& first = *draws.front();
  const bool all_equal = std::all_of(draws.begin(), draws.end(), [&](const Json* d) { return *d == first; });
  if (all_equal) return first;
  const auto same_kind = [&](auto pred) {
    return std::all_of(draws.begin(), draws.end(), [&](const Json* d) { return pred(*d); });
  };
  if (same_kind([](const Json& j) { return j.is_number(); })) {
    double sum = 0;
    for (const Json* d : draws) sum += d->get<double>();
    return sum / static_cast<double>(draws.size());
  }
  if (first.is_object() && same_kind([&](const Json& j) { return j.is_object() && j.size() == first.size(); })) {
    Json out = Json::object();
    for (const auto& [k, v] : first.items()) {
      std::vector<const Json*> sub;
      for (const Json* d : draws) {
        if (!d->contains(k)) return first;
        sub.push_back(&(*d)[k]);
      }
      out[k] = mean_of(sub);
    }
    return out;
  }
  if (first.is_array() && same_kind([&](const Json& j) { return j.is_array() && j.size() == first.size(); })) {
    Json out = Json::array();
    for (std::size_t i = 0; i < first.size(); ++i) {
      std::vector<const Json*> sub;
      for (const Json* d : draws) sub.push_back(&(*d)[i]);
      out.push_back(mean_of(sub));
    }
    return out;
  }
  return first;
}

Json merge_draws(const std::vector<Json>& draws) {
  Json out = draws.at(0);
  const std::size_t n_paths = out.at("paths").size();
  std::vector<const Json*> layers;
  for (const auto& d : draws) layers.push_back(&d.at("layer"));
  out["layer"] = mean_of(layers);
  Json seeds = Json::array(), totals = Json::array(), per_draw = Json::array();
  std::vector<double> speedup;
  std::ptrdiff_t sw = -1, tdm = -1;
  for (std::size_t i = 0; i < n_paths; ++i) {
    const auto path = out["paths"][i].at("path").get<std::string>();
    if (path == "software") sw = static_cast<std::ptrdiff_t>(i);
    if (path == "tdm") tdm = static_cast<std::ptrdiff_t>(i);
  }
  for (std::size_t r = 0; r < draws.size(); ++r) {
    const Json& d = draws[r];
    seeds.push_back(d.at("seed"));
    per_draw.push_back({{"draw", r}, {"seed", d.at("seed")}, {"layer", d.at("layer")}, {"paths", d.at("paths")}});
    if (sw >= 0 && tdm >= 0) {
      speedup.push_back(d["paths"][sw].at("total_us").get<double>() / d["paths"][tdm].at("total_us").get<double>());
    }
  }
  for (std::size_t i = 0; i < n_paths; ++i) {
    std::vector<const Json*> metrics;
    std::vector<double> t;
    for (const auto& d : draws) {
      metrics.push_back(&d.at("paths").at(i));
      t.push_back(d["paths"][i].at("total_us").get<double>());
    }
    out["paths"][i] = mean_of(metrics);
    totals.push_back(mean_ci95(t).to_json());
  }
  out["repeat"] = {{"n", draws.size()},
                   {"seeds", seeds},
                   {"total_us", totals},
                   {"tdm_speedup", speedup.empty() ? Json() : mean_ci95(speedup).to_json()}};
  out["draws"] = per_draw;
  return out;
}

}  // namespace tdmsim::cli
