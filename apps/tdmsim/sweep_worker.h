// Running sweep points. SystemC allows one elaboration per process, so every
// point runs in a child process of its own: this executable's hidden
// `sweep-point` command, which reads the point on stdin and writes its result
// as one JSON line on stdout. A point that crashes fails alone. oneTBB threads
// each drive one child at a time, so -j N keeps N points in flight.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "workloads/config/writer.h"

namespace tdmsim::cli {

// What became of one point.
struct PointOutcome {
  std::uint64_t point = 0;
  std::uint32_t draw = 0;  // which routing draw of the point (repeat: N), 0..N-1
  bool ok = false;
  config::Json result;  // sweep-point's output when ok
  std::string error;    // why not, when !ok
  double wall_s = 0;

  config::Json to_json() const;
  static PointOutcome from_json(const config::Json& j);
};

// The request a child reads on stdin.
struct PointRequest {
  std::string sweep_file;  // absolute
  std::uint64_t point = 0;
  std::vector<std::uint32_t> choice;
  std::uint32_t draw = 0;  // routing draw: the point runs with its scenario seed + draw
};

// Runs one point in a child process of `exe` (normally /proc/self/exe).
PointOutcome run_point_process(const std::string& exe, const PointRequest& request);

// Runs points with `jobs` oneTBB threads, each driving one child at a time,
// until `next` returns nothing; `done` is called (from those threads) for each
// outcome.
void run_points(int jobs, const std::function<std::optional<PointRequest>()>& next,
                const std::function<void(const PointOutcome&)>& done);

// The executable to spawn for points: this one (/proc/self/exe).
std::string self_executable();

}  // namespace tdmsim::cli
