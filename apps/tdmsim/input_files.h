// The files a command reads, which it hashes (a sweep point's inputs) and
// which --force must never remove with an output folder that holds one.
#pragma once

#include <filesystem>
#include <vector>

#include "workloads/config/sweep_points.h"

namespace tdmsim::cli {

// Every file `point` reads, in a fixed order: the scenario's and machine's
// base: chains, the machine's kernel profile with its chain, the model's
// chain, then the routing trace if it has one, then the tuned kernel table if
// it names one (kernel.config), then a request stream's arrival trace
// (serving.trace).
std::vector<std::filesystem::path> point_files(const config::ResolvedPoint& point);
// The files a machine was read from: its base: chain, then its kernel
// profile's (a command's inputs, which --force must not remove).
std::vector<std::filesystem::path> machine_files(const config::Loaded<MachineSpec>& machine);

}  // namespace tdmsim::cli
