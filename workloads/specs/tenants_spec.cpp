#include "workloads/specs/tenants_spec.h"

#include <set>

#include "workloads/config/reader.h"

namespace tdmsim {

void check(const TenantsSpec& s, config::Checker& c) {
  c.one_line("name", s.name);
  c.one_line("description", s.description);
  if (s.scenarios.empty()) c.fail("scenarios", "give at least one tenant scenario");
  if (!s.partitions.empty() && s.partitions.size() != s.scenarios.size()) {
    c.fail("partitions", "gives " + std::to_string(s.partitions.size()) + " partitions for " +
                             std::to_string(s.scenarios.size()) + " tenant scenarios (one each)",
           {"scenarios"});
  }
  std::set<std::uint32_t> seen;
  for (auto p : s.partitions) {
    if (!seen.insert(p).second) {
      c.fail("partitions", "partition " + std::to_string(p) + " is given twice (one tenant per partition)");
    }
  }
}

std::uint32_t tenant_partition(const TenantsSpec& s, std::size_t i) {
  return s.partitions.empty() ? static_cast<std::uint32_t>(i) : s.partitions[i];
}

}  // namespace tdmsim
