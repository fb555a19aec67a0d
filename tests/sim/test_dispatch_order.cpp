// Where the dispatcher puts a host-launched kernel's workgroups
// (launch.workgroup_order, sim/platform/dispatcher.h): with die_round_robin,
// as AMD's multi-XCD parts dispatch, workgroup i runs on die i mod dies and a
// small grid takes one slot on each of a die's CUs before a second on any;
// with die_chunked, die d runs the d-th contiguous run of the grid; with
// index, the first units to start fill all their slots in index order.
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/platform/gpu.h"
#include "workloads/config/loader.h"

namespace {

using namespace tdmsim;
namespace fs = std::filesystem;

// `n` workgroups, each a loop of `iterations` loads of its own: workgroup wg
// reads row_bytes(wg) at its own address, the next iteration the next piece.
template <class RowBytes>
isa::KernelLaunch grid(const char* name, std::uint32_t n, std::uint32_t iterations, RowBytes row_bytes) {
  return {name, n, [iterations, row_bytes](std::uint32_t wg) {
            isa::TileProgram p;
            p.threads = 256;
            p.vgprs_per_thread = 128;
            p.lds_bytes = 0;
            isa::Loop loop;
            loop.iterations = iterations;
            const std::uint32_t bytes = row_bytes(wg);
            loop.loads.push_back(isa::strided((1ull << 36) + std::uint64_t{wg} * 16384, bytes, 1, 0, bytes));
            p.loops.push_back(std::move(loop));
            return p;
          },
          nullptr, nullptr};  // hardware dispatch, hardware routing
}

// `n` workgroups of one short loop each (4 KiB of their own), small enough
// that four fit on a CU at once.
isa::KernelLaunch small_grid(std::uint32_t n) {
  return grid("small", n, 4, [](std::uint32_t) { return 1024u; });
}

// `n` workgroups, workgroup i reading (i + 1) x 128 B of its own once: what a
// die's L2 reads tells which workgroups ran there.
isa::KernelLaunch sized_grid(std::uint32_t n) {
  return grid("sized", n, 1, [](std::uint32_t wg) { return 128 * (wg + 1); });
}

// Bytes each die's L2 was asked to read (`...xcd[d].l2.read_bytes`).
std::map<int, double> l2_reads(sim::Gpu& gpu) {
  std::map<int, double> out;
  const auto stats = gpu.stats().to_json();
  for (const auto& [key, v] : stats.items()) {
    const auto x = key.find("xcd[");
    if (x == std::string::npos || key.find("].l2.read_bytes") == std::string::npos) continue;
    out[std::stoi(key.substr(x + 4))] += v["value"].get<double>();
  }
  return out;
}

// Workgroups run per CU, keyed by (die, cu), from the stats (`...xcd[d].cu[c].workgroups`
// on a multi-die AMD machine, `...die[d].cu[c].workgroups` on others).
std::map<std::pair<int, int>, double> per_cu(sim::Gpu& gpu) {
  std::map<std::pair<int, int>, double> out;
  const auto stats = gpu.stats().to_json();  // kept: items() refers into it
  for (const auto& [key, v] : stats.items()) {
    auto x = key.find("xcd[");
    if (x == std::string::npos) x = key.find("die[");
    const auto c = key.find(".cu[");
    if (x == std::string::npos || c == std::string::npos || key.find(".workgroups") == std::string::npos) continue;
    out[{std::stoi(key.substr(x + 4)), std::stoi(key.substr(c + 4))}] = v["value"].get<double>();
  }
  return out;
}

// A 43-workgroup grid run alone on machine `m`: workgroups per (die, CU).
std::map<std::pair<int, int>, double> small_grid_per_cu(const MachineSpec& m) {
  sim::Gpu g(m);
  const std::vector<isa::KernelLaunch> k{small_grid(43)};  // submit keeps a reference
  g.submit(k);
  sc_core::sc_start();
  g.collect();
  return per_cu(g);
}

}  // namespace

