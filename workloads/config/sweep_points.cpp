#include "workloads/config/sweep_points.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <type_traits>

#include "workloads/config/writer.h"

namespace tdmsim::config {
namespace {

__extension__ typedef unsigned __int128 u128;  // GCC/Clang: exact 64x64-bit products

// SplitMix64 (Steele, Lea, Flood 2014): fixed, tiny, and the same everywhere,
// unlike the standard library's distributions.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) by the multiply-high method (n >= 1).
  std::uint64_t below(std::uint64_t n) {
    return static_cast<std::uint64_t>((static_cast<u128>(next()) * n) >> 64);
  }

 private:
  std::uint64_t state_;
};

std::vector<SweepPoint> grid_points(const SweepAxes& axes, std::uint64_t total) {
  std::vector<SweepPoint> out(total);
  for (std::uint64_t i = 0; i < total; ++i) {
    out[i].index = i;
    out[i].choice.resize(axes.items.size());
    std::uint64_t rest = i;  // last axis fastest
    for (std::size_t a = axes.items.size(); a-- > 0;) {
      const std::uint64_t n = axes.items[a].values.size();
      out[i].choice[a] = static_cast<std::uint32_t>(rest % n);
      rest /= n;
    }
  }
  return out;
}

std::vector<SweepPoint> lhs_points(const SweepAxes& axes, std::uint64_t samples, SplitMix64& rng) {
  std::vector<SweepPoint> out(samples);
  for (std::uint64_t i = 0; i < samples; ++i) {
    out[i].index = i;
    out[i].choice.resize(axes.items.size());
  }
  for (std::size_t a = 0; a < axes.items.size(); ++a) {
    // A random permutation of the strata (Fisher-Yates), then a random position
    // inside each stratum, mapped onto the axis's values with integers only.
    std::vector<std::uint64_t> strata(samples);
    std::iota(strata.begin(), strata.end(), 0);
    for (std::uint64_t i = samples; i > 1; --i) std::swap(strata[i - 1], strata[rng.below(i)]);
    const std::uint64_t n = axes.items[a].values.size();
    for (std::uint64_t i = 0; i < samples; ++i) {
      const u128 u = (static_cast<u128>(strata[i]) << 32) | (rng.next() >> 32);
      const u128 idx = (u * n) / (static_cast<u128>(samples) << 32);
      out[i].choice[a] = static_cast<std::uint32_t>(std::min<u128>(idx, n - 1));
    }
  }
  return out;
}

}  // namespace

const Location& value_location(const SweepAxis& axis, std::uint32_t choice) {
  // An axis left at the base (mode oat) has no value: its key stands for it.
  return choice == kAxisAtBase ? axis.where : axis.value_where.at(choice);
}

namespace {

}  // namespace

std::vector<SweepPoint> expand_points(const SweepSpec& s) {
  const auto& axes = s.axes;
  if (axes.items.empty()) return {};
  // Counted before anything is allocated; the loader's check reports this
  // with the axis lengths, so only a spec built in code gets here.
  const std::uint64_t total = sweep_point_count(s);
  if (total > kMaxSweepPoints) {
    throw std::invalid_argument("sweep " + s.name + " has more than " +
                                std::to_string(kMaxSweepPoints) + " points");
  }
  SplitMix64 rng(s.seed);
  switch (s.mode) {
    case SweepMode::grid: return grid_points(axes, total);
    case SweepMode::zip: {
      std::size_t n = axes.items.front().values.size();
      for (const auto& a : axes.items) n = std::min(n, a.values.size());
      std::vector<SweepPoint> out(n);
      for (std::size_t i = 0; i < n; ++i) {
        out[i].index = i;
        out[i].choice.assign(axes.items.size(), static_cast<std::uint32_t>(i));
      }
      return out;
    }
    case SweepMode::random: {
      std::vector<SweepPoint> out(s.samples);
      for (std::uint64_t i = 0; i < s.samples; ++i) {
        out[i].index = i;
        for (const auto& a : axes.items) {
          out[i].choice.push_back(static_cast<std::uint32_t>(rng.below(a.values.size())));
        }
      }
      return out;
    }
    case SweepMode::lhs: return lhs_points(axes, s.samples, rng);
    case SweepMode::oat: {
      // Point 0 is the base; then each axis's values in turn, the others at the base.
      std::vector<SweepPoint> out(1, SweepPoint{0, std::vector<std::uint32_t>(axes.items.size(), kAxisAtBase)});
      for (std::size_t a = 0; a < axes.items.size(); ++a) {
        for (std::size_t v = 0; v < axes.items[a].values.size(); ++v) {
          SweepPoint pt{out.size(), std::vector<std::uint32_t>(axes.items.size(), kAxisAtBase)};
          pt.choice[a] = static_cast<std::uint32_t>(v);
          out.push_back(std::move(pt));
        }
      }
      return out;
    }
  }
  return {};
}

