// The ranking a one-at-a-time sweep (`mode: oat`) gives: how far each
// parameter's values move the TDM speedup (software time / TDM time) away
// from the base point's, written as sensitivity.csv and sensitivity.json in
// the sweep's folder (`tdmsim plot sensitivity.csv` draws the tornado).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "workloads/config/writer.h"
#include "workloads/specs/sweep_spec.h"

namespace tdmsim::cli {

// The ranking from a finished oat sweep's journal rows (results.jsonl, point
// order): parameters by swing (largest speedup minus smallest over the
// parameter's values), largest first, ties in axis order. Empty (null) when
// some point lacks the software or the TDM path: there is no speedup to rank by.
config::Json sensitivity_ranking(const SweepSpec& spec, const std::vector<config::Json>& rows);

// sensitivity.csv: one row per parameter, in rank order.
std::string sensitivity_csv(const config::Json& ranking);

// Reads `dir`/results.jsonl and writes sensitivity.json and sensitivity.csv
// (atomically); returns false, writing nothing, when the ranking is empty.
bool write_sensitivity(const std::filesystem::path& dir, const SweepSpec& spec);

}  // namespace tdmsim::cli
