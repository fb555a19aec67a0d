// `tdmsim emulate SCENARIO.yaml --output DIR`: runs one MoE layer through the
// functional emulator and writes its inputs, routing, sorted layout and
// outputs as .npy files plus summary.json and the resolved config.json
// (docs/emulator.md, "tdmsim emulate").
#pragma once

#include <string>

#include "apps/tdmsim/config_commands.h"

namespace CLI {
class App;  // CLI11; only the .cpp files include it
}

namespace tdmsim::cli {

struct EmulateOptions {
  std::string scenario;
  std::string output;
  bool quiet = false;
  bool force = false;          // replace an existing output folder
  bool intermediates = false;  // also write the gathered rows, gate/up, intermediate, expert outputs
  double max_memory_gib = 8.0; // refuse layers whose emulation would need more
};

// The whole command; returns its exit code (0 ok, 2 bad input, 1 runtime
// failure) after printing any error to stderr. The output folder appears
// complete or not at all: files go to a temporary sibling renamed at the end.
int run_emulate(const EmulateOptions& options);

void add_emulate_command(CLI::App& app, CommandResult& result);

}  // namespace tdmsim::cli