std::vector<std::pair<std::string, std::string>> point_values(const SweepSpec& s,
                                                               const SweepPoint& p) {
  std::vector<std::pair<std::string, std::string>> out;
  for (std::size_t a = 0; a < s.axes.items.size(); ++a) {
    if (p.choice.at(a) == kAxisAtBase) continue;
    out.emplace_back(s.axes.items[a].key, s.axes.items[a].values.at(p.choice.at(a)));
  }
  return out;
}

std::string point_values_text(const SweepSpec& sweep, const SweepPoint& point) {
  std::string what;
  for (const auto& [k, v] : point_values(sweep, point)) what += (what.empty() ? "" : ", ") + k + "=" + v;
  return what;
}

std::string point_name(const SweepSpec& sweep, const SweepPoint& point) {
  return "point " + std::to_string(point.index) + " (" + point_values_text(sweep, point) + ")";
}

bool jitter_point(const SweepSpec& s, const SweepPoint& p) {
  for (std::size_t a = 0; a < s.axes.items.size(); ++a) {
    const std::uint32_t c = p.choice.at(a);
    if (c != kAxisAtBase && c >= s.axes.items[a].own_values()) return true;
  }
  return false;
}

template <class S>
const Loaded<S>* PointResolver::load_ref(const std::string& ref, SpecKind kind, const Location& at,
                                         const std::string& key, Diagnostics& diags) const {
  auto& cache = [this]() -> auto& {
    if constexpr (std::is_same_v<S, MachineSpec>) return machines_;
    else return models_;
  }();
  for (const auto& [name, loaded] : cache) {
    if (name == ref) return &loaded;
  }
  try {
    const fs::path file = loader_.find(ref, kind, sweep_.sweep.file, at, key);
    if constexpr (std::is_same_v<S, MachineSpec>) cache.emplace_back(ref, loader_.machine(file));
    else cache.emplace_back(ref, loader_.model(file));
    return &cache.back().second;
  } catch (const ConfigError& e) {
    for (const auto& d : e.diagnostics()) {
      // Problems inside the named file keep their own place; a missing file is
      // reported at the axis value.
      diags.add(d.where.file == at.file ? at : d.where, d.where.file == at.file ? key : d.key,
                d.where.file == at.file ? "value '" + ref + "': " + d.message : d.message);
    }
    return nullptr;
  }
}

