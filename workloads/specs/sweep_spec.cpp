#include "workloads/specs/sweep_spec.h"

#include "workloads/config/reader.h"
#include "workloads/config/writer.h"
#include "workloads/config/units.h"

#include <charconv>

#include <fmt/core.h>
#include <algorithm>
#include <cmath>
#include <string_view>
#include <unordered_map>

namespace tdmsim {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// "4TB/s" -> (4, "TB/s"); "16384" -> (16384, "").
bool split_number(std::string_view s, double& value, std::string& unit) {
  s = trim(s);
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc{} || !std::isfinite(value)) return false;
  unit = std::string(trim(std::string_view(ptr, static_cast<std::size_t>(s.data() + s.size() - ptr))));
  return true;
}

}  // namespace

std::string expand_range(std::string_view text, std::vector<std::string>& out) {
  constexpr std::size_t kMaxValues = 100000;
  const std::string usage = "expected 'range(A, B, xF)' or 'range(A, B, +S)', got '" +
                            std::string(text) + "'";
  std::string_view t = trim(text);
  if (!t.starts_with("range(") || !t.ends_with(")")) return usage;
  t = t.substr(6, t.size() - 7);
  std::vector<std::string_view> parts;
  for (std::size_t pos = 0;;) {
    const auto comma = t.find(',', pos);
    parts.push_back(trim(t.substr(pos, comma == std::string_view::npos ? t.npos : comma - pos)));
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  if (parts.size() != 3 || parts[2].empty()) return usage;
  double a = 0, b = 0, step = 0;
  std::string ua, ub, us;
  const char op = parts[2].front();
  if (!split_number(parts[0], a, ua) || !split_number(parts[1], b, ub) ||
      (op != 'x' && op != '+') || !split_number(parts[2].substr(1), step, us)) {
    return usage;
  }
  if (ua != ub || (op == '+' && us != ua) || (op == 'x' && !us.empty())) {
    return "range bounds and step must use the same unit, got '" + std::string(text) + "'";
  }
  if (a > b) return "range start exceeds its end in '" + std::string(text) + "'";
  if (op == 'x' && (step <= 1 || a <= 0)) {
    return "a multiplicative range needs a start above 0 and a factor above 1";
  }
  if (op == '+' && step <= 0) return "an additive range needs a step above 0";
  // The number of steps from A that stay within B (a step's millionth of
  // slack, for A + n S that lands on B but for rounding); then each value from
  // the start and its index, not from the previous value, written to 12
  // significant digits: repeated adds of 0.1 would give 0.30000000000000004,
  // which a unit then refuses as not a whole number of bytes per second, or
  // which would name the point in results.
  const double steps = (op == 'x') ? std::log(b / a) / std::log(step) : (b - a) / step;
  if (!(steps < static_cast<double>(kMaxValues))) return "range has more than 100000 values";
  const auto last = static_cast<std::size_t>(std::floor(steps + 1e-6));
  std::string previous;
  for (std::size_t i = 0; i <= last; ++i) {
    const double v = (op == 'x') ? a * std::pow(step, static_cast<double>(i)) : a + step * static_cast<double>(i);
    std::string value = units::plain_decimal(v, 12) + ua;
    if (value == previous) {
      return "range steps finer than the 12 significant digits its values are written with, in '" +
             std::string(text) + "' (" + value + " twice)";
    }
    previous = value;
    out.push_back(std::move(value));
  }
  return {};
}

std::optional<AxisRef> axis_ref(std::string_view key) {
  if (key == "path" || key == "scenario.path") return AxisRef{AxisTarget::path, {}};
  if (key == "machine" || key == "scenario.machine") return AxisRef{AxisTarget::machine, {}};
  if (key == "model" || key == "scenario.model") return AxisRef{AxisTarget::model, {}};
  const auto dot = key.find('.');
  if (dot == std::string_view::npos || dot + 1 == key.size()) return std::nullopt;
  const std::string_view root = key.substr(0, dot);
  const std::string sub(key.substr(dot + 1));
  if (root == "machine") return AxisRef{AxisTarget::machine_param, sub};
  if (root == "model") return AxisRef{AxisTarget::model_param, sub};
  if (root == "scenario") return AxisRef{AxisTarget::scenario_param, sub};
  return std::nullopt;
}

std::optional<double> relative_factor(std::string_view value) {
  if (value.size() < 2 || value[0] != 'x') return std::nullopt;
  double f = 0;
  const char* end = value.data() + value.size();
  const auto [ptr, ec] = std::from_chars(value.data() + 1, end, f);
  if (ec != std::errc{} || ptr != end || !std::isfinite(f) || f <= 0) return std::nullopt;
  return f;
}

bool factor_axis(const SweepAxis& axis) {
  if (axis.own_values() == 0) return false;
  for (std::size_t i = 0; i < axis.own_values(); ++i) {
    if (!relative_factor(axis.values[i])) return false;
  }
  return true;
}

void add_jitter_values(SweepSpec& s) {
  if (s.mode != SweepMode::oat || !(s.jitter > 0)) return;
  for (auto& a : s.axes.items) {
    if (a.jitter_added) continue;
    a.jitter_added = true;
    if (!factor_axis(a)) continue;
    for (const double f : {1.0 - s.jitter, 1.0 + s.jitter}) {
      a.values.push_back(fmt::format("x{:.9g}", f));
      a.value_where.push_back(a.where);  // the axis's key stands for them
    }
    a.jitter_values = 2;
  }
}

std::uint64_t sweep_point_count(const SweepSpec& s) {
  if (s.axes.items.empty()) return 0;
  switch (s.mode) {
    case SweepMode::grid: {
      std::uint64_t points = 1;
      for (const auto& a : s.axes.items) {
        const std::uint64_t n = a.values.size();
        // Saturate: points * n > kMaxSweepPoints, tested without overflowing.
        if (n != 0 && points > kMaxSweepPoints / n) return kMaxSweepPoints + 1;
        points *= n;
        if (points > kMaxSweepPoints) return kMaxSweepPoints + 1;
      }
      return points;
    }
    case SweepMode::zip: {
      std::uint64_t n = s.axes.items.front().values.size();
      for (const auto& a : s.axes.items) n = std::min<std::uint64_t>(n, a.values.size());
      return n;
    }
    case SweepMode::random:
    case SweepMode::lhs: return s.samples;
    case SweepMode::oat: {
      // The base, then every axis value on its own (with its jitter values,
      // counted before they are added).
      std::uint64_t n = 1;
      for (const auto& a : s.axes.items) {
        const std::uint64_t jitter = s.mode == SweepMode::oat && s.jitter > 0 && !a.jitter_added && factor_axis(a) ? 2 : 0;
        n = std::min<std::uint64_t>(n + a.values.size() + jitter, kMaxSweepPoints + 1);
      }
      return n;
    }
  }
  return 0;
}

bool swaps_machine(const SweepAxes& axes) {
  return std::any_of(axes.items.begin(), axes.items.end(), [](const SweepAxis& a) {
    const auto ref = axis_ref(a.key);
    return ref && ref->target == AxisTarget::machine;
  });
}

void check(const SweepSpec& s, config::Checker& c) {
  c.one_line("name", s.name);
  c.one_line("description", s.description);
  if (s.mode == SweepMode::grid && sweep_point_count(s) > kMaxSweepPoints) {
    std::string lengths;
    for (const auto& a : s.axes.items) {
      lengths += (lengths.empty() ? "" : " x ") + a.key + " (" + std::to_string(a.values.size()) + ")";
    }
    c.fail("axes", "a grid has one point per combination of axis values, and the product of the "
                   "axis lengths, " + lengths + ", exceeds the limit of " +
                       std::to_string(kMaxSweepPoints) +
                       " points; use fewer values, or mode: random or lhs with samples");
  }
  if (s.mode == SweepMode::oat && sweep_point_count(s) > kMaxSweepPoints) {
    c.fail("axes", "mode oat has one point per axis value (and its jitter values) plus the base, more than the limit of " +
                       std::to_string(kMaxSweepPoints) + " points");
  }
  // Every draw is a run as costly as a point: the runs are limited too.
  if (const std::uint64_t pts = sweep_point_count(s);
      pts <= kMaxSweepPoints && pts * s.repeat > kMaxSweepRuns) {
    c.fail("repeat", "the sweep's " + std::to_string(pts) + " points times repeat " +
                         std::to_string(s.repeat) + " make " + std::to_string(pts * s.repeat) +
                         " runs, more than the limit of " + std::to_string(kMaxSweepRuns) +
                         "; use fewer points or draws");
  }
  // samples and seed draw the points of random and lhs sweeps; anywhere else
  // they would change nothing.
  if (s.mode != SweepMode::random && s.mode != SweepMode::lhs) {
    for (const char* key : {"samples", "seed"}) {
      if (c.is_set(key)) {
        c.fail(key, std::string("draws the points of mode random or lhs; mode ") + std::string(config::enum_name(s.mode)) +
                        " has no draws (routing draws take the scenario's seed): leave it out",
               {"mode"});
      }
    }
  }
  if (s.jitter > 0) {
    if (s.mode != SweepMode::oat) {
      c.fail("jitter", "moves the axes of a one-at-a-time sweep around its base: needs mode oat", {"mode"});
    } else if (std::none_of(s.axes.items.begin(), s.axes.items.end(), [](const auto& a) { return factor_axis(a); })) {
      c.fail("jitter", "moves the axes given as factors of the base (xF), and this sweep has none");
    }
  }
  // In a grid or one-at-a-time sweep a value given twice makes a point that
  // repeats another. (A zip pairs values position by position, and random and
  // lhs draw from the list, where a repeat weighs the value: both keep them.)
  if (s.mode == SweepMode::grid || s.mode == SweepMode::oat) {
    for (const auto& a : s.axes.items) {
      // (A hash of the values seen: a range can give an axis a million values.)
      std::unordered_map<std::string_view, std::size_t> first;
      first.reserve(a.own_values());
      for (std::size_t j = 0; j < a.own_values(); ++j) {
        const auto [it, fresh] = first.emplace(a.values[j], j);
        if (fresh) continue;
        const config::Location& was = a.value_where[it->second];
        c.fail_at(a.value_where[j], "axes." + a.key,
                  fmt::format("value '{}' is given twice (also at {}:{}): its points would repeat others; give it once",
                              a.values[j], was.line, was.column));
      }
    }
  }
  // The sweep's machine: replaced at every point by a machine axis, where
  // every point takes one of its values (not mode oat, whose base point and
  // other axes' points keep it).
  if (!s.machine.empty() && s.mode != SweepMode::oat) {
    for (const auto& a : s.axes.items) {
      if (const auto ref = axis_ref(a.key); ref && ref->target == AxisTarget::machine) {
        c.fail("machine", "every point takes its machine from axis " + a.key + ": this one would change nothing; "
                          "leave it out, or add it to the axis");
      }
    }
  }
  if (s.mode == SweepMode::zip) {
    for (const auto& a : s.axes.items) {
      if (a.values.size() != s.axes.items.front().values.size()) {
        c.fail("axes." + a.key, "zip mode needs every axis to have the same number of values (" +
                                    std::to_string(s.axes.items.front().values.size()) + "), this has " +
                                    std::to_string(a.values.size()));
      }
    }
  }
}

}  // namespace tdmsim

