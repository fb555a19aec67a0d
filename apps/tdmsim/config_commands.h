#pragma once

#include <functional>
#include <string>

namespace CLI {
class App;  // CLI11; only the .cpp files include it
}

namespace tdmsim::cli {

// Conventional exit codes of every tdmsim command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;   // runtime failure (I/O, internal error)
inline constexpr int kExitBadInput = 2;  // invalid configuration or command line

struct CommandResult {
  int exit_code = kExitOk;
};

// What `config validate` checks beyond loading a file, where the checks need
// the simulator's kernels (tdmsim_cli stays free of SystemC): for a scenario,
// what `tdmsim run` checks before simulating; for a sweep, every point as
// `tdmsim sweep --dry-run` checks it. Throws config::ConfigError or BadInput
// for bad input. Empty: only the loading checks.
using RunnableCheck = std::function<void(const std::string& file)>;

void add_config_commands(CLI::App& app, CommandResult& result, RunnableCheck runnable = {});

// A machine, model, scenario, sweep or kernel-profile file fully resolved, as
// `tdmsim config show FILE --format json` prints it (a sweep's points checked
// too). Throws config::ConfigError as the command reports it.
std::string resolved_json(const std::string& file, bool show_origin = false);

// The Markdown YAML reference (docs/yaml-reference.md).
std::string reference_document();

}  // namespace tdmsim::cli
