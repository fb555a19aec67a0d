// The host memory a simulation will take, estimated before anything is
// built from the data structures the model allocates, and checked against a
// limit: a machine or a run too large for this host is refused with a
// message naming the keys that drive it (bad input), instead of dying in
// std::bad_alloc or the kernel's OOM killer half way through.
//
// The estimate counts what grows with the configuration: the modules of the
// machine (CUs, L2 and MALL tag arrays, HBM pseudo-channels and banks, their
// stats), the MoE plan's per-row arrays and per-workgroup jobs, a pointer
// chase's cycle, and trace events. Per-object sizes are sizeof() where the
// type is visible here, else measured (docs/simulator.md, "Host memory").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workloads/specs/machine_spec.h"
#include "workloads/specs/model_spec.h"
#include "workloads/specs/scenario_spec.h"

namespace tdmsim::sim {

struct MemoryEstimate {
  struct Part {
    std::string what;  // "compute units (compute.dies x compute.cus_per_die = 304)"
    std::uint64_t bytes = 0;
  };
  std::vector<Part> parts;
  std::uint64_t total() const;
  void add(std::string what, std::uint64_t bytes);
  // "12.3 GiB: 10.0 GiB compute units (...), 2.3 GiB ..." (largest parts first).
  std::string describe() const;
};

// The machine as elaborated (Gpu): fixed costs plus every block.
MemoryEstimate machine_memory(const MachineSpec& m);

// Adds what `tdmsim run` (and a sweep point) holds for one scenario on
// `paths` paths, `repeat` times: the plan, the kernels' jobs and gathers,
// the stats snapshots, and the trace when `trace`.
void add_layer_memory(MemoryEstimate& e, const ScenarioSpec& s, const ModelSpec& model,
                      const MachineSpec& m, std::uint32_t paths, bool trace);

// Adds a microbenchmark's own arrays: a pointer chase's cycle over
// `footprint / stride` slots and its `hops` addresses (twice: warm-up and
// timed walk), and trace events for `workgroups`.
void add_chase_memory(MemoryEstimate& e, std::uint64_t footprint, std::uint32_t stride,
                      std::uint32_t hops);
void add_trace_memory(MemoryEstimate& e, std::uint64_t workgroups);

// The limit (util::memory_limit: $TDMSIM_MEMORY_LIMIT, else three quarters
// of the host's memory, at most three quarters of `ulimit -v`). Throws
// NotSimulatable for a malformed value.
std::uint64_t memory_limit();

// Throws NotSimulatable when `e` exceeds `limit`, naming the parts and the
// limit; `subject` says what was estimated ("scenario x.yaml on machine y").
void check_memory(const MemoryEstimate& e, std::uint64_t limit, const std::string& subject);

}  // namespace tdmsim::sim
