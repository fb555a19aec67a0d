// The TDM unit's slot models and dynamic policy (issue #21, part 3):
// TdmSlotRuntime's decisions on hand-made jobs, then whole layers on the
// timing model: what each slot model does to a layer whose slots outlast its
// work, the dispatch latency's direction, the invariant "with no TDM
// overheads and continuous dispatch the unit is never slower than software
// by more than kInvariantTol" on seeded random small scenarios, and a
// slot order given through the descriptor API's callback.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <span>
#include <random>
#include <variant>

#include "descriptors/api/moe_api.h"
#include "descriptors/format/descriptor_file.h"
#include "descriptors/plan/moe_plan.h"
#include "sim/platform/gpu.h"
#include "sim/platform/tdm_scheduler.h"
#include "sim/platform/tdm_slot_runtime.h"
#include "sim/programs/moe_kernels.h"
#include "tests/sim/fork_run.h"
#include "workloads/config/loader.h"

using namespace tdmsim;
namespace fs = std::filesystem;
using Pick = sim::RuntimeDispatch::Pick;
using Job = sim::TdmSlotRuntime::Job;

namespace {

// The tolerance of the invariant (docs/moe-timing.md "Invariant"): the unit
// still reads its descriptors from memory (a real read, which no tdm key
// zeroes) and runs the jobs in policy order rather than the software grid's,
// so L2 and HBM see the same traffic interleaved differently; on layers
// where the host launches it saves are small those two can outweigh them.
// 2% is room for that, not for any latency of the unit.
constexpr double kInvariantTol = 0.02;

config::ResolvedScenario tdm_scenario() {
  const fs::path root = fs::path(TDMSIM_SOURCE_DIR);
  const config::Loader loader({root / "workloads"});
  return loader.resolve_scenario(root / "workloads/scenarios/qwen3-30b-a3b-decode-mi500x-tdm.yaml");
}

// The layer's time on one path (sort included), and the unit's stats.
struct PathRun {
  sim::Tick total = 0;
  double slot_wait = 0, drained = 0, jobs = 0;
};
PathRun run_plan(const config::ResolvedScenario& sc, const plan::MoePlan& p, bool tdm,
                 const sim::programs::DescriptorBytes* bytes = nullptr) {
  // Each run is simulated in a child process (tests/sim/fork_run.h).
  return tdmsim::test::in_child<PathRun>([&] {
    sim::Gpu gpu(sc.machine.spec);
    sim::AddressSpace as;
    const auto k = tdm ? sim::programs::tdm_moe(as, p, sc.machine.spec, bytes)
                       : sim::programs::software_moe(as, p, sc.machine.spec);
    const auto t = gpu.run(k.kernels);
    PathRun r;
    r.total = t.back().end - t.front().launch;
    if (tdm) {
      r.slot_wait = gpu.stats().sum("gpu.tdm.desc[", "slot_wait_time");
      r.drained = gpu.stats().sum("gpu.tdm.desc[", "drained_slots");
      r.jobs = gpu.stats().sum("gpu.tdm.desc[", "jobs");
    }
    return r;
  });
}
PathRun run_path(const config::ResolvedScenario& sc, bool tdm) {
  return run_plan(sc, plan::build_plan(sc), tdm);
}

std::vector<Job> jobs(std::uint32_t n, sim::Tick length, std::uint32_t groups = 1) {
  std::vector<Job> out;
  for (std::uint32_t i = 0; i < n; ++i) out.push_back({i, groups > 1 ? i % groups : 0, length});
  return out;
}

}  // namespace

