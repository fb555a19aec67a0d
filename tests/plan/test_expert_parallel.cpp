// Expert parallelism (descriptors/plan/expert_parallel.h): placement policies,
// the ranks' shares of one routing draw and the dispatch's token traffic.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>

#include "descriptors/format/moe_builder.h"
#include "descriptors/plan/expert_parallel.h"
#include "descriptors/plan/routing.h"
#include "plan_test_util.h"

using namespace tdmsim;
using namespace tdmsim::plan;
using namespace tdmsim::plan::test;

namespace {

// Every expert in exactly `copies` slots and every slot holding an expert.
void check_covers(const ExpertMap& m, std::uint32_t experts) {
  REQUIRE(m.copies.size() == experts);
  REQUIRE(m.slot_expert.size() == std::size_t(m.ranks) * m.slots);
  std::vector<std::uint32_t> seen(experts, 0);
  for (std::uint32_t slot = 0; slot < m.slot_expert.size(); ++slot) {
    const std::uint32_t e = m.slot_expert[slot];
    REQUIRE(e < experts);
    ++seen[e];
    REQUIRE(std::find(m.copies[e].begin(), m.copies[e].end(), slot) != m.copies[e].end());
  }
  for (std::uint32_t e = 0; e < experts; ++e) REQUIRE(seen[e] == m.copies[e].size());
}

std::vector<std::uint64_t> rank_loads(const ExpertMap& m, const Routing& r, std::uint32_t tokens,
                                      std::uint32_t top_k) {
  std::vector<std::uint64_t> load(m.ranks, 0);
  for (const auto rank : pick_ranks(r, m, tokens, top_k)) {
    if (rank < m.ranks) ++load[rank];
  }
  return load;
}

}  // namespace

TEST_CASE("contiguous and round_robin place every expert once", "[ep]") {
  const std::vector<std::uint64_t> none;
  for (const auto policy : {ExpertPlacement::contiguous, ExpertPlacement::round_robin}) {
    const ExpertMap m = place_experts(policy, 64, 8, 0, none);
    CHECK(m.slots == 8);
    check_covers(m, 64);
    for (std::uint32_t e = 0; e < 64; ++e) {
      REQUIRE(m.copies[e].size() == 1);
      const std::uint32_t rank = m.rank_of_slot(m.copies[e][0]);
      CHECK(rank == (policy == ExpertPlacement::contiguous ? e / 8 : e % 8));
    }
  }
  // One GPU: expert e in slot e, as the single-GPU plan numbers them.
  const ExpertMap one = place_experts(ExpertPlacement::contiguous, 16, 1, 0, none);
  for (std::uint32_t e = 0; e < 16; ++e) CHECK(one.copies[e] == std::vector<std::uint32_t>{e});
}

TEST_CASE("load_aware replicates the hot experts and lowers the max rank load", "[ep]") {
  ModelSpec model = make_model(64, 4);
  auto sc = make_scenario(model, 512, 7, RoutingSource::hot);
  // The hot experts all sit on rank 0 under contiguous placement.
  sc.scenario.spec.routing.hot_experts = {0, 1, 2, 3};
  sc.scenario.spec.routing.hot_fraction = 0.6;
  const Routing r = route(sc);
  const auto load = expert_load(r, 64);
  const ExpertMap contiguous = place_experts(ExpertPlacement::contiguous, 64, 8, 0, load);
  const ExpertMap aware = place_experts(ExpertPlacement::load_aware, 64, 8, 8, load);
  check_covers(aware, 64);
  CHECK(aware.slots == 9);
  // The redundant copies went to the hot experts.
  std::uint32_t hot_copies = 0;
  for (std::uint32_t e = 0; e < 4; ++e) hot_copies += static_cast<std::uint32_t>(aware.copies[e].size());
  CHECK(hot_copies == 4 + 8);
  // No rank holds two copies of one expert.
  for (std::uint32_t e = 0; e < 64; ++e) {
    std::vector<std::uint32_t> ranks;
    for (auto s : aware.copies[e]) ranks.push_back(aware.rank_of_slot(s));
    std::sort(ranks.begin(), ranks.end());
    CHECK(std::adjacent_find(ranks.begin(), ranks.end()) == ranks.end());
  }
  const auto before = rank_loads(contiguous, r, 512, 4);
  const auto after = rank_loads(aware, r, 512, 4);
  CHECK(std::accumulate(before.begin(), before.end(), 0ull) == std::accumulate(after.begin(), after.end(), 0ull));
  CHECK(*std::max_element(after.begin(), after.end()) < *std::max_element(before.begin(), before.end()));
  // Even without copies, packing by load beats contiguous on this draw.
  const ExpertMap packed = place_experts(ExpertPlacement::load_aware, 64, 8, 0, load);
  check_covers(packed, 64);
  const auto p = rank_loads(packed, r, 512, 4);
  CHECK(*std::max_element(p.begin(), p.end()) < *std::max_element(before.begin(), before.end()));
}

