#pragma once

#include "apps/tdmsim/config_commands.h"

namespace CLI {
class App;  // CLI11; only the .cpp files include it
}

namespace tdmsim::cli {

// `tdmsim run SCENARIO.yaml`: one MoE layer on the timing model, through
// today's software kernels, the TDM MoE descriptor unit, or both.
void add_run_command(CLI::App& app, CommandResult& result);

}  // namespace tdmsim::cli
