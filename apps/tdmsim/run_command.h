#pragma once

#include <CLI/CLI.hpp>

#include "apps/tdmsim/config_commands.h"

namespace tdmsim::cli {

// `tdmsim run SCENARIO.yaml`: one MoE layer on the timing model, through
// today's software kernels, the TDM MoE descriptor unit, or both.
void add_run_command(CLI::App& app, CommandResult& result);

}  // namespace tdmsim::cli
