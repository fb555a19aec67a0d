// The expert-parallel layer's outputs beyond the per-rank table
// (docs/expert-parallel.md "Outputs"): trace.json's tracks per GPU and the
// summary's account of overlap chunked.
#pragma once

#include <string>
#include <vector>

#include "apps/tdmsim/ep_layer.h"

namespace tdmsim::cli {

// trace.json text on the layer's clock. Without overlap: one track per GPU
// (its routing kernels, the wait for the last rank, the dispatch, its sort
// and expert kernels, the wait, the combine). overlap chunked: per GPU a
// compute track (every micro-batch's kernels where the timeline put them)
// and a communication track (each micro-batch's dispatch and combine).
std::string ep_trace(const EpPathRun& run, bool chunked);

// summary.json paths[].ep.chunked: the micro-batches, the layer without
// overlap on the same draw (`whole`), the micro-batches one after another,
// and each micro-batch's collectives and spans.
config::Json ep_chunked_json(const EpTimeline& t, const EpTimeline& whole,
                             const std::vector<net::CollectiveResult>& dispatch,
                             const std::vector<net::CollectiveResult>& combine);

}  // namespace tdmsim::cli
