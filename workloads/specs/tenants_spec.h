// Several scenarios at once on the partitions of one partitioned GPU
// (docs/partitions.md "Tenants"): a file of `kind: tenants` names the
// partitioned machine and each tenant's scenario and compute partition.
// `tdmsim run` times every tenant alone on its partition (the rest of the GPU
// idle) and all of them together (shared HBM and MALL), per path.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workloads/config/schema.h"
#include "workloads/specs/enums.h"

namespace tdmsim::config {
class Checker;
}

namespace tdmsim {

struct TenantsSpec {
  std::string name;
  std::string description;
  std::string machine;
  ExecPath path{};
  std::vector<std::string> scenarios;
  std::vector<std::uint32_t> partitions;

  template <class V>
  void visit(V& v) {
    using config::Default;
    using config::Required;
    v.param(name, "name", "short name used in reports", Required{});
    v.param(description, "description", "one line on what these tenants study");
    v.param(machine, "machine",
            "the partitioned machine the tenants share (name or path; its partition: section gives the "
            "partitions); replaces each tenant scenario's machine",
            Required{});
    v.param(path, "path",
            "simulated execution path of every tenant: software, tdm or both (each path its own alone and "
            "together runs)",
            Default{ExecPath::both});
    v.param(scenarios, "scenarios",
            "the tenants: one scenario each (name or path relative to this file), each one MoE layer "
            "(no serving: or parallel.ep > 1); at most one per compute partition",
            Required{});
    v.param(partitions, "partitions",
            "the compute partition of each tenant, in the order of scenarios (default: tenant i on "
            "partition i); with nps4 the partitions above one memory quarter share it");
  }
};

// Checks of the file alone: partitions one per tenant, none twice.
void check(const TenantsSpec& s, config::Checker& c);

// The compute partition tenant `i` runs on.
std::uint32_t tenant_partition(const TenantsSpec& s, std::size_t i);

}  // namespace tdmsim
