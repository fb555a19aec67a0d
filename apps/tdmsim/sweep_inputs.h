// What a sweep point depends on, and whether it can run, decided before
// anything runs:
//   - its inputs hash: the point's resolved scenario, machine and model, its
//     paths, and the content of every file the point reads (the YAML files of
//     each base: chain, the routing trace); a point whose hash changed since it
//     ran is stale and runs again on resume;
//   - the sweep's definition: which points it has (axes, mode, seed), which
//     decides whether an output folder holds this sweep at all;
//   - the checks `tdmsim run` does before it simulates (the plan, with its
//     routing trace read, and each path's kernels and TDM descriptors built),
//     so that a point that would fail is refused with the other bad input.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "apps/tdmsim/input_files.h"
#include "workloads/config/sweep_points.h"

namespace tdmsim::cli {

// FNV-1a, 64 bits: a fingerprint, not a security measure.
struct Fnv1a {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  void add(std::string_view s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 0x100000001b3ULL;
    }
    h ^= 0xff;  // field separator
    h *= 0x100000001b3ULL;
  }
  std::string hex() const;
};

// Hashes of file contents by path, so that files many points share (a machine
// file, a trace) are read once per sweep.
class FileHashes {
 public:
  // The content's hash; a file that cannot be read hashes as "unreadable"
  // (the checks report it).
  std::string of(const std::filesystem::path& file);

 private:
  std::map<std::string, std::string> cache_;
};

// (point_files, machine_files: apps/tdmsim/input_files.h.)

// The point's inputs hash (16 hex digits).
std::string point_inputs_hash(const config::ResolvedPoint& point, FileHashes& files);

// The checks `tdmsim run` does before simulating: builds the plan (reading a
// routing trace) and each path's kernels and TDM descriptors, and checks that
// a CU holds each kernel (check_kernels_fit). Throws config::ConfigError (a
// trace's problems, at its line) or another exception.
void check_runnable(const config::ResolvedPoint& point);

// Resolves and checks every point (config::resolve_all_points, then
// check_runnable, and with `check_memory` the host-memory estimate `tdmsim
// run` checks: the sweep command's, not `config validate`'s, as for run),
// throwing one ConfigError that lists every invalid point; `each` sees every
// valid one.
void check_all_points(const config::Loader& loader, const config::ResolvedSweep& sweep,
                      const std::vector<config::SweepPoint>& points,
                      const std::function<void(const config::SweepPoint&,
                                               const config::ResolvedPoint&)>& each,
                      bool check_memory = false);

}  // namespace tdmsim::cli