TEST_CASE("own tokens split the batch into contiguous shares", "[ep]") {
  for (std::uint32_t tokens : {8u, 13u, 100u, 4096u}) {
    std::uint32_t next = 0;
    for (std::uint32_t r = 0; r < 8; ++r) {
      const Range own = own_tokens(tokens, 8, r);
      CHECK(own.begin == next);
      CHECK(own.end - own.begin >= tokens / 8);
      CHECK(own.end - own.begin <= tokens / 8 + 1);
      next = own.end;
    }
    CHECK(next == tokens);
  }
}

TEST_CASE("rank plans partition the draw's picks exactly and traffic is conserved", "[ep]") {
  ModelSpec model = make_model(32, 4);
  model.shared_experts = 1;
  model.shared_intermediate_size = 128;
  for (const auto policy : {ExpertPlacement::contiguous, ExpertPlacement::round_robin, ExpertPlacement::load_aware}) {
    auto sc = make_scenario(model, 200, 3, RoutingSource::zipf);
    sc.scenario.spec.parallel.ep = 4;
    sc.scenario.spec.parallel.placement = policy;
    sc.scenario.spec.parallel.redundant_experts = policy == ExpertPlacement::load_aware ? 4 : 0;
    CapacityReport cap;
    const Routing r = route(sc, &cap);
    const ExpertMap m = place_experts(policy, 32, 4, sc.scenario.spec.parallel.redundant_experts, expert_load(r, 32));
    // Each (token, pick) runs on exactly one rank, and each token's shared
    // expert on its owner only.
    std::vector<std::uint32_t> runs(200 * 4, 0), shared_runs(200, 0);
    std::uint64_t local_rows = 0;
    for (std::uint32_t rank = 0; rank < 4; ++rank) {
      std::vector<std::uint32_t> tokens;
      const MoePlan p = rank_plan(sc, r, cap, m, rank, &tokens);
      REQUIRE(p.shape.tokens == tokens.size());
      CHECK(p.shape.experts_local == m.slots);
      CHECK(p.shape.router_tokens == own_tokens(200, 4, rank).end - own_tokens(200, 4, rank).begin);
      CHECK(std::is_sorted(tokens.begin(), tokens.end()));
      const std::uint32_t slots = p.shape.slots();
      for (std::size_t i = 0; i < tokens.size(); ++i) {
        for (std::uint32_t j = 0; j < 4; ++j) {
          const std::uint32_t local = p.fused.expert[i * slots + j];
          if (local == kRemoteExpert) continue;
          // The slot holds the expert the token picked.
          CHECK(m.slot_expert[rank * m.slots + local] == r.ids[std::size_t(tokens[i]) * 4 + j]);
          ++runs[std::size_t(tokens[i]) * 4 + j];
        }
        if (p.fused.expert[i * slots + 4] != kRemoteExpert) ++shared_runs[tokens[i]];
      }
      for (auto rows : p.layout.expert_rows) local_rows += rows;
    }
    for (std::size_t pick = 0; pick < runs.size(); ++pick) CHECK(runs[pick] == (r.ids[pick] < 32 ? 1u : 0u));
    for (auto s : shared_runs) CHECK(s == 1);
    std::uint64_t picks = 0;
    for (auto e : r.ids) picks += e < 32 ? 1 : 0;
    CHECK(local_rows == picks + 200);  // routed picks plus one shared row per token
    // Dispatch: every token leaves its owner once per rank holding a pick.
    const auto where = pick_ranks(r, m, 200, 4);
    const auto t = dispatch_tokens(where, 200, 4, 4);
    std::uint64_t sent = 0, received = 0, expected = 0;
    for (std::uint32_t a = 0; a < 4; ++a) {
      for (std::uint32_t b = 0; b < 4; ++b) {
        if (a == b) continue;
        sent += t[a * 4 + b];
      }
    }
    for (std::uint32_t b = 0; b < 4; ++b) {
      for (std::uint32_t a = 0; a < 4; ++a) received += a == b ? 0 : t[a * 4 + b];
    }
    for (std::uint32_t tok = 0; tok < 200; ++tok) {
      std::vector<std::uint32_t> dst;
      for (std::uint32_t j = 0; j < 4; ++j) {
        if (where[tok * 4 + j] < 4) dst.push_back(where[tok * 4 + j]);
      }
      std::sort(dst.begin(), dst.end());
      dst.erase(std::unique(dst.begin(), dst.end()), dst.end());
      std::uint32_t owner = 0;
      while (own_tokens(200, 4, owner).end <= tok) ++owner;
      expected += static_cast<std::uint64_t>(dst.size()) - (std::count(dst.begin(), dst.end(), owner) ? 1 : 0);
    }
    CHECK(sent == received);
    CHECK(sent == expected);
  }
}

