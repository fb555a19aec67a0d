// The CUs' slot time by cause (sim/core/slot_time.h), as each kernel's timing
// carries it: every picosecond of every slot between a kernel's start and
// its CU's last workgroup end is in one cause, each host-launched workgroup
// pays the dispatch latency once, and nothing waits for a release time.
#include <catch2/catch.hpp>

#include <filesystem>
#include <vector>

#include "sim/platform/gpu.h"
#include "workloads/config/loader.h"

namespace {

using namespace tdmsim;
namespace fs = std::filesystem;

// `n` workgroups of a short loop each (a 4 KiB load of its own per
// iteration, a small matrix product) and a store.
isa::KernelLaunch grid(std::uint32_t n) {
  return {"grid", n, [](std::uint32_t wg) {
            isa::TileProgram p;
            p.threads = 256;
            p.vgprs_per_thread = 128;
            isa::Loop loop;
            loop.iterations = 8;
            loop.m = 32;
            loop.n = 64;
            loop.k = 64;
            loop.dtype = DType::bf16;
            loop.loads.push_back(isa::strided((1ull << 36) + std::uint64_t{wg} * 32768, 4096, 1, 0, 4096));
            p.loops.push_back(std::move(loop));
            p.stores.push_back(isa::strided((1ull << 38) + std::uint64_t{wg} * 4096, 4096));
            return p;
          },
          nullptr, nullptr};  // hardware dispatch, hardware routing
}

}  // namespace

TEST_CASE("a kernel's slot time adds up to its slots x its CUs' windows, cause by cause", "[slot_time]") {
  const fs::path root = fs::path(TDMSIM_SOURCE_DIR) / "workloads";
  const config::Loader loader({root});
  const MachineSpec m = loader.machine(root / "machines/mi300x.yaml").spec;
  sim::Gpu gpu(m);
  // Fewer workgroups than CUs (most slots never used), and several waves.
  const std::vector<isa::KernelLaunch> k{grid(43), grid(5000)};
  const auto t = gpu.run(k);
  REQUIRE(t.size() == 2);
  const std::uint64_t cus = m.compute.total_cus();
  for (std::size_t i = 0; i < t.size(); ++i) {
    const sim::SlotTime& s = t[i].slots;
    INFO("kernel " << i << ", " << t[i].workgroups << " workgroups");
    REQUIRE(t[i].slots_per_cu > 0);
    CHECK(s.total() == s.window_ps * t[i].slots_per_cu);
    CHECK(s.window_ps <= cus * (t[i].work_end - t[i].start));
    CHECK(t[i].work_end <= t[i].end);
    CHECK(s[sim::SlotCause::dispatch] == std::uint64_t{t[i].workgroups} * m.launch.workgroup_dispatch.ps);
    CHECK(s[sim::SlotCause::slot_wait] == 0);  // the host releases every workgroup at once
    CHECK(s[sim::SlotCause::compute] > 0);
    CHECK(s[sim::SlotCause::memory] > 0);
    CHECK(s[sim::SlotCause::gather] == 0);  // no gathered loads
  }
  // 43 workgroups on 304 CUs: most CUs and slots have nothing to run.
  CHECK(t[0].slots[sim::SlotCause::idle] > 0);
  CHECK(t[0].slots.window_ps < cus * (t[0].work_end - t[0].start));
}
