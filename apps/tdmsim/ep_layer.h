// An expert-parallel layer on N GPUs (docs/expert-parallel.md): every GPU's
// share of one routing draw simulated as a single-GPU layer of its own (each
// in a forked child, run_path_fresh; under MPI spread over the ranks,
// ep_mpi.h), the dispatch and combine all-to-all of
// the real token traffic timed on the machine's interconnect (sim/net), and
// the layer's time, the slowest rank's, with a per-rank breakdown.
//
// Timing rule without overlap (parallel.overlap none; chunked is
// ep_timeline.h's pipeline of micro-batches; on either path the fused kernels
// start when their tokens are all in memory, and the combine starts when the
// last expert kernel has ended):
//   each rank routes its own tokens (its kernels up to the end of its
//   "routing" stage: before_dispatch); the dispatch all-to-all starts when
//   the last rank has routed and lasts the collective's time; then each rank
//   sorts and runs its experts (after_dispatch); the combine starts when the
//   last rank has finished and lasts the collective's time:
//     layer = max(before_dispatch) + dispatch + max(after_dispatch) + combine
//   A rank's wait is the layer minus its compute minus its own share of the
//   two collectives (the time its own links and messages take).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "apps/tdmsim/ep_timeline.h"
#include "apps/tdmsim/layer_sim.h"
#include "descriptors/plan/expert_parallel.h"
#include "sim/net/collective.h"
#include "workloads/config/resolved.h"

namespace tdmsim::cli {

// One routing draw spread over the expert-parallel group: the placement, the
// ranks' plans and the traffic of both collectives.
struct EpSetup {
  std::uint32_t gpus = 1;   // expert-parallel ranks (parallel.ep)
  std::uint32_t tp = 1;     // GPUs per rank (parallel.tp with ep > 1): GPU r * tp + j is rank r's member j
  std::uint32_t nodes = 1;  // over gpus * tp GPUs
  plan::ExpertMap map;
  std::vector<plan::MoePlan> plans;                // per rank
  std::vector<std::vector<std::uint32_t>> tokens;  // per rank: global ids of the tokens it computes on
  std::vector<std::uint32_t> own;                  // per rank: tokens it owns (routes)
  std::vector<std::uint64_t> picks;                // per rank: routed picks it computes
  std::vector<std::uint64_t> dispatch_tokens;      // [src * gpus + dst]
  net::TrafficMatrix dispatch{1};                  // bytes: tokens x hidden x activation bytes
  net::TrafficMatrix combine{1};                   // bytes back: tokens x hidden x 2 (bf16)
  // overlap chunked: each micro-batch's share (plan::chunk_tokens), set up
  // as above; empty without overlap.
  std::vector<EpSetup> chunks;
};

// The setup of scenario `sc` (its parallel.ep GPUs, placement and seed).
// Throws BadInput-class errors (sim::NotSimulatable) for a group the
// interconnect cannot hold.
EpSetup ep_setup(const config::ResolvedScenario& sc);

struct EpRankRun {
  PathRun run;
  double before_s = 0;  // first launch to the end of its routing stage
  double after_s = 0;   // the rest: sort, experts (and the output's zeroing)
};

struct EpPathRun {
  std::string path;
  std::vector<EpRankRun> ranks;
  std::vector<std::vector<EpRankRun>> chunk_ranks;  // overlap chunked: [chunk][rank]
  // Over all micro-batches, per rank (its member 0's share when tp > 1).
  // With tp > 1 the combine's time includes the TP reduce before it
  // (tp_reduce), its bytes do not.
  net::CollectiveResult dispatch, combine, tp_reduce;
  std::uint32_t tp = 1;
  EpTimeline timeline;
  double total_s = 0;
  std::uint32_t slowest = 0;  // the rank with the most compute
  config::Json metrics;       // summary.json's paths[] entry
  std::string trace;          // trace.json text: one track per GPU (when asked)
};

// A GPU's run split at its dispatch (before_s, after_s).
EpRankRun ep_rank_run(PathRun run);

// The single-GPU simulations an expert-parallel layer needs: job j < gpus is
// GPU j's whole share (setup.plans[j]); with overlap chunked, job
// gpus (c + 1) + g is GPU g's micro-batch c (setup.chunks[c].plans[g]).
std::uint32_t ep_jobs(const EpSetup& setup);

// Job `job`'s layer of `path` on a fresh machine (a child process,
// run_path_fresh), without a trace of its own.
PathRun run_ep_job(const config::ResolvedScenario& sc, const EpSetup& setup, std::uint32_t job,
                   const std::string& path);

// The layer from every GPU's run of `path` (`gpu_runs`, in GPU order, of
// setup.plans) and, with overlap chunked, of every micro-batch (`chunk_runs`
// [chunk][gpu], of setup.chunks[chunk].plans): the collectives, the
// timeline, the metrics and (opts.trace) the trace. Whether the GPUs ran in
// this process's children or on other MPI ranks (ep_mpi.h), the same runs
// give the same bytes.
EpPathRun assemble_ep_path(const config::ResolvedScenario& sc, const EpSetup& setup, const std::string& path,
                           std::vector<EpRankRun> gpu_runs, const sim::SimOptions& opts,
                           std::vector<std::vector<EpRankRun>> chunk_runs = {});

// The same from every job's run (`job_runs`, in job order, ep_jobs of them).
EpPathRun assemble_ep_jobs(const config::ResolvedScenario& sc, const EpSetup& setup, const std::string& path,
                           std::vector<PathRun> job_runs, const sim::SimOptions& opts);

// Runs `path` of every job on a fresh machine (a child process each), one
// after another, and assembles the layer: the single-process mode.
EpPathRun run_ep_path(const config::ResolvedScenario& sc, const EpSetup& setup, const std::string& path,
                      const sim::SimOptions& opts);

// summary.json's "layer" object of an expert-parallel layer: the draw's
// tokens, load spread over all experts and capacity, and under "ep" the
// group, the placement, each rank's share (with its own plan's layer
// summary) and the dispatch's token matrix.
config::Json ep_layer_summary(const config::ResolvedScenario& sc, const EpSetup& setup);

// Prints the per-rank table of one path.
void print_ep_path(const EpPathRun& r, const EpSetup& setup);

}  // namespace tdmsim::cli
