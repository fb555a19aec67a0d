// What the loader returns (loader.h): a spec with where it came from, and a
// scenario with the machine and model it names. Kept apart from the loader so
// that code consuming a resolved scenario (the plan, the emulator, the
// simulator) compiles without yaml-cpp or the reader.
#pragma once

#include <filesystem>
#include <vector>

#include "workloads/config/diagnostics.h"
#include "workloads/specs/machine_spec.h"
#include "workloads/specs/model_spec.h"
#include "workloads/specs/scenario_spec.h"

namespace tdmsim::config {

// A spec plus where it came from: the file, its base chain (file first),
// the other files read into it (a machine's kernel profile and that
// profile's base chain) and where every key got its final value.
template <class S>
struct Loaded {
  S spec;
  std::filesystem::path file;
  std::vector<std::filesystem::path> chain;
  std::vector<std::filesystem::path> also_read;
  SetMap set_at;
};

// A scenario with the machine and model it names, all cross-checked.
struct ResolvedScenario {
  Loaded<ScenarioSpec> scenario;
  Loaded<MachineSpec> machine;
  Loaded<ModelSpec> model;
};

// The routing trace file a scenario names (routing.trace), resolved relative
// to the file that set the key (a base scenario may set it); absolute paths
// stay as they are.
std::filesystem::path routing_trace_path(const Loaded<ScenarioSpec>& scenario);
// The same for the tuned kernel table (kernel.config).
std::filesystem::path kernel_config_path(const Loaded<ScenarioSpec>& scenario);
// serving.trace, resolved the same way.
std::filesystem::path serving_trace_path(const Loaded<ScenarioSpec>& scenario);

}  // namespace tdmsim::config
