// `tdmsim run` on a tenants file (kind: tenants, docs/partitions.md
// "Tenants"): every tenant's MoE layer alone on its partition (the
// partition's machine, the rest of the GPU idle: what `tdmsim run SCENARIO
// --machine PARTITIONED` gives, the buffers at the partition's memory base)
// and all tenants together on one partitioned GPU (sim/platform/
// partitioned_gpu.h: shared HBM and MALL), per path; each tenant's
// interference figure (together / alone - 1). summary.json, stats.json (the
// together runs), config.json and, with --trace, trace.json (the together
// runs: a track group per die, named by its partition, and each tenant's
// stages).
#pragma once

#include <string>

namespace tdmsim::cli {

struct TenantsRunOptions {
  std::string file;
  std::string path;    // empty: the file's
  std::string output;  // empty: no files
  bool trace = false;
  bool quiet = false;
  bool force = false;
};

// Whether `file` says kind: tenants (anything unreadable: no, and the
// scenario reader reports it).
bool is_tenants_file(const std::string& file);

// Returns the exit code; bad input throws (BadInput, config::ConfigError,
// sim::NotSimulatable) before anything is written.
int run_tenants(const TenantsRunOptions& o);

}  // namespace tdmsim::cli
