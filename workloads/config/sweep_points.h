// The points of a sweep: expansion of its axes (grid, zip, random, Latin
// hypercube) and resolution of one point into a scenario, machine and model
// with the point's values applied. Pure configuration work, no simulation.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "workloads/config/loader.h"

namespace tdmsim::config {

// One point: the index of the value it takes on every axis (axis order).
struct SweepPoint {
  std::uint64_t index = 0;
  std::vector<std::uint32_t> choice;
  bool operator==(const SweepPoint&) const = default;
};

// Every point of a sweep, indexed 0..n-1:
//   grid    the full cartesian product, first axis slowest (like nested loops in file order);
//   zip     the i-th value of every axis together (axes of equal length);
//   random  `samples` points, each axis value drawn uniformly (with replacement);
//   lhs     `samples` points of a Latin hypercube: each axis's range is cut into
//           `samples` strata, each stratum used once, mapped onto the axis's values;
//   oat     point 0 the base (no axis applied), then every value of every axis
//           on its own, axis by axis (choice kAxisAtBase: the axis keeps the base).
// random and lhs depend only on `seed` (a fixed SplitMix64 generator and integer
// arithmetic), so the points are the same on every machine and every run.
std::vector<SweepPoint> expand_points(const SweepSpec& sweep);

// Where the value a point takes on `axis` is written (choice kAxisAtBase: the axis key).
const Location& value_location(const SweepAxis& axis, std::uint32_t choice);

// The point's values as (axis key, value text), in axis order; axes a point
// leaves at the base (mode oat) are left out.
std::vector<std::pair<std::string, std::string>> point_values(const SweepSpec& sweep,
                                                               const SweepPoint& point);

// The point's values as one text, "key=value, key=value" (empty at the base).
std::string point_values_text(const SweepSpec& sweep, const SweepPoint& point);

// How messages name a point: "point N (key=value, ...)".
std::string point_name(const SweepSpec& sweep, const SweepPoint& point);

// Whether the point runs one of its axis's `jitter` values (mode oat,
// SweepAxis::jitter_values): a noise-floor point, not one of the file's values.
bool jitter_point(const SweepSpec& sweep, const SweepPoint& point);

// A point applied to the sweep's base: what `tdmsim run` would simulate.
struct ResolvedPoint {
  ResolvedScenario scenario;
  std::vector<std::string> paths;  // "software" and/or "tdm", in that order
};

// Applies points to a resolved sweep. Machines and models named by a
// machine/model axis are loaded once and kept.
class PointResolver {
 public:
  PointResolver(const Loader& loader, const ResolvedSweep& sweep)
      : loader_(loader), sweep_(sweep) {}

  // Problems go to `diags`, at the line of the axis value that causes them
  // (for a problem of the whole point, the point's last axis value) and the
  // result is empty.
  std::optional<ResolvedPoint> resolve(const SweepPoint& point, Diagnostics& diags) const;

 private:
  template <class S>
  const Loaded<S>* load_ref(const std::string& ref, SpecKind kind, const Location& at,
                            const std::string& key, Diagnostics& diags) const;
  const Loader& loader_;
  const ResolvedSweep& sweep_;
  mutable std::deque<std::pair<std::string, Loaded<MachineSpec>>> machines_;
  mutable std::deque<std::pair<std::string, Loaded<ModelSpec>>> models_;
};

// A point's resolved inputs as canonical JSON text: the scenario, machine and
// model after every override, and the paths. Equal text = same simulation.
std::string canonical_inputs(const ResolvedPoint& point);

// Resolves every point and throws one ConfigError listing the invalid ones
// (at most Diagnostics::kMaxReported); `each` sees every valid point.
template <class F>
void resolve_all_points(const Loader& loader, const ResolvedSweep& sweep,
                        const std::vector<SweepPoint>& points, F&& each) {
  PointResolver resolver(loader, sweep);
  Diagnostics diags;
  for (const auto& p : points) {
    if (auto r = resolver.resolve(p, diags)) each(p, *r);
    if (diags.size() >= Diagnostics::kMaxReported) break;
  }
  diags.throw_if_any();
}

}  // namespace tdmsim::config