TEST_CASE("die_round_robin puts workgroup i on die i mod dies, one a CU before a second", "[dispatch]") {
  const fs::path root = fs::path(TDMSIM_SOURCE_DIR) / "workloads";
  const config::Loader loader({root});
  MachineSpec rr = loader.machine(root / "machines/mi355x.yaml").spec;  // 8 XCDs x 32 CUs
  rr.launch.workgroup_order = WorkgroupOrder::die_round_robin;
  MachineSpec in = rr;
  in.launch.workgroup_order = WorkgroupOrder::index;
  sim::Gpu a(rr), b(in);  // both before the first sc_start
  const std::vector<isa::KernelLaunch> k{small_grid(43)};
  a.submit(k);
  b.submit(k);
  sc_core::sc_start();
  a.collect();
  b.collect();

  // 43 workgroups over 8 dies: 6 on dies 0-2, 5 on the others; never two on a CU.
  std::map<int, double> die_a;
  double most_a = 0, most_b = 0;
  int used_b = 0;
  for (const auto& [where, n] : per_cu(a)) {
    die_a[where.first] += n;
    most_a = std::max(most_a, n);
  }
  for (const auto& [where, n] : per_cu(b)) {
    used_b += n > 0 ? 1 : 0;
    most_b = std::max(most_b, n);
  }
  REQUIRE(die_a.size() == 8);
  for (int d = 0; d < 8; ++d) {
    INFO("die " << d);
    CHECK(die_a[d] == (d < 3 ? 6 : 5));
  }
  CHECK(most_a == 1);
  // In index order the first CUs to start fill all four slots: 43 on 11 CUs.
  CHECK(used_b == 11);
  CHECK(most_b == 4);
}

TEST_CASE("die_round_robin spreads a die's share over its CUs evenly when it exceeds them", "[dispatch]") {
  const fs::path root = fs::path(TDMSIM_SOURCE_DIR) / "workloads";
  const config::Loader loader({root});
  MachineSpec m = loader.machine(root / "machines/mi355x.yaml").spec;  // 8 XCDs x 32 CUs
  m.launch.workgroup_order = WorkgroupOrder::die_round_robin;
  sim::Gpu g(m);
  // 44 a die, all in the first wave (four fit on a CU): every CU one before any
  // takes two, so CUs 0-11 run two and CUs 12-31 one (not 22 CUs two and 10 none).
  const std::vector<isa::KernelLaunch> k{small_grid(8 * 44)};
  g.submit(k);
  sc_core::sc_start();
  g.collect();
  const auto runs = per_cu(g);
  REQUIRE(runs.size() == 8 * 32);
  for (const auto& [where, n] : runs) {
    INFO("die " << where.first << " cu " << where.second);
    CHECK(n == (where.second < 12 ? 2 : 1));
  }
}

