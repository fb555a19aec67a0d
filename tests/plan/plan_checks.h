// The invariants every plan must satisfy (docs/moe-plan.md "The block layout"
// and "Tile jobs"), checked with REQUIREs; shared by the property tests and
// the shipped-scenario tests.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <tuple>
#include <vector>

#include "descriptors/plan/moe_plan.h"

namespace tdmsim::plan::test {

inline void check_plan(const MoePlan& p) {
  const LayerShape& s = p.shape;
  const BlockLayout& L = p.layout;
  const std::uint32_t slots = s.slots();
  const std::uint32_t rows = s.tokens * slots;
  const std::uint32_t experts = s.experts_fused();
  const std::uint32_t M = L.block_m;

  // Fused routing: routed picks keep local ids or become remote; shared slots
  // are always selected with weight 1.
  REQUIRE(p.fused.expert.size() == rows);
  for (std::uint32_t t = 0; t < s.tokens; ++t) {
    for (std::uint32_t j = 0; j < s.top_k; ++j) {
      const std::uint32_t g = p.routing.ids[t * s.top_k + j];
      const std::uint32_t f = p.fused.expert[t * slots + j];
      REQUIRE(f == (g < s.experts_local ? g : kRemoteExpert));
      REQUIRE(p.fused.weight[t * slots + j] == p.routing.weights[t * s.top_k + j]);
    }
    for (std::uint32_t c = 0; c < s.shared; ++c) {
      REQUIRE(p.fused.expert[t * slots + s.top_k + c] == s.experts_local + c);
      REQUIRE(p.fused.weight[t * slots + s.top_k + c] == 1.0f);
    }
  }

  // Sizes and bounds.
  REQUIRE(L.sentinel == rows);
  REQUIRE(L.capacity == rows + experts * M - slots);
  REQUIRE(L.padded_rows % M == 0);
  REQUIRE(L.padded_rows <= L.capacity);
  REQUIRE(L.sorted_rows.size() == L.capacity);
  REQUIRE(L.sorted_weights.size() == L.capacity);
  REQUIRE(L.block_expert.size() == L.padded_rows / M);
  REQUIRE(L.expert_rows.size() == experts);
  REQUIRE(L.expert_first_block.size() == experts + 1);
  REQUIRE(L.expert_first_block.front() == 0);
  REQUIRE(L.expert_first_block.back() * M == L.padded_rows);

  // Every local (token, slot) row exactly once; nothing else but sentinels.
  std::vector<std::uint32_t> seen(rows, 0);
  for (std::uint32_t i = 0; i < L.capacity; ++i) {
    const std::uint32_t r = L.sorted_rows[i];
    if (r == L.sentinel) {
      REQUIRE(L.sorted_weights[i] == 0.0f);
      continue;
    }
    REQUIRE(i < L.padded_rows);
    REQUIRE(r < rows);
    ++seen[r];
    REQUIRE(L.sorted_weights[i] == p.fused.weight[r]);
    REQUIRE(p.fused.expert[r] == L.block_expert[i / M]);  // block expert consistent
  }
  for (std::uint32_t r = 0; r < rows; ++r) {
    REQUIRE(seen[r] == (p.fused.expert[r] == kRemoteExpert ? 0u : 1u));
  }

  // Per expert: ceil(rows / M) blocks, rows first in increasing row id,
  // padding only at the tail of the expert's last block.
  for (std::uint32_t e = 0; e < experts; ++e) {
    const std::uint32_t n = L.expert_rows[e];
    const std::uint32_t first = L.expert_first_block[e];
    REQUIRE(L.expert_first_block[e + 1] - first == (n + M - 1) / M);
    for (std::uint32_t b = first; b < L.expert_first_block[e + 1]; ++b) {
      REQUIRE(L.block_expert[b] == e);
    }
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::uint32_t r = L.sorted_rows[first * M + i];
      REQUIRE(r != L.sentinel);
      REQUIRE(p.fused.expert[r] == e);
      if (i > 0) REQUIRE(r > L.sorted_rows[first * M + i - 1]);
    }
    for (std::uint32_t i = first * M + n; i < L.expert_first_block[e + 1] * M; ++i) {
      REQUIRE(L.sorted_rows[i] == L.sentinel);
    }
  }

