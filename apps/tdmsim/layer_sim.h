// Simulating one resolved scenario on the timing model: one path's run of a
// plan and the metrics `tdmsim run` reports. Shared by `tdmsim run` and the
// sweep worker (`tdmsim sweep-point`), so a sweep point is exactly a run.
#pragma once

#include <string>
#include <vector>

#include "apps/tdmsim/capacity_json.h"
#include "descriptors/plan/moe_plan.h"
#include "sim/platform/gpu.h"
#include "sim/programs/moe_kernels.h"
#include "workloads/config/resolved.h"
#include "workloads/config/writer.h"

namespace tdmsim::cli {

// One path's run of one plan: timings and the metrics of the summary.
struct PathRun {
  std::string path;
  std::vector<sim::KernelTiming> timings;
  std::vector<std::string> stages;
  double total_s = 0;
  // The routing stage (stage "routing": the router's kernels on the software
  // path; the unit's gate GEMM and routing stage on the TDM path), from the
  // first such kernel's launch to the last one's end; 0 when the scenario's
  // router output is given. The sort is its own stage ("sort", software only).
  double routing_s = 0;
  double sort_s = 0;
  config::Json metrics;  // summary.json's paths[] entry
  // Counters of this run only: the stats object as text, as dump(1) writes
  // it (sim::StatRegistry::to_json_text); stats.json nests it under the path.
  std::string stats_json;
  sim::programs::DescriptorBytes descriptors;  // TDM path: the encoded descriptors the unit fetched
};

// Throws sim::NotSimulatable, naming the scenario keys or the kernel.config
// row that chose it, if a kernel of `k` does not fit on a CU of `m` or the
// gate/up kernel is said to hold more workgroups a CU than its wave slots
// allow. run_path checks so; the sweep checks every point so before any runs.
// With `scenario_keys` (the scenario's set_at), a tile the scenario file set
// is named at its key's file, line and column; otherwise, with
// `machine_keys` (the machine's), the machine key of the resource that ran
// out (compute.lds_per_cu, ...) where a machine file set it.
void check_kernels_fit(const sim::programs::MoeKernels& k, const plan::MoePlan& p, const MachineSpec& m,
                       const config::SetMap* scenario_keys = nullptr,
                       const config::SetMap* machine_keys = nullptr);

// The software path's sort kernel keeps a counter per expert of a GPU in
// LDS: a model with more of them than a CU's LDS holds is refused here,
// before the plan is built (routing a huge layer takes minutes and GBs
// before check_kernels_fit could say so). `scenario_keys`: the scenario's
// set_at, to name its `model` key.
void check_sort_fits(const config::ResolvedScenario& sc, const std::vector<std::string>& paths,
                     const config::SetMap* scenario_keys = nullptr);

// check_kernels_fit for the kernels each of `paths` ("software", "tdm") runs
// plan `p` with: what run and sweep check before anything runs.
void check_paths_fit(const plan::MoePlan& p, const MachineSpec& m, const std::vector<std::string>& paths,
                     const config::SetMap* scenario_keys = nullptr,
                     const config::SetMap* machine_keys = nullptr);

// Runs `path` ("software" or "tdm") of plan `p` on `gpu` with fresh buffers.
// Throws std::logic_error if the prediction is below the physical floor,
// sim::NotSimulatable if a kernel does not fit on a CU (naming the tiles),
// sim::SimulationStalled if the run passes its watchdog limit. `descriptors`
// (TDM path only): run these encoded descriptors instead of the plan-built
// ones (checked against the plan beforehand: format::check_stream).
PathRun run_path(sim::Gpu& gpu, sim::AddressSpace& as, const plan::MoePlan& p,
                 const MachineSpec& m, const std::string& path,
                 const sim::programs::DescriptorBytes* descriptors = nullptr);

// run_path on a machine of its own, in a child process (child_process.h):
// the result a standalone run of `path` gives, whatever this process ran
// before. With opts.trace, `trace_json` receives the run's trace.json text.
PathRun run_path_fresh(const plan::MoePlan& p, const MachineSpec& m, const std::string& path,
                       const sim::SimOptions& opts, const sim::programs::DescriptorBytes* descriptors = nullptr,
                       std::string* trace_json = nullptr);

// A PathRun as it crosses from a child process (run_path_fresh) or an MPI
// rank (ep_mpi.h): every field the summary, the attribution and the text
// report read, the stats as their text; as CBOR, doubles cross bit-exact.
// path_run_from_json moves the stats text out of `j`.
config::Json path_run_to_json(const PathRun& r);
PathRun path_run_from_json(config::Json& j);

// One trace.json of several paths' traces (path name, trace.json text), each
// from its own run starting at time 0: with more than one, every track
// group's name starts with its path ("tdm: gpu.xcd[0]").
std::string combined_trace(const std::vector<std::pair<std::string, std::string>>& traces);

// summary.json's "layer" object: rows, padding, kernel choice, load spread.
config::Json layer_summary(const plan::MoePlan& p);

// The paths to run for a requested path ("software", "tdm", "both") on machine
// `m`: "both" keeps only what the machine has. An explicit "tdm" on a machine
// without a TDM unit gives an empty list.
std::vector<std::string> paths_for(const MachineSpec& m, const std::string& path);

// Throws sim::NotSimulatable when simulating `sc` on `paths` paths (with a
// trace if `trace`) would take more host memory than sim::memory_limit().
void check_layer_memory(const config::ResolvedScenario& sc, std::uint32_t paths, bool trace);

// One scenario, once, on `paths`, each on a fresh machine (run_path_fresh):
// {"layer": ..., "paths": [metrics, ...]}, as summary.json has them.
config::Json simulate_layer(const config::ResolvedScenario& sc, const std::vector<std::string>& paths);

}  // namespace tdmsim::cli
