#include "apps/tdmsim/sweep_inputs.h"

#include <algorithm>
#include <fstream>
#include <optional>

#include <fmt/core.h>

#include "apps/tdmsim/layer_sim.h"
#include "apps/tdmsim/output_dir.h"
#include "apps/tdmsim/serving_queue.h"
#include "descriptors/plan/moe_plan.h"
#include "descriptors/plan/routing.h"

namespace tdmsim::cli {

std::string Fnv1a::hex() const { return fmt::format("{:016x}", h); }

std::string FileHashes::of(const std::filesystem::path& file) {
  const std::string key = file.lexically_normal().string();
  if (const auto it = cache_.find(key); it != cache_.end()) return it->second;
  Fnv1a f;
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    f.add("unreadable");
  } else {
    std::string buf(1 << 16, '\0');
    while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0) {
      f.add(std::string_view(buf.data(), static_cast<std::size_t>(in.gcount())));
    }
  }
  return cache_[key] = f.hex();
}

std::string point_inputs_hash(const config::ResolvedPoint& point, FileHashes& files) {
  Fnv1a f;
  f.add(config::canonical_inputs(point));
  // Contents only, not paths: the same checkout moved elsewhere is the same sweep.
  for (const auto& file : point_files(point)) f.add(files.of(file));
  // And the simulator that runs it: a point from another build of tdmsim (a
  // changed model) is no result of this one, so a resume after a rebuild runs
  // it again rather than keep figures this build would not give.
  f.add(files.of("/proc/self/exe"));
  return f.hex();
}

void check_runnable(const config::ResolvedPoint& point) {
  serving::refuse_serving(point.scenario, "a sweep point");
  if (point.scenario.machine.spec.partition) {
    // An axis over the machine's keys would change the whole GPU's values after
    // its partition was taken (docs/partitions.md): not supported yet.
    throw BadInput("machine " + point.scenario.machine.spec.name +
                   " has a partition: section; sweeps do not take partitioned machines (run each with tdmsim run)");
  }
  // Kernels a CU cannot hold are refused here, before any point runs, as
  // `tdmsim run` refuses them (a point failing at run time would be lost).
  // (No scenario key location: an axis may have set the tile, and
  // check_all_points reports a point's problem at its axis values.)
  check_sort_fits(point.scenario, point.paths);
  check_paths_fit(plan::build_plan(point.scenario), point.scenario.machine.spec, point.paths);
}

void check_all_points(const config::Loader& loader, const config::ResolvedSweep& sweep,
                      const std::vector<config::SweepPoint>& points,
                      const std::function<void(const config::SweepPoint&,
                                               const config::ResolvedPoint&)>& each,
                      bool check_memory) {
  config::PointResolver resolver(loader, sweep);
  config::Diagnostics diags;
  const auto& axes = sweep.sweep.spec.axes.items;
  // Per axis: a point where its key is inert (the rule, kept for the
  // message), and whether any point off the base makes it live. An axis
  // whose key is live at no point (hot_fraction against source [uniform,
  // zipf]) changes nothing anywhere; the resolver refuses it only where the
  // governing key is on no axis.
  std::vector<std::optional<InertKey>> inert(axes.size());
  std::vector<bool> live(axes.size(), false);
  for (const auto& pt : points) {
    if (diags.size() >= config::Diagnostics::kMaxReported) break;
    const auto r = resolver.resolve(pt, diags);
    if (!r) continue;
    const auto inert_scenario = inert_keys(r->scenario.scenario.spec);
    const auto inert_machine = inert_keys(r->scenario.machine.spec);
    for (std::size_t a = 0; a < axes.size(); ++a) {
      if (pt.choice[a] == kAxisAtBase) continue;
      const bool machine = axes[a].key.starts_with("machine.");
      if (!machine && !axes[a].key.starts_with("scenario.")) continue;
      const std::string key = axes[a].key.substr(axes[a].key.find('.') + 1);
      // The TDM unit's keys bind only where the point runs the tdm path.
      if (machine && key.starts_with("tdm.") &&
          std::find(r->paths.begin(), r->paths.end(), "tdm") == r->paths.end()) {
        if (!inert[a]) inert[a] = InertKey{key, "path", "", "the point runs the tdm path"};
        continue;
      }
      const auto& inert_here = machine ? inert_machine : inert_scenario;
      const auto it = std::find_if(inert_here.begin(), inert_here.end(), [&](const InertKey& k) { return k.key == key; });
      if (it == inert_here.end()) {
        live[a] = true;
      } else if (!inert[a]) {
        inert[a] = *it;
      }
    }
    const std::string point = config::point_name(sweep.sweep.spec, pt) + ": ";
    // A problem of the point as a whole: reported at its last axis value, as
    // the resolver reports one.
    const config::Location& last = config::value_location(axes.back(), pt.choice.back());
    const std::string last_key = "axes." + axes.back().key;
    try {
      check_runnable(*r);
      // The host-memory check `tdmsim run` makes before simulating, per point
      // (each runs in its own process).
      if (check_memory) check_layer_memory(r->scenario, static_cast<std::uint32_t>(r->paths.size()), false);
    } catch (const config::ConfigError& e) {
      // A problem in another file (a routing trace): its place is in the text.
      for (const auto& d : e.diagnostics()) diags.add(last, last_key, point + d.to_string());
      continue;
    } catch (const std::exception& e) {
      diags.add(last, last_key, point + "cannot run: " + e.what());
      continue;
    }
    each(pt, *r);
  }
  // (Only where every point resolved and was checked: a point refused for
  // another reason might have been the one that made the key apply.)
  const SweepMode mode = sweep.sweep.spec.mode;
  for (std::size_t a = 0; a < axes.size() && diags.empty(); ++a) {
    if (!inert[a] || live[a]) continue;
    diags.add(config::value_location(axes[a], 0), "axes." + axes[a].key,
              fmt::format("applies only where {}, and no point of this sweep has that{}: every value would give "
                          "the same result",
                          inert[a]->applies,
                          mode == SweepMode::oat ? " (mode oat moves one axis at a time from the base: set it in "
                                                   "the base scenario)"
                          : mode == SweepMode::random || mode == SweepMode::lhs ? " (among the points this seed draws)"
                                                                               : ""));
  }
  diags.throw_if_any();
}

}  // namespace tdmsim::cli
