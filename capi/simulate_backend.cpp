#include "capi/simulate_backend.h"

#include <stdexcept>

#include "apps/tdmsim/layer_sim.h"
#include "descriptors/emulator/emulator.h"

namespace tdmsim::capi {

api::BackendOutput simulate_layer(const plan::MoePlan& plan, std::span<const float> x,
                                  const api::ForwardOptions& options) {
  if (options.scenario == nullptr) {
    throw std::invalid_argument("the simulate backend needs the descriptor's scenario");
  }
  config::ResolvedScenario sc = *options.scenario;
  MachineSpec& m = sc.machine.spec;
  if (m.tdm) m.tdm->default_policy = options.policy;  // the descriptor's policy
  const std::vector<std::string> paths = cli::paths_for(m, "both");
  cli::check_layer_memory(sc, static_cast<std::uint32_t>(paths.size()), false);

  api::BackendOutput out;
  // Simulations first: each forks a child, best done before the emulator
  // starts its worker threads in this process.
  for (const std::string& path : paths) {
    const cli::PathRun run = cli::run_path_fresh(plan, m, path, sim::SimOptions{});
    out.timing.push_back({path, run.total_s, run.routing_s, run.sort_s, run.metrics.dump()});
  }
  emu::EmulatorOptions eo;
  eo.keep_intermediates = options.keep_intermediates;
  eo.weights = options.weights;
  out.emulation = emu::emulate(plan, x, eo);
  out.y = out.emulation->y;
  return out;
}

}  // namespace tdmsim::capi
