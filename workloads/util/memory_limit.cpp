#include "workloads/util/memory_limit.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "workloads/config/units.h"

namespace tdmsim::util {

namespace {

std::uint64_t address_space_limit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_AS, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return UINT64_MAX;
  return static_cast<std::uint64_t>(r.rlim_cur) / 4 * 3;
}

bool env_set() {
  const char* env = std::getenv("TDMSIM_MEMORY_LIMIT");
  return env != nullptr && *env != '\0';
}

// The limit from the environment or the host, before the address space's.
std::uint64_t configured_limit() {
  if (env_set()) {
    const char* env = std::getenv("TDMSIM_MEMORY_LIMIT");
    const auto p = units::parse_bytes(env);
    if (!p || p.value.bytes == 0) {
      throw MemoryLimitError(std::string("TDMSIM_MEMORY_LIMIT='") + env +
                             "': " + (p ? std::string("must be more than 0B") : p.error));
    }
    return p.value.bytes;
  }
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return UINT64_MAX;  // unknown: no limit
  return static_cast<std::uint64_t>(pages) / 4 * 3 * static_cast<std::uint64_t>(page);
}

}  // namespace

std::uint64_t memory_limit() { return std::min(configured_limit(), address_space_limit()); }

std::string memory_limit_source() {
  if (address_space_limit() < configured_limit()) {
    return "three quarters of this process's address-space limit, ulimit -v";
  }
  return env_set() ? "TDMSIM_MEMORY_LIMIT" : "three quarters of this host's memory; TDMSIM_MEMORY_LIMIT sets another";
}

}  // namespace tdmsim::util