namespace tdmsim::config {

bool NodeTraits<SweepAxes>::read(const YAML::Node& node, const std::string& path,
                                 ReadContext& ctx, SweepAxes& out) {
  auto fail = [&](const YAML::Node& at, const std::string& key, std::string msg) {
    ctx.diags->add(location_of(ctx.file, at), key, std::move(msg));
    return false;
  };
  if (!node.IsMap() || node.size() == 0) {
    return fail(node, path, "expected a mapping of key path -> values with at least one axis");
  }
  std::vector<std::string> roots(std::begin(kSweepRoots), std::end(kSweepRoots));
  bool ok = true;
  for (auto it = node.begin(); it != node.end(); ++it) {
    SweepAxis axis;
    if (const std::string why = key_name_problem(it->first); !why.empty()) {
      ok = fail(it->first, path, why);
      continue;
    }
    axis.key = it->first.Scalar();
    axis.where = location_of(ctx.file, it->first);
    const std::string key_path = path + "." + axis.key;
    if (!axis_ref(axis.key)) {
      const std::string root = axis.key.substr(0, axis.key.find('.'));
      ok = fail(it->first, key_path,
                "axis key must start with machine., model. or scenario., or be path, machine "
                "or model" + did_you_mean(root, roots));
      continue;
    }
    if (axis.key == "machine.kernel_profile") {
      // The profile is read when the machine is loaded; the name alone changes nothing.
      ok = fail(it->first, key_path,
                "the kernel profile is read with the machine: sweep `machine` over machine files "
                "that name the profiles, or sweep machine.kernels.<key>");
      continue;
    }
    // Two spellings of one key (path and scenario.path, or a parameter named
    // twice) would both be applied, the last silently winning.
    const AxisRef ref = *axis_ref(axis.key);
    for (const auto& prev : out.items) {
      const AxisRef p = *axis_ref(prev.key);
      if (prev.key == axis.key) {
        ok = fail(it->first, key_path, "axis given twice");
      } else if (p.target == ref.target && p.sub == ref.sub) {
        ok = fail(it->first, key_path, "names the same key as axis " + prev.key + ": give one of them");
      }
    }
    const YAML::Node vals = it->second;  // a copy: it-> yields a temporary proxy
    if (vals.IsScalar()) {
      if (auto err = expand_range(vals.Scalar(), axis.values); !err.empty()) {
        ok = fail(vals, key_path, err);
        continue;
      }
      axis.value_where.assign(axis.values.size(), location_of(ctx.file, vals));
    } else if (vals.IsSequence() && vals.size() > 0) {
      for (const auto& v : vals) {
        if (!v.IsScalar()) {
          ok = fail(v, key_path, "axis values must be scalars, got " + node_kind(v));
          continue;
        }
        axis.values.push_back(v.Scalar());
        axis.value_where.push_back(location_of(ctx.file, v));
      }
    } else {
      ok = fail(vals, key_path, "expected a non-empty list of values or range(...), got " +
                                    node_kind(vals));
      continue;
    }
    out.items.push_back(std::move(axis));
  }
  return ok;
}

Json NodeTraits<SweepAxes>::to_json(const SweepAxes& axes) {
  Json j = Json::object();
  // The file's values (the jitter's are the sweep's `jitter` key).
  for (const auto& a : axes.items) {
    j[a.key] = std::vector<std::string>(a.values.begin(), a.values.begin() + static_cast<std::ptrdiff_t>(a.own_values()));
  }
  return j;
}

}  // namespace tdmsim::config
