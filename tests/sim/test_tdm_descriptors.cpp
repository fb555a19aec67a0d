// The TDM unit schedules from the descriptor bytes it fetches (issue #21,
// part 1): per-slot lengths open its time slots, the slot table decides which
// blocks run and (custom) in which order, sync waits are counted signals, and
// a stream read back from its bytes runs exactly as the plan-built one.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>

#include "descriptors/format/moe_builder.h"
#include "descriptors/format/moe_stream.h"
#include "descriptors/format/moe_stream_check.h"
#include "descriptors/plan/moe_plan.h"
#include "sim/platform/gpu.h"
#include "sim/platform/tdm_scheduler.h"
#include "sim/programs/moe_kernels.h"
#include "workloads/config/loader.h"

using namespace tdmsim;
namespace fs = std::filesystem;
using Code = format::DescriptorErrorCode;

namespace {

config::ResolvedScenario tdm_scenario(std::uint32_t tokens, std::uint32_t stages) {
  const fs::path root = fs::path(TDMSIM_SOURCE_DIR);
  const config::Loader loader({root / "workloads"});
  auto sc = loader.resolve_scenario(root / "workloads/scenarios/qwen3-30b-a3b-decode-mi500x-tdm.yaml");
  sc.scenario.spec.tokens = tokens;
  sc.scenario.spec.kernel.stages = stages;
  return sc;
}

// A kernel of 3 blocks x 2 N tiles (block-major grid) and one slot record per block.
struct SmallKernel {
  isa::KernelLaunch k;
  format::MoeDescriptor d;
  SmallKernel() {
    k.workgroups = 6;
    auto hw = std::make_shared<isa::HardwareDispatch>();
    hw->block = {0, 0, 1, 1, 2, 2};
    hw->n_tile = {0, 1, 0, 1, 0, 1};
    k.hardware = hw;
    d.layer.policy = TdmPolicy::custom;
    for (std::uint32_t b = 0; b < 3; ++b) {
      format::TimeSlot s;
      s.expert = b;
      s.block = b;
      s.valid_rows = 1;
      s.length = 1000;
      d.slots.push_back(s);
    }
  }
};

struct Unit {
  MachineSpec m;
  sim::StatRegistry stats;
  std::unique_ptr<sim::Dispatcher> dispatcher;
  std::unique_ptr<sim::TdmScheduler> unit;
  explicit Unit(const std::string& name) {
    const fs::path root = fs::path(TDMSIM_SOURCE_DIR) / "workloads";
    m = config::Loader({root}).machine(root / "machines/mi500x-tdm.yaml").spec;
    dispatcher = std::make_unique<sim::Dispatcher>((name + "_dispatcher").c_str(), 0, 0, 1, 1,
                                                   WorkgroupOrder::index, stats);
    unit = std::make_unique<sim::TdmScheduler>((name + "_tdm").c_str(), m, *dispatcher, stats, nullptr);
  }
};

// Re-encodes descriptor `i` of a stream after `edit`.
template <class F>
sim::programs::DescriptorBytes edited(const std::vector<format::MoeDescriptor>& ds, std::size_t i, F edit) {
  sim::programs::DescriptorBytes out;
  for (std::size_t j = 0; j < ds.size(); ++j) {
    format::MoeDescriptor d = ds[j];
    if (j == i) edit(d);
    out.push_back(format::encode(d));
  }
  return out;
}

std::vector<std::byte> concat(const sim::programs::DescriptorBytes& b) {
  std::vector<std::byte> out;
  for (const auto& x : b) out.insert(out.end(), x.begin(), x.end());
  return out;
}

// check_stream() of encoded descriptors.
std::optional<format::DescriptorError> check(const sim::programs::DescriptorBytes& b,
                                             const plan::MoePlan& p) {
  const std::vector<std::byte> all = concat(b);
  const auto s = format::decode_moe_stream(all);
  REQUIRE(s.ok());
  return format::check_stream(s.value(), p);
}

std::vector<format::MoeDescriptor> plan_descriptors(const plan::MoePlan& p, TdmPolicy policy) {
  return format::make_moe_descriptors(p, policy, format::packed_address_map(p, 1ULL << 32),
                                      {4000, format::SlotUnit::ns});
}

// Each stage's (launch, end) of one run of `bytes` on a fresh GPU.
std::vector<std::pair<sim::Tick, sim::Tick>> run_stream(const config::ResolvedScenario& sc,
                                                        const plan::MoePlan& p,
                                                        const sim::programs::DescriptorBytes* bytes) {
  sim::Gpu gpu(sc.machine.spec);
  sim::AddressSpace as;
  const auto k = sim::programs::tdm_moe(as, p, sc.machine.spec, bytes);
  std::vector<std::pair<sim::Tick, sim::Tick>> out;
  for (const auto& t : gpu.run(k.kernels)) out.emplace_back(t.launch, t.end);
  return out;
}

}  // namespace

