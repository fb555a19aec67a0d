#pragma once

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

void add_config_commands(CLI::App& app, CommandResult& result);

// A machine, model, scenario, sweep or kernel-profile file fully resolved, as
// `tdmsim config show FILE --format json` prints it (a sweep's points checked
// too). Throws config::ConfigError as the command reports it.
std::string resolved_json(const std::string& file, bool show_origin = false);

// The Markdown YAML reference (docs/yaml-reference.md).
std::string reference_document();

}  // namespace tdmsim::cli
