#pragma once

#include "apps/tdmsim/config_commands.h"

namespace CLI {
class App;  // CLI11; only the .cpp files include it
}

namespace tdmsim::cli {

// `tdmsim collective ...`: one all-to-all or all-gather on a machine's interconnect.
void add_collective_command(CLI::App& app, CommandResult& result);

}  // namespace tdmsim::cli
