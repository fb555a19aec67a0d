#pragma once

#include "apps/tdmsim/config_commands.h"

namespace CLI {
class App;  // CLI11; only the .cpp files include it
}

namespace tdmsim::cli {

// `tdmsim microbench ...`: the simulator's calibration microbenchmarks.
void add_sim_commands(CLI::App& app, CommandResult& result);

}  // namespace tdmsim::cli
