// A what-if sweep: a base scenario plus axes over machine, model or scenario
// parameters by key path, described by workloads/sweeps/*.yaml.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "workloads/config/diagnostics.h"
#include "workloads/specs/machine_spec.h"

namespace tdmsim::config {
struct ReadContext;  // reader.h
}

namespace tdmsim {

// One axis: a key path rooted at machine., model. or scenario. (or one of the
// whole-object axes path, machine, model) and its values as scalar texts. `range(A, B, xF)` and `range(A, B, +S)` expand at read time
// to A, A*F (or A+S), ... up to and including B.
struct SweepAxis {
  std::string key;
  config::Location where;
  std::vector<std::string> values;
  std::vector<config::Location> value_where;
  // The last `jitter_values` of `values` are the sweep's `jitter` (mode oat),
  // added when it is loaded (add_jitter_values), not the file's.
  std::size_t jitter_values = 0;
  bool jitter_added = false;  // add_jitter_values has run (the loader may drop some again)
  bool operator==(const SweepAxis& o) const { return key == o.key && values == o.values; }
  std::size_t own_values() const { return values.size() - jitter_values; }
};

// "x0.8" -> 0.8: an axis value relative to the parameter's current one (a
// finite factor above 0); none for any other text.
std::optional<double> relative_factor(std::string_view value);

// Whether every value the file gives an axis is a factor of the base's value
// ("x0.8"): the axes a `jitter` moves.
bool factor_axis(const SweepAxis& axis);

struct SweepAxes {
  std::vector<SweepAxis> items;
  bool operator==(const SweepAxes&) const = default;
};

// Expands "range(1, 16384, x2)"; returns an error text or fills `out`.
std::string expand_range(std::string_view text, std::vector<std::string>& out);

// The roots an axis key may start with, and the keys that are axes on their own.
inline constexpr std::string_view kSweepRoots[] = {"machine", "model", "scenario", "path"};

// What an axis changes.
enum class AxisTarget {
  machine_param,   // machine.<key path>: one machine parameter
  model_param,     // model.<key path>: one model parameter
  scenario_param,  // scenario.<key path>: one scenario parameter
  path,            // path (or scenario.path): software, tdm or both
  machine,         // machine (or scenario.machine): the whole machine, by name or path
  model,           // model (or scenario.model): the whole model, by name or path
};

struct AxisRef {
  AxisTarget target;
  std::string sub;  // the parameter's key path below its root (params only)
};

// The most points a sweep may have. Every point is resolved and checked, its plan
// and kernels built, before anything runs (milliseconds a point, up to a tenth of
// a second for the largest layers); and as a point's simulation takes seconds, a
// sweep this size already takes days of core time.
inline constexpr std::uint64_t kMaxSweepPoints = 100000;

// The most routing draws per point (`repeat:`), and the most runs (points times
// draws) a sweep may have: each draw is a run of its own, as costly as a point.
inline constexpr std::uint32_t kMaxSweepRepeat = 1000;
inline constexpr std::uint64_t kMaxSweepRuns = 1000000;

// The choice of an axis a point leaves at the base's value (mode oat).
inline constexpr std::uint32_t kAxisAtBase = 0xffffffffu;

// The number of points a sweep's mode and axes give, computed without
// expanding them and without overflow: a product (grid) that exceeds
// kMaxSweepPoints is returned as kMaxSweepPoints + 1.
struct SweepSpec;
std::uint64_t sweep_point_count(const SweepSpec& s);

// Classifies an axis key; nullopt when it has no valid root.
std::optional<AxisRef> axis_ref(std::string_view key);

// Whether one of `axes` replaces the whole machine (`machine` or
// `scenario.machine`): every point it moves takes its machine from there.
bool swaps_machine(const SweepAxes& axes);

struct SweepSpec {
  std::string name;
  std::string description;
  std::string scenario;
  std::string machine;
  SweepMode mode{};
  std::uint32_t samples{};
  std::uint64_t seed{};
  std::uint32_t repeat{};
  double jitter{};
  SweepAxes axes;

  template <class V>
  void visit(V& v) {
    v.param(name, "name", "short sweep name used in reports", Required{});
    v.param(description, "description", "one line on what the sweep studies");
    v.param(scenario, "scenario", "base scenario: name (workloads/scenarios) or path", Required{});
    v.param(machine, "machine", "machine replacing the scenario's (name or path; absent = keep)");
    v.param(mode, "mode", "how axes combine: full grid, zipped, random or Latin-hypercube samples, or one at a time around the base (oat)",
            Default{SweepMode::grid});
    v.param(samples, "samples", "points drawn in random/lhs mode", Default{100u}, Min{1u},
            Max{static_cast<std::uint32_t>(kMaxSweepPoints)});
    v.param(seed, "seed", "seed of random/lhs sampling", Default{1u});
    v.param(repeat, "repeat",
            "routing draws per point: draw r runs with scenario seed + r; results give the mean and a "
            "95% Student-t confidence interval (docs/sweeps.md)",
            Default{1u}, Min{1u}, Max{kMaxSweepRepeat});
    v.param(jitter, "jitter",
            "mode oat: also runs every axis given as factors (xF) at x(1 - J) and x(1 + J) of the base; "
            "the largest distance of those speedups from the base's is the noise floor in sensitivity.csv "
            "(0 = none; docs/sweeps.md)",
            Default{0.0}, Min{0.0}, Max{0.1});
    v.node(axes, "axes",
           "key path (machine.*, model.*, scenario.*, or path / machine / model to swap the "
           "whole thing) -> list of values or range()",
           Required{});
  }
};

void check(const SweepSpec& s, config::Checker& c);

// Appends the jitter values "x(1 - J)" and "x(1 + J)" to every factor axis of
// a mode oat sweep with `jitter` J > 0 (SweepAxis::jitter_values); once.
void add_jitter_values(SweepSpec& s);

}  // namespace tdmsim

namespace tdmsim::config {
template <>
struct NodeTraits<SweepAxes> {
  static constexpr std::string_view type_name =
      "mapping: key path -> list of values or 'range(A, B, xF|+S)'";
  static bool read(const YAML::Node& node, const std::string& path, ReadContext& ctx,
                   SweepAxes& out);
  static nlohmann::ordered_json to_json(const SweepAxes& axes);
};
}  // namespace tdmsim::config
