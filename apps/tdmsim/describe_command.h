// `tdmsim describe`: decode a MoE (TDMM) or tensor (TDMT) descriptor file,
// validate it and print it as text or JSON; or write an example file.
#pragma once

#include <iosfwd>
#include <string>

#include "apps/tdmsim/config_commands.h"

namespace CLI {
class App;  // CLI11; only the .cpp files include it
}

namespace tdmsim::cli {

struct DescribeOptions {
  std::string file;             // descriptor file to show
  std::string format = "text";  // text | json
  std::string output;           // write the dump (or the example) here instead of stdout
  std::string example;          // moe | tensor: write an example descriptor file to `output`
  bool force = false;           // replace an existing `output`
};

// The command's behaviour without CLI parsing (tests call this). Exit codes:
// 0 ok; 1 I/O failure; 2 invalid or corrupt descriptor (error code, byte
// offset and message on `err`), unusable options or an unusable `output`
// (exists without `force`, a folder, or in a folder that cannot be written).
int run_describe(const DescribeOptions& opts, std::ostream& out, std::ostream& err);

void add_describe_command(CLI::App& app, CommandResult& result);

}  // namespace tdmsim::cli