TEST_CASE("slot records' lengths open the unit's time slots", "[tdm]") {
  Unit u("lengths");
  SmallKernel s;
  s.d.slots[0].length = 1000;  // ns
  s.d.slots[1].length = 3000;
  s.d.slots[2].length = 2000;
  // Two jobs (one block) per time slot, table order: 0, then +1 us, then +3 us.
  auto plan = u.unit->place(s.k, &s.d, 2);
  CHECK(plan.release == std::vector<sim::Tick>{0, 0, 1'000'000, 1'000'000, 4'000'000, 4'000'000});
  // Four jobs per time slot: the first holds blocks 0 and 1 and stays open
  // for the longer of their lengths (3 us).
  plan = u.unit->place(s.k, &s.d, 4);
  CHECK(plan.release == std::vector<sim::Tick>{0, 0, 0, 0, 3'000'000, 3'000'000});
  // Cycles of the machine's engine clock.
  s.d.slot_unit = format::SlotUnit::cycles;
  s.d.slots[0].length = 2000;
  const auto hz = static_cast<double>(u.m.compute.clock.hz);
  plan = u.unit->place(s.k, &s.d, 2);
  CHECK(plan.release[2] == static_cast<sim::Tick>(std::llround(2000 * 1e12 / hz)));
  CHECK(u.unit->slot_ps(s.d, s.d.slots[0]) == static_cast<sim::Tick>(std::llround(2000 * 1e12 / hz)));
  // low_latency does not slice time: every job at once, whatever the lengths.
  s.d.layer.policy = TdmPolicy::low_latency;
  plan = u.unit->place(s.k, &s.d, 2);
  CHECK(plan.release == std::vector<sim::Tick>(6, 0));
}

TEST_CASE("custom runs the slot table's order, and the table must cover the blocks once", "[tdm]") {
  Unit u("table");
  SmallKernel s;
  using V = std::vector<std::uint32_t>;
  CHECK(u.unit->place(s.k, &s.d, 2).order == V{0, 1, 2, 3, 4, 5});
  std::swap(s.d.slots[0], s.d.slots[2]);  // blocks 2, 1, 0
  CHECK(u.unit->place(s.k, &s.d, 2).order == V{4, 5, 2, 3, 0, 1});
  // The same with a callback id: the table is the callback's order.
  s.d.layer.custom_policy_id = 7;
  CHECK(u.unit->place(s.k, &s.d, 2).order == V{4, 5, 2, 3, 0, 1});
  // An empty slot (valid_rows 0) is skipped: here one for a block with no work.
  format::TimeSlot empty;
  empty.block = 9;
  empty.length = 1;
  s.d.slots.push_back(empty);
  CHECK(u.unit->place(s.k, &s.d, 2).order.size() == 6);
  // A block without a slot, or named twice, cannot be scheduled.
  s.d.slots.pop_back();
  SmallKernel missing;
  missing.d.slots.pop_back();
  CHECK_THROWS_WITH(u.unit->place(missing.k, &missing.d, 2), Catch::Contains("no slot for token block 2"));
  SmallKernel twice;
  twice.d.slots[2].block = 1;
  CHECK_THROWS_WITH(u.unit->place(twice.k, &twice.d, 2), Catch::Contains("names token block 1"));
}

TEST_CASE("a stream read back from its bytes runs as the plan-built one", "[tdm]") {
  for (const std::uint32_t stages : {1u, 2u}) {
    const auto sc = tdm_scenario(8, stages);
    const plan::MoePlan p = plan::build_plan(sc);
    REQUIRE(p.kernel.stages == stages);
    // The bytes the plan-built run fetches, through the stream container and back.
    sim::AddressSpace as;
    const auto built = sim::programs::descriptor_bytes(sim::programs::tdm_moe(as, p, sc.machine.spec));
    REQUIRE(built.size() == stages);
    const std::vector<std::byte> file = concat(built);
    const auto read = format::decode_moe_stream(file);
    REQUIRE(read.ok());
    REQUIRE(!format::check_stream(read.value(), p));
    sim::programs::DescriptorBytes back;
    for (const auto& e : read.value()) back.emplace_back(e.bytes.begin(), e.bytes.end());
    CHECK(back == built);
    // The run of `back` itself is compared with the plan-built one by CTest
    // tdm.descriptors_round_trip* (one process per run: summary.json byte-identical).
  }
}

