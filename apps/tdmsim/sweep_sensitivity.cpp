#include "apps/tdmsim/sweep_sensitivity.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>

#include <fmt/core.h>

#include "apps/tdmsim/csv_field.h"
#include "workloads/util/atomic_write.h"

namespace tdmsim::cli {

using config::Json;

namespace {

// One point's TDM speedup: with draws, the mean of software / tdm per draw
// and its interval; else the ratio of the two rows' times.
struct PointSpeedup {
  double speedup = 0, low = 0, high = 0, software_us = 0, tdm_us = 0;
};

std::map<std::uint64_t, PointSpeedup> speedups(const std::vector<Json>& rows, bool& complete) {
  std::map<std::uint64_t, std::map<std::string, const Json*>> by_point;
  for (const auto& r : rows) by_point[r.at("point").get<std::uint64_t>()][r.at("path").get<std::string>()] = &r;
  std::map<std::uint64_t, PointSpeedup> out;
  complete = true;
  for (const auto& [point, paths] : by_point) {
    if (!paths.contains("software") || !paths.contains("tdm")) {
      complete = false;
      continue;
    }
    const Json& sw = *paths.at("software");
    const Json& tdm = *paths.at("tdm");
    PointSpeedup s;
    s.software_us = sw.at("metrics").at("total_us").get<double>();
    s.tdm_us = tdm.at("metrics").at("total_us").get<double>();
    if (tdm.contains("repeat") && tdm["repeat"].at("tdm_speedup").is_object()) {
      const Json& ci = tdm["repeat"]["tdm_speedup"];
      s.speedup = ci.at("mean").get<double>();
      s.low = ci.at("ci95_low").get<double>();
      s.high = ci.at("ci95_high").get<double>();
    } else {
      s.speedup = s.low = s.high = s.software_us / s.tdm_us;
    }
    out[point] = s;
  }
  return out;
}

Json value_json(const std::string& value, const PointSpeedup& s) {
  return {{"value", value},          {"speedup", s.speedup}, {"ci95_low", s.low},
          {"ci95_high", s.high},     {"software_us", s.software_us}, {"tdm_us", s.tdm_us}};
}

}  // namespace

Json sensitivity_ranking(const SweepSpec& spec, const std::vector<Json>& rows) {
  bool complete = false;
  const auto sp = speedups(rows, complete);
  if (!complete || !sp.contains(0)) return nullptr;
  const PointSpeedup& base = sp.at(0);
  Json params = Json::array();
  // Points follow expand_points' oat order: the base, then each axis's values
  // (the file's, then its jitter values).
  std::uint64_t point = 1;
  double noise = 0;  // the largest distance of a jitter point's speedup from the base's
  Json jitter = Json::array();
  for (const auto& axis : spec.axes.items) {
    Json values = Json::array();
    double lo = base.speedup, hi = base.speedup;
    bool first = true;
    for (std::size_t i = 0; i < axis.values.size(); ++i) {
      const auto it = sp.find(point++);
      if (it == sp.end()) return nullptr;
      if (i >= axis.own_values()) {
        jitter.push_back({{"parameter", axis.key}, {"value", axis.values[i]}, {"speedup", it->second.speedup}});
        noise = std::max(noise, std::abs(it->second.speedup - base.speedup));
        continue;
      }
      values.push_back(value_json(axis.values[i], it->second));
      lo = first ? it->second.speedup : std::min(lo, it->second.speedup);
      hi = first ? it->second.speedup : std::max(hi, it->second.speedup);
      first = false;
    }
    params.push_back({{"parameter", axis.key},
                      {"swing", hi - lo},
                      {"swing_fraction", (hi - lo) / base.speedup},
                      {"min_speedup", lo},
                      {"max_speedup", hi},
                      {"reach", std::max(hi - base.speedup, base.speedup - lo)},
                      {"values", values}});
  }
  const bool jittered = !jitter.empty();
  for (auto& p : params) {
    // A parameter stands out when one of its values moves the speedup farther
    // from the base's than any jitter point does.
    p["beyond_noise"] = jittered ? Json(p["reach"].get<double>() > noise) : Json(nullptr);
  }
  std::vector<std::size_t> order(params.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return params[a]["swing"].get<double>() > params[b]["swing"].get<double>();
  });
  Json ranked = Json::array();
  for (std::size_t r = 0; r < order.size(); ++r) {
    Json p = params[order[r]];
    p["rank"] = r + 1;
    ranked.push_back(std::move(p));
  }
  return {{"sweep", spec.name},
          {"metric", "tdm_speedup"},
          {"metric_definition", "software path time / TDM path time"},
          {"repeat", spec.repeat},
          {"base", value_json("base", base)},
          {"jitter", spec.jitter},
          {"noise_floor", jittered ? Json(noise) : Json(nullptr)},
          {"jitter_points", jitter},
          {"parameters", ranked}};
}

std::string sensitivity_csv(const Json& ranking) {
  std::string out =
      "rank,parameter,base_speedup,low_value,low_speedup,high_value,high_speedup,min_speedup,max_speedup,"
      "swing,swing_fraction,noise_floor,beyond_noise\n";
  const double base = ranking.at("base").at("speedup").get<double>();
  // Empty without a jitter: no noise floor was measured.
  const Json& noise = ranking.at("noise_floor");
  const std::string noise_text = noise.is_null() ? std::string() : fmt::format("{}", noise.get<double>());
  for (const auto& p : ranking.at("parameters")) {
    // low / high: the parameter's first and last values as the sweep lists them.
    const Json& lo = p.at("values").front();
    const Json& hi = p.at("values").back();
    const Json& beyond = p.at("beyond_noise");
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{}\n", p.at("rank").get<std::size_t>(),
                       csv_field(p.at("parameter").get<std::string>()), base,
                       csv_field(lo.at("value").get<std::string>()), lo.at("speedup").get<double>(),
                       csv_field(hi.at("value").get<std::string>()), hi.at("speedup").get<double>(),
                       p.at("min_speedup").get<double>(), p.at("max_speedup").get<double>(),
                       p.at("swing").get<double>(), p.at("swing_fraction").get<double>(), noise_text,
                       beyond.is_null() ? "" : beyond.get<bool>() ? "yes" : "no");
  }
  return out;
}

bool write_sensitivity(const std::filesystem::path& dir, const SweepSpec& spec) {
  std::vector<Json> rows;
  std::ifstream in(dir / "results.jsonl");
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) rows.push_back(Json::parse(line));
  }
  const Json ranking = sensitivity_ranking(spec, rows);
  if (ranking.is_null()) return false;
  util::write_file_atomic(dir / "sensitivity.json", ranking.dump(2) + "\n");
  util::write_file_atomic(dir / "sensitivity.csv", sensitivity_csv(ranking));
  return true;
}

}  // namespace tdmsim::cli
