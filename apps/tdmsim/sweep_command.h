#pragma once

#include "apps/tdmsim/config_commands.h"

namespace CLI {
class App;  // CLI11; only the .cpp files include it
}

namespace tdmsim::cli {

// `tdmsim sweep SWEEP.yaml --output DIR [-j N]`: every point of a sweep, in
// parallel child processes (and over MPI ranks under mpirun), resumable; and
// the hidden `tdmsim sweep-point` that runs one point in such a child.
void add_sweep_commands(CLI::App& app, CommandResult& result);

}  // namespace tdmsim::cli
