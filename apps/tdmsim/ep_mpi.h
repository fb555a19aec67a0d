// An expert-parallel layer over MPI ranks (`mpirun -np R tdmsim run SCENARIO
// --gpus N`; docs/expert-parallel.md "Running on several processes /
// nodes"). GPU g of the N runs on rank g mod R (R > N: ranks N.. hold none);
// a rank simulates its GPUs one after another, each in a forked child of its
// own (SystemC elaborates one machine per process), and sends their runs to
// rank 0, which computes the collectives' timing and writes every output,
// exactly as the single-process run does (ep_layer.h): the same bytes.
//
// Synchronisation is conservative: rank 0 times a collective only when every
// GPU's input to it (its time before the dispatch, its time after it) has
// arrived. Because no communication overlaps compute (ep_layer.h's timing
// rule), a GPU's kernels do not depend on when its tokens arrive, so both
// communication points are settled by one exchange per run: each GPU's whole
// run carries its before- and after-dispatch times.
//
// Every step ends with all ranks agreeing on its outcome (settle): a failure
// on any rank (bad input, a crashed simulation) makes every rank exit with
// that rank's code, and rank 0 prints its message once; nothing is written.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "apps/tdmsim/ep_layer.h"
#include "apps/tdmsim/sweep_mpi.h"

namespace tdmsim::cli {

// The rank that runs job `job` (ep_jobs: GPU `job` when there are no
// micro-batches) when `ranks` ranks share a layer.
int ep_rank_of_job(std::uint32_t job, int ranks);

// One rank's outcome of a step, as `tdmsim run` alone would end with it.
struct RankOutcome {
  int code = 0;          // exit code (0 ok, 1 failure, 2 bad input)
  std::string message;   // a failure's text, as printed on stderr
  std::string payload;   // the step's result, when ok
};

// Runs `step` (its return value: the payload), catching any failure with
// the exit code and message a single-process `tdmsim run` gives it.
RankOutcome run_guarded(const std::function<std::string()>& step);

// Ends a step on every rank: rank 0 receives every rank's outcome; with a
// failure, rank 0 prints the lowest failed rank's message and every rank
// returns its code; otherwise 0, and on rank 0 `payloads` (if given) gets
// each rank's payload in rank order.
int settle(const MpiSession& mpi, const RankOutcome& mine, std::vector<std::string>* payloads = nullptr);

// Simulates this rank's GPUs of every path in `paths` and settles: on rank 0
// with 0 returned, `payloads` holds every rank's runs (ep_paths_from_ranks
// reads them).
int simulate_ep_gpus_on_ranks(const MpiSession& mpi, const config::ResolvedScenario& sc, const EpSetup& setup,
                              const std::vector<std::string>& paths, std::vector<std::string>* payloads);

// Rank 0: the layer of every path from the ranks' runs (assemble_ep_path).
std::vector<EpPathRun> ep_paths_from_ranks(const config::ResolvedScenario& sc, const EpSetup& setup,
                                           const std::vector<std::string>& paths,
                                           const std::vector<std::string>& payloads, const sim::SimOptions& opts);

}  // namespace tdmsim::cli
