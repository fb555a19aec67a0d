// How much host memory a command may plan to use: the limit every command's
// estimate (sim/platform/host_memory.h, the emulator's) is checked against
// before it allocates, so that a layer too large for the host is bad input
// (exit 2) rather than an allocation failure part-way through.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace tdmsim::util {

// $TDMSIM_MEMORY_LIMIT is not a size above 0.
struct MemoryLimitError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// $TDMSIM_MEMORY_LIMIT (a size such as "8GiB") if set, else three quarters
// of the host's physical memory; at most three quarters of the process's
// address-space limit (`ulimit -v`) where one is set (a quarter is left for
// what estimates do not count: code, stacks, libraries). Throws
// MemoryLimitError for a malformed value.
std::uint64_t memory_limit();

// Where memory_limit() comes from, for messages.
std::string memory_limit_source();

}  // namespace tdmsim::util