TEST_CASE("one rank's plan is the single-GPU plan", "[ep]") {
  ModelSpec model = make_model(16, 2);
  model.shared_experts = 1;
  model.shared_intermediate_size = 256;
  const auto sc = make_scenario(model, 96, 11, RoutingSource::lognormal);
  const MoePlan single = build_plan(sc);
  CapacityReport cap;
  const Routing r = route(sc, &cap);
  const ExpertMap m = place_experts(ExpertPlacement::contiguous, 16, 1, 0, expert_load(r, 16));
  const MoePlan one = rank_plan(sc, r, cap, m, 0);
  CHECK(one.shape.tokens == single.shape.tokens);
  CHECK(one.shape.routed_tokens() == single.shape.routed_tokens());
  CHECK(one.fused.expert == single.fused.expert);
  CHECK(one.fused.weight == single.fused.weight);
  CHECK(one.layout.sorted_rows == single.layout.sorted_rows);
  CHECK(one.kernel.block_m == single.kernel.block_m);
  CHECK(one.stage1.size() == single.stage1.size());
  CHECK(one.stage2.size() == single.stage2.size());
}

TEST_CASE("each GPU's TDM descriptors cover its own experts and tokens", "[ep]") {
  ModelSpec model = make_model(32, 4);
  model.shared_experts = 1;
  model.shared_intermediate_size = 128;
  auto sc = make_scenario(model, 128, 5, RoutingSource::zipf);
  sc.scenario.spec.parallel.ep = 4;
  sc.scenario.spec.parallel.placement = ExpertPlacement::round_robin;
  CapacityReport cap;
  const Routing r = route(sc, &cap);
  const ExpertMap m = place_experts(ExpertPlacement::round_robin, 32, 4, 0, expert_load(r, 32));
  std::uint64_t rows = 0;
  for (std::uint32_t rank = 0; rank < 4; ++rank) {
    const MoePlan p = rank_plan(sc, r, cap, m, rank);
    const auto ds = format::make_moe_descriptors(p, TdmPolicy::load_balance, format::packed_address_map(p, 1 << 20),
                                                 format::SlotLength{});
    REQUIRE(!ds.empty());
    const auto& d = ds.front();
    // Experts per device: the GPU's 8 slots plus the shared expert.
    CHECK(d.layer.experts == 8 + 1);
    CHECK(d.experts.size() == 8 + 1);
    CHECK(d.layer.tokens == p.shape.tokens);
    for (const auto& slot : d.slots) rows += slot.valid_rows;
  }
  // Over the group, the first stage's slots hold every routed pick and one
  // shared row per token, once.
  std::uint64_t picks = 0;
  for (auto e : r.ids) picks += e < 32 ? 1 : 0;
  CHECK(rows == picks + 128);
}

