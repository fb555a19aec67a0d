// Test helpers shared by the SystemC tests: the source tree's machines and
// scenarios, resolved with the shipped workloads, and small lookups in what
// the model produced. (The test files of tdmsim_sim_tests are compiled as one
// unity translation unit, so a helper two files need lives here once.)
#pragma once

#include <cstddef>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "sim/platform/dispatcher.h"
#include "sim/programs/moe_kernels.h"
#include "workloads/config/loader.h"

namespace tdmsim::test {

// A scenario file of the source tree (path relative to its root), resolved
// against the shipped workloads, on `machine` instead of its own if given.
inline config::ResolvedScenario source_scenario(const std::string& path, const std::string& machine = "") {
  const std::filesystem::path root = std::filesystem::path(TDMSIM_SOURCE_DIR);
  const config::Loader loader({root / "workloads"});
  return machine.empty() ? loader.resolve_scenario(root / path) : loader.resolve_scenario(root / path, machine);
}

// A shipped machine by name (workloads/machines/NAME.yaml).
inline MachineSpec shipped_machine(const std::string& name) {
  const std::filesystem::path root = std::filesystem::path(TDMSIM_SOURCE_DIR) / "workloads";
  const config::Loader loader({root});
  return loader.machine(root / "machines" / (name + ".yaml")).spec;
}

// Index of the first kernel of `stage` (our sort is four kernels on machines
// that run our kernels, so positions differ by machine).
inline std::size_t kernel_of(const sim::programs::MoeKernels& k, const std::string& stage) {
  for (std::size_t i = 0; i < k.stage.size(); ++i) {
    if (k.stage[i] == stage) return i;
  }
  throw std::runtime_error("no kernel of stage " + stage);
}

// A kernel's time from its start to its end, in microseconds.
inline double kernel_us(const sim::KernelTiming& t) { return static_cast<double>(t.end - t.start) / 1e6; }

}  // namespace tdmsim::test
