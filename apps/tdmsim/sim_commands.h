#pragma once

#include <CLI/CLI.hpp>

#include "apps/tdmsim/config_commands.h"

namespace tdmsim::cli {

// `tdmsim microbench ...`: the simulator's calibration microbenchmarks.
void add_sim_commands(CLI::App& app, CommandResult& result);

}  // namespace tdmsim::cli