std::optional<ResolvedPoint> PointResolver::resolve(const SweepPoint& p, Diagnostics& diags) const {
  const auto& axes = sweep_.sweep.spec.axes.items;
  if (p.choice.size() != axes.size()) {
    diags.add({display_path(sweep_.sweep.file), 1, 1}, "axes",
              "point " + std::to_string(p.index) + " has " + std::to_string(p.choice.size()) +
                  " values for " + std::to_string(axes.size()) + " axes");
    return std::nullopt;
  }
  const std::size_t before = diags.size();
  ResolvedPoint r{sweep_.base, {}};
  std::string path_value(enum_name(r.scenario.scenario.spec.path));
  const Location* path_at = nullptr;
  // Calls fn(value, where, key, ref) for each axis at this point's choice;
  // axes whose key does not resolve were rejected when the sweep was read.
  const auto each_axis = [&](auto&& fn) {
    for (std::size_t a = 0; a < axes.size(); ++a) {
      const auto& axis = axes[a];
      const auto ref = axis_ref(axis.key);
      if (!ref || p.choice[a] == kAxisAtBase) continue;
      fn(axis.values.at(p.choice[a]), axis.value_where.at(p.choice[a]), "axes." + axis.key, *ref);
    }
  };
  // Whole machines and models first, so that parameter axes apply on top.
  each_axis([&](const std::string& value, const Location& at, const std::string& key,
                const auto& ref) {
    if (ref.target == AxisTarget::machine) {
      if (const auto* m = load_ref<MachineSpec>(value, SpecKind::machine, at, key, diags)) {
        r.scenario.machine = *m;
        r.scenario.scenario.spec.machine = m->spec.name;
      }
    } else if (ref.target == AxisTarget::model) {
      if (const auto* m = load_ref<ModelSpec>(value, SpecKind::model, at, key, diags)) {
        r.scenario.model = *m;
        r.scenario.scenario.spec.model = m->spec.name;
      }
    } else if (ref.target == AxisTarget::path) {
      if (value != "software" && value != "tdm" && value != "both") {
        diags.add(at, key, "value '" + value + "': " +
                               one_of_message({"software", "tdm", "both"}, value));
      }
      path_value = value;
      path_at = &at;
    }
  });
  each_axis([&](const std::string& value, const Location& at, const std::string& key,
                const auto& ref) {
    switch (ref.target) {
      case AxisTarget::machine_param:
        if (ref.sub.starts_with("tdm.") && !r.scenario.machine.spec.tdm) {
          diags.add(at, key, "value '" + value + "': machine " + r.scenario.machine.spec.name +
                                 " has no tdm: section to change (sweep a TDM machine such as "
                                 "mi500x-tdm)");
          break;
        }
        apply_override(r.scenario.machine.spec, ref.sub, value, at, key, diags);
        break;
      case AxisTarget::model_param:
        apply_override(r.scenario.model.spec, ref.sub, value, at, key, diags);
        break;
      case AxisTarget::scenario_param:
        apply_override(r.scenario.scenario.spec, ref.sub, value, at, key, diags);
        // The sweep file sets the key now: a relative path in it (routing.trace,
        // kernel.config, serving.trace) is relative to the sweep file, as a
        // path is to the file that sets it.
        r.scenario.scenario.set_at[ref.sub] = at;
        break;
      default: break;
    }
  });
  if (diags.size() != before) return std::nullopt;

  const bool has_tdm = r.scenario.machine.spec.tdm.has_value();
  if (path_value == "both") {
    r.paths = has_tdm ? std::vector<std::string>{"software", "tdm"}
                      : std::vector<std::string>{"software"};
  } else if (path_value == "tdm" && !has_tdm) {
    const Location at = path_at != nullptr ? *path_at
                                           : nearest_location(sweep_.base.scenario.set_at, "path",
                                                              {display_path(sweep_.base.scenario.file), 1, 1});
    diags.add(at, path_at != nullptr ? "axes.path" : "path",
              "point " + std::to_string(p.index) + ": machine " + r.scenario.machine.spec.name +
                  " has no tdm: section; use path both to run only the paths each machine has");
    return std::nullopt;
  } else {
    r.paths = {path_value};
  }
  // The whole-point checks below see the path the point runs.
  r.scenario.scenario.spec.path = path_value == "software" ? ExecPath::software
                                  : path_value == "tdm"    ? ExecPath::tdm
                                                           : ExecPath::both;

  // An axis over a key this point's scenario makes inert (zipf_s on a uniform
  // base), where no axis moves the key that governs it: every value would give
  // the same result. (With both on axes, some points differ: not refused.)
  // (The same for the machine's keys: an L1 shape where compute.l1_per_cu is 0.
  // A `machine` axis moves every machine key: other points may make it apply,
  // which check_all_points weighs over all points.)
  const bool machine_axis = swaps_machine(sweep_.sweep.spec.axes);
  const auto refuse_inert = [&](const std::string& prefix, const std::vector<InertKey>& inert, const char* whose) {
    if (prefix == "machine." && machine_axis) return;
    for (const auto& k : inert) {
      const auto is_axis = [&](const std::string& key) {
        return std::any_of(axes.begin(), axes.end(), [&](const auto& a) { return a.key == prefix + key; });
      };
      if (is_axis(k.governing)) continue;
      for (std::size_t a = 0; a < axes.size(); ++a) {
        if (axes[a].key == prefix + k.key && p.choice[a] != kAxisAtBase) {
          diags.add(value_location(axes[a], p.choice[a]), "axes." + axes[a].key,
                    "value '" + axes[a].values.at(p.choice[a]) + "': " + k.message + " (" + k.governing + " is the base " +
                        whose + "'s, on no axis)");
        }
      }
    }
  };
  refuse_inert("scenario.", inert_keys(r.scenario.scenario.spec), "scenario");
  refuse_inert("machine.", inert_keys(r.scenario.machine.spec), "machine");
  if (diags.size() != before) return std::nullopt;

  // The point as a whole (e.g. its footprint must fit in HBM), reported at the
  // value of the axis that sets the key at fault, else at its last axis value.
  Diagnostics whole;
  const SetMap no_origins;
  Checker c(no_origins, value_location(axes.back(), p.choice.back()), whole);
  check(r.scenario.scenario.spec, r.scenario.model.spec, r.scenario.machine.spec, c);
  if (!whole.empty()) {
    const std::string name = point_name(sweep_.sweep.spec, p);
    for (const auto& d : whole.items()) {
      std::size_t at = axes.size() - 1;
      const std::string axis_key = d.key.starts_with("machine.") || d.key.starts_with("model.")
                                       ? d.key
                                       : "scenario." + d.key;
      for (std::size_t a = 0; a < axes.size(); ++a) {
        if (axes[a].key == axis_key) at = a;
      }
      diags.add(value_location(axes[at], p.choice[at]), "axes." + axes[at].key,
                name + ": " +
                    (d.key.empty() ? "" : d.key + ": ") + d.message);
    }
    return std::nullopt;
  }
  return r;
}

std::string canonical_inputs(const ResolvedPoint& p) {
  Json j = {{"scenario", to_json(p.scenario.scenario.spec)},
            {"machine", to_json(p.scenario.machine.spec)},
            {"model", to_json(p.scenario.model.spec)},
            {"paths", p.paths}};
  return j.dump();
}

}  // namespace tdmsim::config
