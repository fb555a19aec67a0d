// The links between a package's I/O dies (sim/mem/iod_links.h, machine
// memory.fabric.iods): two dies' traffic to memory on other IODs contends on
// the ports it shares; a partition whose memory pool lies on its own IOD
// (nps4) crosses nothing.
#include <catch2/catch.hpp>

#include <filesystem>
#include <vector>

#include "sim/mem/iod_links.h"
#include "sim/platform/partitioned_gpu.h"
#include "tests/sim/fork_run.h"
#include "tests/sim/stream_kernel.h"
#include "workloads/config/loader.h"
#include "workloads/specs/partition.h"

namespace iod_links_test {  // named: the sim tests build in unity batches

using namespace tdmsim;
namespace fs = std::filesystem;

// MI300X in `p`, with 4 IODs whose ports carry `link_tbps` TB/s (0: no iods: section).
MachineSpec mi300x(PartitionSpec p, double link_tbps) {
  const fs::path root = fs::path(TDMSIM_SOURCE_DIR) / "workloads";
  const config::Loader loader({root});
  MachineSpec m = loader.machine(root / "machines/mi300x.yaml").spec;
  m.partition = p;
  m.memory.fabric.iods.reset();
  if (link_tbps > 0) m.memory.fabric.iods = IodSpec{4, units::Bandwidth{static_cast<std::uint64_t>(link_tbps * 1e12)}, 0};
  return m;
}

// The last stream's end of the streams on `parts` of `m` together.
sim::Tick together(const MachineSpec& m, std::vector<std::uint32_t> parts) {
  return tdmsim::test::in_child<sim::Tick>([&] {
    sim::PartitionedGpu gpu(m);
    std::vector<std::vector<isa::KernelLaunch>> k;
    for (auto p : parts) k.push_back(tdmsim::test::stream_kernel(partition_memory_base(m, p), 304));
    std::vector<sim::TenantStream> s;
    for (std::size_t i = 0; i < parts.size(); ++i) s.push_back({parts[i], &k[i]});
    sim::Tick end = 0;
    for (const auto& t : gpu.run(s)) end = std::max(end, t.back().end - t.front().launch);
    return end;
  });
}

}  // namespace iod_links_test

TEST_CASE("IodLinks: two dies' transfers contend on the ports they share", "[iod]") {
  tdmsim::sim::StatRegistry stats;
  tdmsim::sim::IodLinks links(4, tdmsim::units::Bandwidth{1'000'000'000'000ull}, stats, "iod");  // 1 TB/s: 1 ps a byte
  // 4000 B from IOD 0: 1000 B stay on IOD 0, 3000 B cross IOD 0's port, 1000 B each other port.
  CHECK(links.transfer(0, 4000, 0) == 3000);
  // The same from IOD 1 at the same instant: its own port already carries
  // IOD 0's share from IOD 1 (1000 ps), and its 1000 B through IOD 0's port
  // wait for IOD 0's 3000 ps.
  CHECK(links.transfer(1, 4000, 0) == 4000);
  // Alone (fresh links), IOD 1's transfer takes 3000 ps as IOD 0's did.
  tdmsim::sim::StatRegistry stats2;
  tdmsim::sim::IodLinks fresh(4, tdmsim::units::Bandwidth{1'000'000'000'000ull}, stats2, "iod");
  CHECK(fresh.transfer(1, 4000, 0) == 3000);
  const auto j = stats.to_json();
  CHECK(j["iod[0].link_bytes"]["value"].get<double>() == 4000);
  CHECK(j["iod[0].link_busy_time"]["value"].get<double>() == 4000);
}

TEST_CASE("streams on two partitions contend on the IOD links under nps1 and not under nps4", "[iod][partitioned]") {
  // NPS1 + CPX: partitions 0 and 1 are the two dies of IOD 0; most of their
  // interleaved memory is on the other IODs.
  const tdmsim::PartitionSpec nps1{tdmsim::ComputePartition::cpx, tdmsim::MemoryPartition::nps1};
  CHECK(tdmsim::partition_machine(iod_links_test::mi300x(nps1, 1.0)).memory.fabric.iods->count == 4);
  const tdmsim::sim::Tick free_one = iod_links_test::together(iod_links_test::mi300x(nps1, 0), {0});
  const tdmsim::sim::Tick free_two = iod_links_test::together(iod_links_test::mi300x(nps1, 0), {0, 1});
  const tdmsim::sim::Tick tight_one = iod_links_test::together(iod_links_test::mi300x(nps1, 1.0), {0});
  const tdmsim::sim::Tick tight_two = iod_links_test::together(iod_links_test::mi300x(nps1, 1.0), {0, 1});
  INFO("nps1: free " << free_one << " / " << free_two << " ps, 1 TB/s links " << tight_one << " / " << tight_two);
  // A die alone already crosses more than 1 TB/s: the links bind it.
  CHECK(tight_one > free_one);
  // Together the two dies share IOD 0's port: each takes about twice as long as alone.
  CHECK(static_cast<double>(tight_two) > 1.6 * static_cast<double>(tight_one));
  CHECK(static_cast<double>(tight_two) > 1.3 * static_cast<double>(free_two));

  // NPS4 + CPX: each quarter of the memory lies on the IOD below it, so
  // nothing crosses: the same times as without the links.
  const tdmsim::PartitionSpec nps4{tdmsim::ComputePartition::cpx, tdmsim::MemoryPartition::nps4};
  CHECK(!tdmsim::partition_machine(iod_links_test::mi300x(nps4, 1.0)).memory.fabric.iods);
  CHECK(iod_links_test::together(iod_links_test::mi300x(nps4, 1.0), {0, 2}) == iod_links_test::together(iod_links_test::mi300x(nps4, 0), {0, 2}));
  CHECK(iod_links_test::together(iod_links_test::mi300x(nps4, 1.0), {0, 1}) == iod_links_test::together(iod_links_test::mi300x(nps4, 0), {0, 1}));
}