TEST_CASE("sync waits: none, all_of and counter across descriptors", "[tdm]") {
  const auto sc = tdm_scenario(8, 2);
  const plan::MoePlan p = plan::build_plan(sc);
  REQUIRE(p.kernel.stages == 2);
  const auto ds = plan_descriptors(p, sc.machine.spec.tdm->default_policy);
  REQUIRE(ds[1].sync.wait_mode == format::WaitMode::all_of);  // down waits for gate_up
  const auto all_of = edited(ds, 1, [](format::MoeDescriptor&) {});
  const auto counter = edited(ds, 1, [](format::MoeDescriptor& d) {
    d.sync.wait_mode = format::WaitMode::counter;
    d.sync.counter_target = 1;
  });
  const auto none = edited(ds, 1, [](format::MoeDescriptor& d) {
    d.sync.wait_mode = format::WaitMode::none;
    d.sync.wait_ids.clear();
  });
  for (const auto* b : {&all_of, &counter, &none}) CHECK(!check(*b, p));

  // Waits nothing earlier meets are refused before the run, at the field.
  const std::uint64_t second = all_of[0].size();
  const std::uint64_t sync = second + format::canonical_sections(ds[1]).sync;
  const auto twice = edited(ds, 1, [](format::MoeDescriptor& d) {
    d.sync.wait_mode = format::WaitMode::counter;
    d.sync.counter_target = 2;
  });
  auto e = check(twice, p);
  REQUIRE(e);
  CHECK(e->code == Code::scenario_mismatch);
  CHECK(e->offset == sync + format::moe_wire::sync::counter_target);
  const auto other = edited(ds, 1, [](format::MoeDescriptor& d) { d.sync.wait_ids = {9}; });
  e = check(other, p);
  REQUIRE(e);
  CHECK(e->offset == sync + format::moe_wire::sync::wait_ids);
  // And the unit itself holds a descriptor whose wait nothing has met.
  Unit u("waits");
  CHECK(u.unit->wait_met(ds[0]) == sim::Tick{0});  // none
  CHECK(!u.unit->wait_met(ds[1]));                 // all_of [1], nothing signalled yet
}

TEST_CASE("a stream that disagrees with the scenario is refused at the field", "[tdm]") {
  const auto sc = tdm_scenario(8, 1);
  const plan::MoePlan p = plan::build_plan(sc);
  const auto ds = plan_descriptors(p, TdmPolicy::load_balance);
  REQUIRE(ds.size() == 1);
  REQUIRE(ds[0].slots.size() >= 2);
  const format::MoeSections sec = format::canonical_sections(ds[0]);
  namespace S = format::moe_wire::slot;
  // The scenario's layer has one descriptor.
  auto e = check(edited(ds, 9, [](format::MoeDescriptor&) {}), p);
  CHECK(!e);
  sim::programs::DescriptorBytes two = edited(ds, 9, [](format::MoeDescriptor&) {});
  two.push_back(two[0]);
  e = check(two, p);
  REQUIRE(e);
  CHECK(e->offset == two[0].size());
  // Another token count.
  const auto sc16 = tdm_scenario(16, 1);
  e = check(edited(ds, 9, [](format::MoeDescriptor&) {}), plan::build_plan(sc16));
  REQUIRE(e);
  CHECK(e->offset == sec.layer + format::moe_wire::layer::tokens);
  // A slot whose real rows differ from the routing's.
  e = check(edited(ds, 0, [](format::MoeDescriptor& d) { d.slots[1].valid_rows += 1; }), p);
  REQUIRE(e);
  CHECK(e->offset == sec.slots + format::moe_wire::kSlotRecord + S::valid_rows);
  // A block missing from the table.
  e = check(edited(ds, 0, [](format::MoeDescriptor& d) { d.slots.pop_back(); }), p);
  REQUIRE(e);
  CHECK(e->offset == format::moe_wire::hdr::slot_count);
  CHECK_THAT(e->message, Catch::Contains("no slot for block"));
  // Reordered slots, per-slot lengths, cycles and custom are the stream's to choose.
  const auto mine = edited(ds, 0, [](format::MoeDescriptor& d) {
    std::reverse(d.slots.begin(), d.slots.end());
    d.slots[0].length = 9000;
    d.slot_unit = format::SlotUnit::cycles;
    d.layer.policy = TdmPolicy::custom;
  });
  CHECK(!check(mine, p));
}

TEST_CASE("the unit runs a user's stream: reordered custom table, cycles, counter wait", "[tdm]") {
  const auto sc = tdm_scenario(8, 2);
  const plan::MoePlan p = plan::build_plan(sc);
  const auto ds = plan_descriptors(p, TdmPolicy::load_balance);
  auto mine = edited(ds, 0, [](format::MoeDescriptor& d) {
    std::reverse(d.slots.begin(), d.slots.end());
    d.slots[0].length = 9000;
    d.slot_unit = format::SlotUnit::cycles;
    d.layer.policy = TdmPolicy::custom;
  });
  mine[1] = edited(ds, 1, [](format::MoeDescriptor& d) {
    d.sync.wait_mode = format::WaitMode::counter;
    d.sync.counter_target = 1;
  })[1];
  REQUIRE(!check(mine, p));
  const auto t = run_stream(sc, p, &mine);
  REQUIRE(t.size() >= 3);  // sort, gate_up, down
  for (const auto& [launch, end] : t) CHECK(end > launch);
}
