// `tdmsim gpu-case SCENARIO.yaml --output DIR`: writes the GPU case of a
// scenario (docs/gpu-kernels.md "Case files"), the input of the GPU runner
// tdmsim-gpu, which needs neither SystemC nor the YAML libraries.
#pragma once

#include "apps/tdmsim/config_commands.h"

namespace CLI {
class App;  // CLI11; only the .cpp files include it
}

namespace tdmsim::cli {

void add_gpu_case_command(CLI::App& app, CommandResult& result);

}  // namespace tdmsim::cli
