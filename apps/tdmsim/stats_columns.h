// A run's stats object ({"gpu.xcd[0].l2.hits": {"value", "unit", "desc"},
// ...}, sim::StatRegistry::to_json) in columns, for its crossing from the
// child process that simulated a path to the parent that writes stats.json
// (layer_sim.cpp, run_path_fresh): its keys, its values, and an index into
// its (unit, description) pairs, which repeat from block to block.
// Host-speed machinery: the object itself, sent as it is, is the reference
// (tests/unit/test_stats_columns.cpp checks that both give the same object).
// Sent as an object, every key of the thousands would be looked up among the
// keys before it when decoded (ordered_json's map searches linearly), and
// every description would cross once per block: together more than a tenth
// of the instructions of a 64-token DeepSeek-V3 `tdmsim run`
// (docs/performance.md).
#pragma once

#include "workloads/config/writer.h"

namespace tdmsim::cli {

// The columns of `stats`, an object of {"value", "unit", "desc"} objects
// with unique keys (what StatRegistry::to_json writes).
config::Json stats_to_columns(const config::Json& stats);
// The stats object again, in its order, from `columns` (moved from).
config::Json stats_from_columns(config::Json&& columns);

}  // namespace tdmsim::cli
