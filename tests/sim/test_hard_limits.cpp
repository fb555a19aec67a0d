// The simulator's hard limits (issue 19): a kernel that cannot reside on a CU
// is refused before the run, the watchdog ends a run past its time limit,
// SystemC's reports and every other exception map to the exit-code
// contract, and the host-memory estimate refuses a machine too large.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "sim/core/sim_error.h"
#include "sim/mem/hbm.h"
#include "sim/platform/gpu.h"
#include "sim/platform/host_memory.h"
#include "sim/programs/microbench.h"
#include "workloads/config/loader.h"
#include "tests/sim/shipped_inputs.h"

namespace {

using tdmsim::test::shipped_machine;

using namespace tdmsim;
namespace fs = std::filesystem;

// One workgroup per id, each loading 64 KiB, with `lds` bytes of LDS;
// program(wg) throws for wg >= `throw_from` (a fault inside the run).
isa::KernelLaunch kernel(std::uint32_t workgroups, std::uint32_t lds, std::uint32_t throw_from = ~0u) {
  return {"probe", workgroups,
          [=](std::uint32_t wg) {
            if (wg >= throw_from) throw std::runtime_error("probe fault in workgroup " + std::to_string(wg));
            isa::TileProgram p;
            p.threads = 256;
            p.vgprs_per_thread = 32;
            p.lds_bytes = lds;
            p.prologue_loads.push_back(isa::strided((1ull << 32) + std::uint64_t{wg} * 65536, 65536));
            return p;
          },
          nullptr, nullptr};  // hardware dispatch, hardware routing
}

}  // namespace

TEST_CASE("a kernel that does not fit on a CU is refused before the run and named", "[limits]") {
  const MachineSpec m = shipped_machine("mi300x");
  sim::Gpu gpu(m);
  const std::vector<isa::KernelLaunch> k{kernel(4, 1u << 20)};  // 1 MiB of LDS, the CU has 64 KiB
  try {
    gpu.run(k);
    FAIL("no error");
  } catch (const sim::NotSimulatable& e) {
    const std::string what = e.what();
    CHECK(what.find("kernel probe does not fit on a CU") != std::string::npos);
    CHECK(what.find("compute.lds_per_cu is 64KiB") != std::string::npos);
    CHECK(sim::classify(std::current_exception()).bad_input);
  }
}

TEST_CASE("the watchdog ends a run still going at its time limit", "[limits]") {
  const MachineSpec m = shipped_machine("mi300x");
  sim::Gpu gpu(m);
  sim::AddressSpace as;
  const std::vector<isa::KernelLaunch> k{sim::programs::stream_copy(as, 256ull << 20)};
  // 256 MiB copied takes ~100 us; stop it 1 us after the launch overhead,
  // while the compute units are running it.
  const sim::Tick limit = sim::ticks(m.launch.kernel_launch) + sim::kTicksPerUs;
  try {
    gpu.run(k, limit);
    FAIL("no error");
  } catch (const sim::SimulationStalled& e) {
    const std::string what = e.what();
    CHECK(what.find("kernel stream_copy") != std::string::npos);
    CHECK(what.find("time limit") != std::string::npos);
    const auto f = sim::classify(std::current_exception());
    CHECK_FALSE(f.bad_input);
    CHECK(f.message == what);
  }
}

TEST_CASE("the watchdog's limit leaves a normal run alone", "[limits]") {
  const MachineSpec m = shipped_machine("mi300x");
  sim::Gpu gpu(m);
  sim::AddressSpace as;
  const std::vector<isa::KernelLaunch> k{sim::programs::stream_copy(as, 64ull << 20)};
  const double floor_s = 2.0 * (64ull << 20) / static_cast<double>(m.memory.hbm.bandwidth.bytes_per_s);
  const auto limited = gpu.run(k, sim::stall_limit(m, floor_s, k));
  REQUIRE(limited.size() == 1);
  CHECK(limited[0].end > limited[0].start);
}