  // Tile jobs: block-major, complete, valid rows = real rows of the block,
  // and their N and K ranges tile the GEMM dimensions exactly.
  const KernelChoice& k = p.kernel;
  REQUIRE(k.block_m == M);
  REQUIRE(k.split_k >= 1);
  const std::uint32_t blocks = L.padded_rows / M;
  const auto check_stage = [&](const std::vector<TileJob>& listed, Stage stage) {
    const std::uint32_t splits = stage == Stage::fused ? 1 : k.split_k;
    // Listed in the order of rules::job_at; checked below block by block.
    const std::uint32_t n_tiles = blocks ? static_cast<std::uint32_t>(listed.size() / (std::size_t{blocks} * splits)) : 0;
    REQUIRE(listed.size() == std::size_t{blocks} * n_tiles * splits);
    for (std::size_t id = 0; id < listed.size(); ++id) {
      const rules::JobAt at = rules::job_at(static_cast<std::uint32_t>(id), blocks, n_tiles, splits,
                                            std::max(1u, k.raster_group));
      REQUIRE(listed[id].block == at.block);
      REQUIRE(listed[id].n_tile == at.n_tile);
      REQUIRE(listed[id].k_split == at.split);
    }
    std::vector<TileJob> jobs = listed;
    std::sort(jobs.begin(), jobs.end(), [](const TileJob& a, const TileJob& b) {
      return std::tie(a.block, a.n_tile, a.k_split) < std::tie(b.block, b.n_tile, b.k_split);
    });
    // gate_up and fused jobs slice the intermediate; down jobs slice H.
    const std::uint32_t n_dim = stage == Stage::down ? s.hidden : s.inter;
    const std::uint32_t k_dim = stage == Stage::down ? s.inter : s.hidden;
    std::size_t i = 0;
    for (std::uint32_t b = 0; b < blocks; ++b) {
      std::uint32_t valid = 0;
      for (std::uint32_t r = 0; r < M; ++r) valid += L.sorted_rows[b * M + r] != L.sentinel;
      std::uint32_t n_end = 0;
      for (std::uint32_t n = 0; i < jobs.size() && jobs[i].block == b; ++n) {
        std::uint32_t k_end = 0;
        for (std::uint32_t sk = 0; sk < splits; ++sk, ++i) {
          const TileJob& j = jobs.at(i);
          REQUIRE(j.stage == stage);
          REQUIRE(j.block == b);
          REQUIRE(j.expert == L.block_expert[b]);
          REQUIRE(j.n_tile == n);
          REQUIRE(j.k_split == sk);
          REQUIRE(j.valid_rows == valid);
          const Range nr = job_n_range(s, k, j);
          REQUIRE(nr.begin == n_end);
          REQUIRE(nr.end > nr.begin);
          const Range kr = job_k_range(s, k, j);
          REQUIRE(kr.begin == k_end);
          REQUIRE(kr.end > kr.begin);
          k_end = kr.end;
        }
        REQUIRE(k_end == k_dim);
        n_end = job_n_range(s, k, jobs[i - 1]).end;
      }
      REQUIRE(n_end == n_dim);
    }
    REQUIRE(i == jobs.size());
  };
  if (k.stages == 1) {
    check_stage(p.stage1, Stage::fused);
    REQUIRE(p.stage2.empty());
  } else {
    check_stage(p.stage1, Stage::gate_up);
    check_stage(p.stage2, Stage::down);
  }
}

inline bool same_plan(const MoePlan& a, const MoePlan& b) {
  return a.routing.ids == b.routing.ids && a.routing.weights == b.routing.weights &&
         a.fused.expert == b.fused.expert && a.fused.weight == b.fused.weight &&
         a.layout.sorted_rows == b.layout.sorted_rows &&
         a.layout.sorted_weights == b.layout.sorted_weights &&
         a.layout.block_expert == b.layout.block_expert && a.kernel.reason == b.kernel.reason &&
         a.stage1.size() == b.stage1.size() && a.stage2.size() == b.stage2.size();
}

}  // namespace tdmsim::plan::test
