#pragma once

#include <string>

#include "apps/tdmsim/config_commands.h"

namespace CLI {
class App;  // CLI11; only the .cpp files include it
}

namespace tdmsim::cli {

// `tdmsim run SCENARIO.yaml`: one MoE layer on the timing model, through
// today's software kernels, the TDM MoE descriptor unit, or both.
void add_run_command(CLI::App& app, CommandResult& result);

// What `tdmsim run FILE` (a scenario, with its own options) checks before it
// simulates, simulating nothing: the paths the machine has, the plan (its
// routing trace and tuned kernel table read), each path's kernels fitting on
// a CU, an expert-parallel layer's split. Throws what run would (BadInput,
// config::ConfigError, sim::NotSimulatable); `config validate` calls it.
void check_scenario_runs(const std::string& file);

// `config validate`'s RunnableCheck (config_commands.h): a sweep's points as
// `tdmsim sweep --dry-run` checks them, else check_scenario_runs; every
// simulator error that is bad input comes out as BadInput.
void check_runnable_file(const std::string& file);

}  // namespace tdmsim::cli
