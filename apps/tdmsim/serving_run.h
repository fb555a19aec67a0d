// `tdmsim run` on a scenario with a serving: section (docs/serving.md): the
// request stream of serving_queue.h on each path, every layer of every batch
// simulated on a fresh machine (run_path_fresh) with its own routing draw,
// per-request latency in summary.json, requests.csv, batches.csv and the text
// summary; --trace writes the batches as a Perfetto trace.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "apps/tdmsim/output_dir.h"
#include "workloads/config/resolved.h"
#include "workloads/config/writer.h"

namespace tdmsim::cli {

struct ServingRunOptions {
  bool trace = false;
  bool quiet = false;
};

// Runs the stream of `sc` (sc.scenario.spec.serving set) on `paths`; writes
// into `dir` when given (config.json is `resolved`). Returns the exit code.
int run_serving(const config::ResolvedScenario& sc, const std::vector<std::string>& paths, const std::string& not_run,
                const ServingRunOptions& o, config::Json resolved, StagedDir* dir,
                std::chrono::steady_clock::time_point wall0);

}  // namespace tdmsim::cli