TEST_CASE("the watchdog's limit follows a slow memory path and a slow fabric crossing", "[limits]") {
  MachineSpec m = shipped_machine("mi300x");
  CHECK(sim::memory_path_slowdown(m) == 1.0);  // HBM is the slowest stage of the shipped part
  sim::AddressSpace as;
  const std::vector<isa::KernelLaunch> k{sim::programs::stream_copy(as, 64ull << 20)};
  const double floor_s = 2.0 * (64ull << 20) / static_cast<double>(m.memory.hbm.bandwidth.bytes_per_s);
  const sim::Tick normal = sim::stall_limit(m, floor_s, k);
  // A 1 GB/s fabric (its schema's minimum) makes every byte that much slower:
  // the run is slow, not stuck, and completes under the limit.
  m.memory.fabric.bandwidth = units::Bandwidth{1'000'000'000ull};
  CHECK(sim::memory_path_slowdown(m) == Approx(static_cast<double>(m.memory.hbm.bandwidth.bytes_per_s) / 1e9));
  const sim::Tick slow = sim::stall_limit(m, floor_s, k);
  CHECK(static_cast<double>(slow) > 1000.0 * static_cast<double>(normal));
  sim::Gpu gpu(m);
  const auto t = gpu.run(k, slow);
  REQUIRE(t.size() == 1);
  CHECK(static_cast<double>(t[0].end - t[0].start) > 100.0 * floor_s * 1e12);
  // A fabric crossing's latency is charged per main-loop iteration and round.
  MachineSpec lat = shipped_machine("mi300x");
  lat.memory.fabric.latency = units::Duration{100'000'000};  // 100 us, the schema's maximum
  CHECK(sim::stall_limit(lat, floor_s, k) > normal);
}

TEST_CASE("an exception inside a SystemC process comes out with its own message as an internal error",
          "[limits]") {
  const MachineSpec m = shipped_machine("mi300x");
  sim::Gpu gpu(m);
  const std::vector<isa::KernelLaunch> k{kernel(4096, 0, 3000)};  // program(0) is fine: passes submit()
  try {
    gpu.run(k);
    FAIL("no error");
  } catch (...) {
    const auto f = sim::classify(std::current_exception());
    CHECK_FALSE(f.bad_input);
    // SystemC's E549 framing is gone: the thrown message is what remains.
    CHECK(f.message.find("probe fault in workgroup 3") != std::string::npos);
    CHECK(f.message.find("E549") == std::string::npos);
    CHECK(f.message.find("In file:") == std::string::npos);
  }
}

TEST_CASE("classify maps the simulator's errors to the exit-code contract", "[limits]") {
  CHECK(sim::classify(std::make_exception_ptr(sim::NotSimulatable("x"))).bad_input);
  CHECK_FALSE(sim::classify(std::make_exception_ptr(sim::SimulationStalled("x"))).bad_input);
  CHECK_FALSE(sim::classify(std::make_exception_ptr(std::logic_error("x"))).bad_input);
  CHECK_FALSE(sim::classify(std::make_exception_ptr(std::bad_alloc())).bad_input);
  CHECK(sim::classify(std::make_exception_ptr(std::bad_alloc())).message.find("TDMSIM_MEMORY_LIMIT") !=
        std::string::npos);
  CHECK_FALSE(sim::classify(std::make_exception_ptr(42)).bad_input);
}

TEST_CASE("the host-memory estimate grows with the machine and names the keys that drive it", "[limits]") {
  MachineSpec m = shipped_machine("mi300x");
  const auto small = sim::machine_memory(m);
  CHECK(small.total() < (1ull << 30));
  m.compute.dies = 64;
  m.compute.cus_per_die = 4096;  // what the schema accepted before: 262144 CUs
  const auto big = sim::machine_memory(m);
  CHECK(big.total() > (6ull << 30));
  try {
    sim::check_memory(big, 4ull << 30, "machine big.yaml");
    FAIL("no error");
  } catch (const sim::NotSimulatable& e) {
    const std::string what = e.what();
    CHECK(what.find("machine big.yaml needs about") != std::string::npos);
    CHECK(what.find("compute.dies x compute.cus_per_die = 64 x 4096") != std::string::npos);
    CHECK(what.find("4.0 GiB") != std::string::npos);
  }
  // A 4 TiB L2 per die: its tag arrays.
  m = shipped_machine("mi300x");
  m.memory.l2.size_per_die = units::Bytes{4ull << 40};
  const auto l2 = sim::machine_memory(m);
  CHECK(l2.total() > (64ull << 30));
  CHECK(l2.describe().find("memory.l2.size_per_die") != std::string::npos);
}

TEST_CASE("TDMSIM_MEMORY_LIMIT sets the limit and a malformed value is bad input", "[limits]") {
  ::setenv("TDMSIM_MEMORY_LIMIT", "3GiB", 1);
  CHECK(sim::memory_limit() == (3ull << 30));
  ::setenv("TDMSIM_MEMORY_LIMIT", "lots", 1);
  CHECK_THROWS_AS(sim::memory_limit(), sim::NotSimulatable);
  ::unsetenv("TDMSIM_MEMORY_LIMIT");
  CHECK(sim::memory_limit() > 0);
}

TEST_CASE("an HBM block whose refresh lasts its interval is refused at elaboration instead of looping forever",
          "[limits]") {
  sim::StatRegistry stats;
  sim::SimClock time;
  HbmSpec spec = config::defaults<HbmSpec>();
  spec.stacks = 1;
  spec.bandwidth = units::Bandwidth{1'000'000'000'000};
  spec.latency = units::Duration{100'000};
  spec.refresh_interval = units::Duration{1'000'000};
  spec.refresh_time = spec.refresh_interval;
  CHECK_THROWS_WITH(sim::Hbm("hbm_refresh", spec, stats, time),
                    Catch::Contains("refresh_time must be shorter than refresh_interval"));
}