TEST_CASE("launch.kernel_boundary adds its time to each host-launched kernel's end", "[dispatch]") {
  const fs::path root = fs::path(TDMSIM_SOURCE_DIR) / "workloads";
  const config::Loader loader({root});
  MachineSpec with = loader.machine(root / "machines/mi355x.yaml").spec;
  with.launch.kernel_boundary = units::Duration{4'000'000};  // 4 us in ps
  MachineSpec without = with;
  without.launch.kernel_boundary = units::Duration{0};
  sim::Gpu a(with), b(without);
  const std::vector<isa::KernelLaunch> k{small_grid(43), small_grid(43)};
  a.submit(k);
  b.submit(k);
  sc_core::sc_start();
  const auto ta = a.collect();
  const auto tb = b.collect();
  REQUIRE(ta.size() == 2);
  REQUIRE(tb.size() == 2);
  // The first kernel's workgroups run alike; its end (and so its duration in
  // the summary) is 4 us later, and the second kernel is launched that much later.
  CHECK(ta[0].start == tb[0].start);
  CHECK(ta[0].end - tb[0].end == 4'000'000);
  CHECK(ta[1].launch - tb[1].launch == 4'000'000);
  CHECK(ta[1].end - ta[1].start >= tb[1].end - tb[1].start + 4'000'000 - 50'000);
}

TEST_CASE("die_chunked gives die d the d-th contiguous run of the grid, die_round_robin every 8th", "[dispatch]") {
  const fs::path root = fs::path(TDMSIM_SOURCE_DIR) / "workloads";
  const config::Loader loader({root});
  MachineSpec chunked = loader.machine(root / "machines/mi355x.yaml").spec;  // 8 XCDs
  chunked.launch.workgroup_order = WorkgroupOrder::die_chunked;
  chunked.launch.kernel_boundary = units::Duration{0};
  MachineSpec rr = chunked;
  rr.launch.workgroup_order = WorkgroupOrder::die_round_robin;
  sim::Gpu a(chunked), b(rr);
  const std::vector<isa::KernelLaunch> k{sized_grid(43)};
  a.submit(k);
  b.submit(k);
  sc_core::sc_start();
  a.collect();
  b.collect();
  // 43 over 8 dies, 6 on dies 0-2 and 5 on the others: chunked, die 0 runs
  // workgroups 0-5, die 1 6-11, die 3 18-22, die 7 38-42; round robin, die 0
  // runs 0, 8, ..., 40 and die 7 runs 7, 15, ..., 39.
  const auto bytes_of = [](std::initializer_list<int> wgs) {
    double sum = 0;
    for (int w : wgs) sum += 128.0 * (w + 1);
    return sum;
  };
  const auto ca = l2_reads(a), rb = l2_reads(b);
  CHECK(ca.at(0) == bytes_of({0, 1, 2, 3, 4, 5}));
  CHECK(ca.at(1) == bytes_of({6, 7, 8, 9, 10, 11}));
  CHECK(ca.at(3) == bytes_of({18, 19, 20, 21, 22}));
  CHECK(ca.at(7) == bytes_of({38, 39, 40, 41, 42}));
  CHECK(rb.at(0) == bytes_of({0, 8, 16, 24, 32, 40}));
  CHECK(rb.at(7) == bytes_of({7, 15, 23, 31, 39}));
}

TEST_CASE("launch.workgroup_order's default, vendor, is die_round_robin on AMD and index on NVIDIA", "[dispatch]") {
  const fs::path root = fs::path(TDMSIM_SOURCE_DIR) / "workloads";
  const config::Loader loader({root});
  MachineSpec amd = loader.machine(root / "machines/mi355x.yaml").spec;
  amd.launch.workgroup_order = WorkgroupOrder::vendor;
  CHECK(effective_workgroup_order(amd) == WorkgroupOrder::die_round_robin);
  MachineSpec nvidia = loader.machine(root / "machines/h200.yaml").spec;
  CHECK(nvidia.launch.workgroup_order == WorkgroupOrder::vendor);  // h200.yaml does not set it
  CHECK(effective_workgroup_order(nvidia) == WorkgroupOrder::index);
  // (Placement on a two-die NVIDIA machine: the next test case.)
  MachineSpec set = amd;
  set.launch.workgroup_order = WorkgroupOrder::index;  // a machine's own choice stands
  CHECK(effective_workgroup_order(set) == WorkgroupOrder::index);

  // An AMD multi-die machine left at the default spreads a small grid over its
  // dies, as die_round_robin does: 43 workgroups on 8 dies, 5 or 6 on each.
  std::map<int, double> per_die;
  for (const auto& [where, n] : small_grid_per_cu(amd)) per_die[where.first] += n;
  REQUIRE(per_die.size() == 8);
  for (int d = 0; d < 8; ++d) {
    INFO("die " << d);
    CHECK(per_die[d] == (d < 3 ? 6 : 5));
  }
}

TEST_CASE("launch.workgroup_order vendor on a two-die NVIDIA machine places in index order", "[dispatch]") {
  const fs::path root = fs::path(TDMSIM_SOURCE_DIR) / "workloads";
  const config::Loader loader({root});
  MachineSpec two = loader.machine(root / "machines/h200.yaml").spec;
  REQUIRE(two.launch.workgroup_order == WorkgroupOrder::vendor);
  two.compute.cus_per_die /= 2;  // 132 SMs as 2 dies of 66
  two.compute.dies = 2;
  // Index order: the first CUs to start fill all their slots, so the small grid
  // packs onto a few CUs, not spread evenly over the dies (round robin would have
  // put 21 or 22 on each die, one a CU).
  std::map<int, double> per_die;
  double most = 0;
  for (const auto& [where, n] : small_grid_per_cu(two)) {
    per_die[where.first] += n;
    most = std::max(most, n);
  }
  CHECK(per_die[0] + per_die[1] == 43);
  CHECK(most > 1);
  CHECK(std::abs(per_die[0] - per_die[1]) > 2);
}
