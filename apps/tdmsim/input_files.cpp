#include "apps/tdmsim/input_files.h"

#include "descriptors/plan/routing.h"
#include "workloads/config/resolved.h"

namespace tdmsim::cli {

std::vector<std::filesystem::path> machine_files(const config::Loaded<MachineSpec>& machine) {
  std::vector<std::filesystem::path> files = machine.chain;
  files.insert(files.end(), machine.also_read.begin(), machine.also_read.end());
  return files;
}

std::vector<std::filesystem::path> point_files(const config::ResolvedPoint& point) {
  const auto& sc = point.scenario;
  std::vector<std::filesystem::path> files = sc.scenario.chain;
  for (auto& f : machine_files(sc.machine)) files.push_back(std::move(f));
  files.insert(files.end(), sc.model.chain.begin(), sc.model.chain.end());
  if (sc.scenario.spec.routing.source == RoutingSource::trace && !sc.scenario.spec.routing.trace.empty()) {
    files.push_back(plan::trace_path(sc));
  }
  // The tuned kernel table a point's plan reads (kernel.config): editing a
  // row changes the kernels it runs.
  if (!sc.scenario.spec.kernel.config.empty()) files.push_back(config::kernel_config_path(sc.scenario));
  // A request stream's arrival trace (serving.trace; `tdmsim run` only).
  if (sc.scenario.spec.serving && sc.scenario.spec.serving->arrival == ArrivalProcess::trace) {
    files.push_back(config::serving_trace_path(sc.scenario));
  }
  return files;
}

}  // namespace tdmsim::cli
