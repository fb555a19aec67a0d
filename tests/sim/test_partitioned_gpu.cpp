// Tenants on the partitions of one GPU (sim/platform/partitioned_gpu.h): a
// stream alone on a partition times exactly as the partition's machine does
// (tdmsim run on a partitioned machine); two streams on partitions that share
// memory (nps1; nps4 partitions above one quarter) slow each other down,
// streams on separate quarters do not.
#include <catch2/catch.hpp>

#include <filesystem>
#include <vector>

#include "sim/platform/gpu.h"
#include "sim/platform/partitioned_gpu.h"
#include "tests/sim/fork_run.h"
#include "tests/sim/stream_kernel.h"
#include "workloads/config/loader.h"
#include "workloads/specs/partition.h"

namespace {

using namespace tdmsim;
namespace fs = std::filesystem;

MachineSpec mi300x(PartitionSpec p) {
  const fs::path root = fs::path(TDMSIM_SOURCE_DIR) / "workloads";
  const config::Loader loader({root});
  MachineSpec m = loader.machine(root / "machines/mi300x.yaml").spec;
  m.partition = p;
  return m;
}

struct Ends {
  sim::Tick a = 0, b = 0;  // each stream's last end (b: 0 when one stream)
};

constexpr std::uint32_t kWgs = 608;  // 4 per CU of a DPX partition (152 CUs)

// The streams on `parts` of `m` together (one stream: `parts` of size 1).
Ends together(const MachineSpec& m, std::vector<std::uint32_t> parts) {
  return tdmsim::test::in_child<Ends>([&] {
    sim::PartitionedGpu gpu(m);
    std::vector<std::vector<isa::KernelLaunch>> k;
    for (auto p : parts) k.push_back(tdmsim::test::stream_kernel(partition_memory_base(m, p), kWgs));
    std::vector<sim::TenantStream> s;
    for (std::size_t i = 0; i < parts.size(); ++i) s.push_back({parts[i], &k[i]});
    const auto t = gpu.run(s);
    return Ends{t[0].back().end - t[0].front().launch, t.size() > 1 ? t[1].back().end - t[1].front().launch : 0};
  });
}

}  // namespace

TEST_CASE("a stream alone on a partition times as the partition's machine", "[partitioned]") {
  const MachineSpec m = mi300x({ComputePartition::dpx, MemoryPartition::nps1});
  const sim::Tick alone = tdmsim::test::in_child<sim::Tick>([&] {
    sim::Gpu gpu(partition_machine(m));
    const auto k = tdmsim::test::stream_kernel(partition_memory_base(m, 0), kWgs);
    const auto t = gpu.run(k);
    return t.back().end - t.front().launch;
  });
  REQUIRE(alone > 0);
  CHECK(together(m, {0}).a == alone);
  // Partition 1 (its buffers at its own base): the same machine, the same time.
  const sim::Tick alone1 = tdmsim::test::in_child<sim::Tick>([&] {
    sim::Gpu gpu(partition_machine(m));
    const auto k = tdmsim::test::stream_kernel(partition_memory_base(m, 1), kWgs);
    const auto t = gpu.run(k);
    return t.back().end - t.front().launch;
  });
  CHECK(together(m, {1}).a == alone1);
}

TEST_CASE("two streams sharing HBM slow each other down, separate nps4 quarters do not", "[partitioned]") {
  const MachineSpec dpx = mi300x({ComputePartition::dpx, MemoryPartition::nps1});
  const Ends one = together(dpx, {0});
  const Ends two = together(dpx, {0, 1});
  // Each alone takes about the whole HBM's bandwidth (a DPX partition's fabric
  // share is above it): together they share it.
  CHECK(static_cast<double>(two.a) > 1.3 * static_cast<double>(one.a));
  CHECK(static_cast<double>(two.b) > 1.3 * static_cast<double>(one.a));

  // QPX + NPS4: partitions 0 and 1 read their own quarters.
  const MachineSpec qpx = mi300x({ComputePartition::qpx, MemoryPartition::nps4});
  const Ends q_one = together(qpx, {0});
  const Ends q_two = together(qpx, {0, 1});
  CHECK(q_two.a == q_one.a);
  // CPX + NPS4: partitions 0 and 1 sit above quarter 0 and share it; 0 and 2 do not.
  const MachineSpec cpx = mi300x({ComputePartition::cpx, MemoryPartition::nps4});
  const Ends c_one = together(cpx, {0});
  const Ends c_shared = together(cpx, {0, 1});
  const Ends c_apart = together(cpx, {0, 2});
  CHECK(c_shared.a > c_one.a);
  CHECK(c_apart.a == c_one.a);
}
