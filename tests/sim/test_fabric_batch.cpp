// The fabric link's batch (Fabric::b_transport: one reservation of the
// runs' summed durations, each rounded through CeilRatio) against the same
// runs sent one by one, all arriving at once: the same completions, bytes
// and later link state. The memory below answers at once, so the link's
// occupancy is what every answer shows.
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <random>
#include <vector>

#include <systemc>

#include "sim/mem/fabric.h"
#include "sim/mem/run_batch.h"
#include "tests/sim/fork_run.h"
#include "tests/sim/hash_mix.h"
#include "tests/sim/mem_stubs.h"
#include "workloads/config/loader.h"

using namespace tdmsim;
using namespace tdmsim::sim;

namespace {

struct FabricOutcome {
  std::uint64_t answers = 0;  // FNV-1a over every answer's completion
  std::uint64_t bytes = 0;
  std::uint64_t latest = 0;  // the last answer (the link was busy)
};

FabricOutcome drive_fabric(bool batched) {
  const std::filesystem::path root = std::filesystem::path(TDMSIM_SOURCE_DIR) / "workloads";
  const config::Loader loader({root});
  const MachineSpec m = loader.machine(root / "machines/mi355x.yaml").spec;
  StatRegistry stats;
  SimClock time;
  Fabric fabric("fabric", m.memory.fabric, m.compute.dies, stats, time);
  sim::test::StubMemory memory("memory", 0);
  sim::test::Requester cpu("cpu");
  cpu.socket.bind(fabric.target);
  fabric.initiator.bind(memory.target);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  FabricOutcome o;
  o.answers = tdmsim::test::kHashStart;
  MemPort port;
  std::mt19937_64 rng(17);
  Tick at = 0;
  std::vector<ByteRun> runs;
  for (int step = 0; step < 2000; ++step) {
    runs.clear();
    const std::uint64_t count = 1 + rng() % 40;
    std::uint64_t addr = (rng() % (1ull << 30)) & ~127ull;
    for (std::uint64_t i = 0; i < count; ++i) {
      const std::uint64_t bytes = rng() % 4 == 0 ? 1 + rng() % 300000 : 128 * (1 + rng() % 64);
      runs.push_back({addr, bytes});
      addr += bytes + 128 * (1 + rng() % 8);  // (never touching: a batch's runs are merged)
    }
    const bool write = rng() % 3 == 0;  // (the link serves both alike)
    Tick done = 0;
    if (batched) {
      done = port.send(cpu.socket, batch_access(runs, write, 0), at, 0);
    } else {
      for (const ByteRun& r : runs) {
        done = std::max(done, port.send(cpu.socket, MemAccess{r.addr, static_cast<std::uint32_t>(r.bytes), 1, 0,
                                                              write, 0}, at, 0));
      }
    }
    tdmsim::test::hash_mix(o.answers, done);
    o.latest = done;
    // Often before the link is free again, so that runs queue behind earlier ones.
    at += rng() % 2 == 0 ? 0 : rng() % (200 * kTicksPerNs);
  }
  o.bytes = static_cast<std::uint64_t>(stats.sum("fabric", "bytes"));
  return o;
}

}  // namespace

TEST_CASE("the fabric link serves a batch as its runs one by one", "[run_batch][fabric]") {
  const FabricOutcome ref = tdmsim::test::in_child<FabricOutcome>([] { return drive_fabric(false); });
  const FabricOutcome got = tdmsim::test::in_child<FabricOutcome>([] { return drive_fabric(true); });
  CHECK(ref.latest > 2000 * 100 * kTicksPerNs);  // the link was the bound: it queued
  CHECK(got.bytes == ref.bytes);
  CHECK(got.latest == ref.latest);
  CHECK(got.answers == ref.answers);
}