TEST_CASE("micro-batches partition the batch, the picks and the dispatch", "[ep]") {
  ModelSpec model = make_model(32, 4);
  model.shared_experts = 1;
  model.shared_intermediate_size = 128;
  auto sc = make_scenario(model, 203, 9, RoutingSource::zipf);
  sc.scenario.spec.parallel.ep = 4;
  CapacityReport cap;
  const Routing r = route(sc, &cap);
  const ExpertMap m = place_experts(ExpertPlacement::contiguous, 32, 4, 0, expert_load(r, 32));
  const auto where = pick_ranks(r, m, 203, 4);
  const auto whole = dispatch_tokens(where, 203, 4, 4);
  for (const std::uint32_t chunks : {2u, 3u, 7u}) {
    std::vector<std::uint32_t> in(203, 0);
    std::vector<std::uint64_t> sum(16, 0);
    std::vector<std::uint64_t> rows(4, 0), rows_whole(4, 0);
    for (std::uint32_t c = 0; c < chunks; ++c) {
      const auto batch = chunk_tokens(203, 4, chunks, c);
      for (std::uint32_t t = 0; t < 203; ++t) in[t] += batch[t];
      const auto part = dispatch_tokens(where, 203, 4, 4, &batch);
      for (std::size_t i = 0; i < 16; ++i) sum[i] += part[i];
      for (std::uint32_t rank = 0; rank < 4; ++rank) {
        std::vector<std::uint32_t> tokens;
        const MoePlan p = rank_plan(sc, r, cap, m, rank, &tokens, &batch);
        // Its own tokens of the micro-batch: a contiguous part of its share.
        const Range own = own_tokens(203, 4, rank);
        const Range mine = own_tokens(own.end - own.begin, chunks, c);
        CHECK(p.shape.router_tokens == mine.end - mine.begin);
        for (const auto t : tokens) REQUIRE(batch[t] == 1);
        for (auto n : p.layout.expert_rows) rows[rank] += n;
        // Each micro-batch's TDM descriptors hold the GPU's own experts and its tokens.
        const auto ds = format::make_moe_descriptors(p, TdmPolicy::load_balance,
                                                     format::packed_address_map(p, 1 << 20), format::SlotLength{});
        REQUIRE(!ds.empty());
        CHECK(ds.front().layer.experts == 8 + 1);
        CHECK(ds.front().layer.tokens == p.shape.tokens);
      }
    }
    for (auto n : in) REQUIRE(n == 1);  // every token in exactly one micro-batch
    CHECK(sum == whole);
    for (std::uint32_t rank = 0; rank < 4; ++rank) {
      for (auto n : rank_plan(sc, r, cap, m, rank).layout.expert_rows) rows_whole[rank] += n;
    }
    CHECK(rows == rows_whole);  // the same rows (picks and shared) on every GPU
  }
  // The whole batch as one micro-batch is the rank's plan.
  const std::vector<std::uint8_t> all(203, 1);
  const MoePlan a = rank_plan(sc, r, cap, m, 2), b = rank_plan(sc, r, cap, m, 2, nullptr, &all);
  CHECK(a.fused.expert == b.fused.expert);
  CHECK(a.shape.router_tokens == b.shape.router_tokens);
  CHECK(dispatch_tokens(where, 203, 4, 4, &all) == whole);
}