TEST_CASE("slot runtime: wave_synchronous opens a slot per machine wave, after the previous one's length", "[tdm][slots]") {
  sim::TdmSlotRuntime::Params p;
  p.per_slot = 2;
  p.slots = 16;
  p.dispatch = 100'000;
  sim::TdmSlotRuntime rt(jobs(5, 1'000'000), p);
  std::uint32_t wg = 0;
  sim::Tick at = 0;
  std::vector<sim::Tick> release;
  while (rt.pick(10, 10, wg, at) == Pick::job) release.push_back(at - 10);
  // Each job starts the dispatch latency after its time slot opens.
  CHECK(release == std::vector<sim::Tick>{100'000, 100'000, 1'100'000, 1'100'000, 2'100'000});
  // Slots free at the start wait for their job's time slot, then its dispatch.
  CHECK(rt.counters().slot_wait_ps == 2 * 1'000'000 + 2'000'000);
  CHECK(rt.counters().dispatch_ps == 5 * 100'000);
  // A slot free after its job's time slot opened pays only what is left of the dispatch.
  sim::TdmSlotRuntime later(jobs(3, 1'000'000), p);
  REQUIRE(later.pick(0, 0, wg, at) == Pick::job);
  REQUIRE(later.pick(0, 0, wg, at) == Pick::job);
  REQUIRE(later.pick(0, 1'050'000, wg, at) == Pick::job);
  CHECK(at == 1'100'000);
  CHECK(later.counters().dispatch_ps == 2 * 100'000 + 50'000);
  CHECK(rt.opened().size() == 3);
}

TEST_CASE("slot runtime: continuous hands out jobs as slots free, with no time slots", "[tdm][slots]") {
  sim::TdmSlotRuntime::Params p;
  p.model = TdmSlotModel::continuous;
  p.per_slot = 2;
  sim::TdmSlotRuntime rt(jobs(5, 1'000'000), p);
  std::uint32_t wg = 0;
  sim::Tick at = 0;
  while (rt.pick(0, 0, wg, at) == Pick::job) CHECK(at == 0);
  CHECK(rt.counters().jobs == 5);
  CHECK(rt.counters().slot_wait_ps == 0);
}

TEST_CASE("slot runtime: skip_drained opens the next slot once the current one's jobs have finished", "[tdm][slots]") {
  sim::TdmSlotRuntime::Params p;
  p.model = TdmSlotModel::skip_drained;
  p.per_slot = 2;
  p.slots = 16;
  p.poll = 50'000;
  sim::TdmSlotRuntime rt(jobs(4, 1'000'000), p);
  std::uint32_t wg = 0;
  sim::Tick at = 0;
  REQUIRE(rt.pick(0, 0, wg, at) == Pick::job);
  REQUIRE(rt.pick(0, 0, wg, at) == Pick::job);
  // Slot 0's jobs still run: a slot free at 100 ns looks again 50 ns later.
  REQUIRE(rt.pick(0, 100'000, wg, at) == Pick::retry);
  CHECK(at == 150'000);
  rt.done(0, 0, 200'000);
  REQUIRE(rt.pick(0, 250'000, wg, at) == Pick::retry);  // one of two still runs
  rt.done(1, 0, 300'000);
  // Drained at 300 ns: slot 1 opens then, 700 ns before its length was up.
  REQUIRE(rt.pick(0, 350'000, wg, at) == Pick::job);
  CHECK(at == 300'000);
  CHECK(rt.counters().drained_slots == 1);
  CHECK(rt.counters().skipped_ps == 700'000);
  CHECK(rt.counters().retries == 2);
  // Past its length a slot opens whether or not the previous one drained.
  sim::TdmSlotRuntime late(jobs(4, 1'000'000), p);
  REQUIRE(late.pick(0, 0, wg, at) == Pick::job);
  REQUIRE(late.pick(0, 0, wg, at) == Pick::job);
  REQUIRE(late.pick(0, 1'200'000, wg, at) == Pick::job);
  CHECK(at == 1'000'000);
}

TEST_CASE("slot runtime: dynamic allocates CU slots to the experts with the most estimated work left, from completions", "[tdm][slots][dynamic]") {
  sim::TdmSlotRuntime::Params p;
  p.model = TdmSlotModel::continuous;
  p.dynamic = true;
  p.per_slot = 64;
  // Two experts of 6 jobs each (group = wg % 2). Whichever finishes its first
  // job slowly gets the next slots.
  for (const std::uint32_t slow : {0u, 1u}) {
    sim::TdmSlotRuntime rt(jobs(12, 1000, 2), p);
    std::uint32_t wg = 0;
    sim::Tick at = 0;
    std::uint32_t a = 0, b = 0;
    REQUIRE(rt.pick(0, 0, wg, at) == Pick::job);
    a = wg;
    REQUIRE(rt.pick(0, 0, wg, at) == Pick::job);
    b = wg;
    CHECK(a % 2 != b % 2);  // before any completion: one slot each (equal work)
    rt.done(a, 0, a % 2 == slow ? 10'000'000 : 1'000'000);
    rt.done(b, 0, b % 2 == slow ? 10'000'000 : 1'000'000);
    std::vector<std::uint32_t> next;
    for (int i = 0; i < 4; ++i) {
      REQUIRE(rt.pick(0, 10'000'000, wg, at) == Pick::job);
      next.push_back(wg % 2);
    }
    // 5 x 10 us left against 5 x 1 us: the slow expert takes the first
    // slots, until its share of slots in flight outweighs its lead.
    const auto of_slow = std::count(next.begin(), next.end(), slow);
    INFO("slow expert " << slow);
    CHECK(next[0] == slow);
    CHECK(of_slow >= 3);
  }
}

TEST_CASE("slot models on a layer whose time slots outlast their work", "[tdm][slots]") {
  // 1 ms slots on the README's layer: gate_up and down each take a few
  // machine waves of 8 CUs. Wave-synchronous waits out every slot; skip_drained
  // opens the next slot as soon as one drains; continuous has no slots.
  auto sc = tdm_scenario();
  sc.machine.spec.compute.dies = 1;
  sc.machine.spec.compute.cus_per_die = 8;
  sc.scenario.spec.tokens = 16;
  sc.machine.spec.tdm->slot_length = units::Duration{1'000'000'000};
  auto with = [&](TdmSlotModel m) {
    auto s = sc;
    s.machine.spec.tdm->slot_model = m;
    return run_path(s, true);
  };
  const PathRun wave = with(TdmSlotModel::wave_synchronous);
  const PathRun skip = with(TdmSlotModel::skip_drained);
  const PathRun cont = with(TdmSlotModel::continuous);
  INFO("wave " << wave.total << " skip " << skip.total << " continuous " << cont.total);
  CHECK(wave.total > 1'000'000'000);  // at least one whole slot waited out
  CHECK(skip.total < wave.total / 10);
  CHECK(cont.total < wave.total / 10);
  CHECK(skip.drained > 0);
  CHECK(wave.slot_wait > 0);
  CHECK(cont.slot_wait == 0);
  // Every job ran once under each model.
  CHECK(wave.jobs == skip.jobs);
  CHECK(cont.jobs == wave.jobs);
}

TEST_CASE("policy dynamic runs every job of a skewed layer", "[tdm][dynamic]") {
  auto sc = tdm_scenario();
  sc.scenario.spec.routing.source = RoutingSource::zipf;
  sc.scenario.spec.routing.zipf_s = 1.2;
  sc.machine.spec.compute.dies = 2;
  sc.machine.spec.compute.cus_per_die = 16;
  sc.machine.spec.tdm->default_policy = TdmPolicy::dynamic;
  const PathRun dyn = run_path(sc, true);
  sc.machine.spec.tdm->default_policy = TdmPolicy::load_balance;
  const PathRun lb = run_path(sc, true);
  INFO("dynamic " << dyn.total << " load_balance " << lb.total);
  CHECK(dyn.jobs == lb.jobs);
  CHECK(dyn.total > 0);
  // Same work, a run-time order: within a third of the static policy's time.
  CHECK(static_cast<double>(dyn.total) < 1.34 * static_cast<double>(lb.total));
}

TEST_CASE("tdm.dispatch_latency is paid per descriptor, below 100 ns it only moves the memory traffic", "[tdm][dispatch]") {
  auto sc = tdm_scenario();
  auto with = [&](std::uint64_t ns) {
    auto s = sc;
    s.machine.spec.tdm->dispatch_latency = units::Duration{ns * 1000};
    return run_path(s, true).total;
  };
  const sim::Tick x0 = with(0), base = with(100), x5 = with(500), x20 = with(2000);
  INFO("dispatch 0: " << x0 << " ps, 100 ns: " << base << " ps, 500 ns: " << x5 << " ps, 2 us: " << x20 << " ps");
  CHECK(base <= x5);
  CHECK(x5 <= x20);
  // Each of the two descriptors pays it at its start at least.
  CHECK(x20 - base >= 2 * 1'900'000);
  // Not monotonic below 100 ns: this memory-bound layer's time depends on how
  // its CUs' loads line up at the HBM channels, and a zero latency starts
  // every CU's first job at once (the README layer moves by up to 1.6% either
  // way from 0 to 200 ns; docs/calibration.md "TDM unit"). Within 3% either way.
  CHECK(static_cast<double>(x0) <= 1.03 * static_cast<double>(base));
  CHECK(static_cast<double>(x0) >= 0.97 * static_cast<double>(base));
}

TEST_CASE("invariant: no TDM overheads, continuous dispatch: the unit is within kInvariantTol of software", "[tdm][invariant]") {
  // Seeded random small layers on a cut-down mi500x-tdm (16 CUs): experts,
  // top-k, tokens and routing skew drawn; every tdm latency 0, slot lengths
  // the minimum (continuous ignores them), the movers' bandwidth the schema's
  // maximum, so the unit adds no cost of its own.
  std::mt19937_64 rng(21);
  auto draw = [&](std::uint32_t lo, std::uint32_t hi) {
    return std::uniform_int_distribution<std::uint32_t>(lo, hi)(rng);
  };
  const std::vector<double> skews = {0.0, 0.6, 1.2, 2.0};
  for (int i = 0; i < 10; ++i) {
    auto sc = tdm_scenario();
    MachineSpec& m = sc.machine.spec;
    m.compute.dies = 1;
    m.compute.cus_per_die = 16;
    TdmSpec& t = *m.tdm;
    t.descriptor_fetch_latency = units::Duration{0};
    t.decode_latency = units::Duration{0};
    t.dispatch_latency = units::Duration{0};
    t.slot_length = units::Duration{1000};
    t.movers_per_cu = 16;
    t.mover_bytes_per_clock = 4096;
    t.slot_model = TdmSlotModel::continuous;
    auto& model = sc.model.spec;
    model.experts = 4u << draw(0, 4);  // 4..64
    model.top_k = std::min(model.experts, draw(1, 8));
    model.hidden_size = 512;
    model.intermediate_size = 256;
    sc.scenario.spec.tokens = draw(1, 256);
    const double s = skews[draw(0, 3)];
    sc.scenario.spec.routing.source = s == 0 ? RoutingSource::uniform : RoutingSource::zipf;
    sc.scenario.spec.routing.zipf_s = s;
    sc.scenario.spec.seed = draw(0, 1u << 30);
    const PathRun sw = run_path(sc, false), tdm = run_path(sc, true);
    const double ratio = static_cast<double>(tdm.total) / static_cast<double>(sw.total);
    INFO("case " << i << ": E " << model.experts << " top_k " << model.top_k << " tokens "
                 << sc.scenario.spec.tokens << " zipf_s " << s << ": tdm " << tdm.total
                 << " ps, software " << sw.total << " ps, ratio " << ratio);
    CHECK(ratio <= 1 + kInvariantTol);
  }
}

TEST_CASE("custom: a slot order given by a callback through the descriptor API is the order the unit runs", "[tdm][api]") {
  auto sc = tdm_scenario();
  sc.scenario.spec.tokens = 16;
  api::MoeDescriptor desc(sc, TdmPolicy::custom);
  desc.bind(std::make_shared<api::Stream>(std::make_shared<api::Context>(), "s"));
  // Highest expert first, then by block (a user's order, not the table's).
  std::uint32_t calls = 0;
  desc.set_slot_order(7, [&](std::span<const api::SlotView> slots) {
    ++calls;
    std::vector<std::uint32_t> idx(slots.size());
    for (std::uint32_t i = 0; i < idx.size(); ++i) idx[i] = i;
    std::stable_sort(idx.begin(), idx.end(), [&](std::uint32_t a, std::uint32_t b) {
      return slots[a].expert > slots[b].expert;
    });
    return idx;
  });
  const api::ForwardResult r = desc.forward_seeded(16);
  REQUIRE(r.ok());
  REQUIRE(r.descriptors.size() == 2);
  CHECK(calls == 2);
  // The simulator runs that stream to the end (before this process makes
  // modules of its own: the run is simulated in a child).
  const PathRun run = run_plan(sc, r.plan, true, &r.descriptors);
  CHECK(run.jobs > 0);
  // The unit decodes the bytes and runs the jobs block by block in that order.
  const auto k = [&] {
    sim::AddressSpace as;
    return sim::programs::tdm_moe(as, r.plan, sc.machine.spec, &r.descriptors);
  }();
  sim::StatRegistry stats;
  sim::Dispatcher d("api_dispatcher", 0, 0, 1, 1, WorkgroupOrder::index, stats);
  sim::TdmScheduler unit("api_tdm", sc.machine.spec, d, stats, nullptr);
  std::size_t checked = 0;
  for (std::size_t i = 0, di = 0; i < k.kernels.size(); ++i) {
    const isa::KernelLaunch& kl = k.kernels[i];
    if (kl.hardware == nullptr || kl.hardware->descriptor.empty()) continue;
    const auto decoded = format::decode_any(r.descriptors.at(di++));
    REQUIRE(decoded.ok());
    const auto& md = std::get<format::MoeDescriptor>(decoded.value());
    CHECK(md.layer.policy == TdmPolicy::custom);
    CHECK(md.layer.custom_policy_id == 7);
    const auto placed = unit.order_jobs(kl, &md);
    // Experts of the jobs as run: never increasing.
    std::uint32_t prev = ~0u;
    std::map<std::uint32_t, std::uint32_t> expert_of_block;
    for (const auto& s : md.slots) expert_of_block[s.block] = s.expert;
    for (const auto& j : placed.jobs) {
      const std::uint32_t e = expert_of_block.at(kl.hardware->block[j.wg]);
      CHECK(e <= prev);
      prev = e;
    }
    ++checked;
  }
  CHECK(checked == 2);
  // A callback that is not a permutation is refused.
  desc.set_slot_order(7, [](std::span<const api::SlotView> slots) {
    return std::vector<std::uint32_t>(slots.size(), 0);
  });
  const api::ForwardResult bad = desc.forward_seeded(16);
  CHECK(bad.status == api::Status::invalid_argument);
}
