#include "descriptors/emulator/plan_check.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "descriptors/emulator/quantize.h"

namespace tdmsim::emu {
namespace {

[[noreturn]] void fail(const std::string& what) {
  throw std::invalid_argument("inconsistent MoE plan: " + what);
}

void check_shape(const plan::LayerShape& s) {
  if (s.tokens == 0 || s.hidden == 0) fail("tokens and hidden must be non-zero");
  if (s.slots() == 0) fail("a token needs at least one slot (top_k + shared)");
  if (s.experts_fused() > 0 && s.inter == 0) fail("experts need intermediate size > 0");
  if (s.shared > 0) {
    // Shared experts run as routed-size chunks (plan::shared_slot).
    const std::uint64_t chunks = s.shared_chunks, inter = s.inter;
    if (s.shared_inter == 0 || chunks == 0 || s.shared != s.shared_experts * s.shared_chunks ||
        (chunks - 1) * inter >= s.shared_inter || chunks * inter < s.shared_inter) {
      fail(fmt::format("shared slots {} != shared experts {} x chunks {} of I = {} covering "
                       "shared_inter {}",
                       s.shared, s.shared_experts, s.shared_chunks, s.inter, s.shared_inter));
    }
  }
  if (s.experts_local > s.experts_total) fail("more local experts than experts in the model");
  check_quant(s.dtype, operand_quant(s.dtype, s.quant));
  check_quant(s.weight_dtype, operand_quant(s.weight_dtype, s.quant));
}

void check_fused(const plan::LayerShape& s, const plan::FusedRouting& f) {
  const std::size_t rows = std::size_t{s.tokens} * s.slots();
  if (f.expert.size() != rows || f.weight.size() != rows) {
    fail(fmt::format("fused routing has {} ids and {} weights, expected tokens x slots = {}",
                     f.expert.size(), f.weight.size(), rows));
  }
  for (std::size_t r = 0; r < rows; ++r) {
    if (f.expert[r] != plan::kRemoteExpert && f.expert[r] >= s.experts_fused()) {
      fail(fmt::format("row {} (token {}, slot {}) names fused expert {}, layer has {}", r,
                       r / s.slots(), r % s.slots(), f.expert[r], s.experts_fused()));
    }
    if (!std::isfinite(f.weight[r])) fail(fmt::format("row {} has a non-finite weight", r));
  }
}

void check_layout(const plan::LayerShape& s, const plan::FusedRouting& f,
                  const plan::BlockLayout& l) {
  const std::uint32_t rows = s.tokens * s.slots();
  const std::uint32_t m = l.block_m;
  if (m == 0) fail("block_m is 0");
  if (l.sentinel != rows) fail(fmt::format("sentinel {} != tokens x slots {}", l.sentinel, rows));
  if (l.padded_rows % m != 0) {
    fail(fmt::format("padded_rows {} is not a multiple of block_m {}", l.padded_rows, m));
  }
  if (l.sorted_rows.size() < l.padded_rows || l.sorted_weights.size() < l.padded_rows) {
    fail(fmt::format("sorted_rows ({}) / sorted_weights ({}) shorter than padded_rows {}",
                     l.sorted_rows.size(), l.sorted_weights.size(), l.padded_rows));
  }
  if (l.block_expert.size() != l.padded_rows / m) {
    fail(fmt::format("{} block experts for {} blocks", l.block_expert.size(), l.padded_rows / m));
  }
  std::vector<std::uint8_t> seen(rows, 0);
  for (std::uint32_t p = 0; p < l.padded_rows; ++p) {
    const std::uint32_t row = l.sorted_rows[p];
    const std::uint32_t e = l.block_expert[p / m];
    if (e >= s.experts_fused()) fail(fmt::format("block {} names expert {}", p / m, e));
    if (row == l.sentinel) continue;
    if (row > rows) fail(fmt::format("sorted position {} holds row {} > sentinel {}", p, row, rows));
    if (seen[row]++ != 0) fail(fmt::format("row {} appears twice in the layout", row));
    if (f.expert[row] != e) {
      fail(fmt::format("row {} (expert {}) sits in block {} of expert {}", row, f.expert[row],
                       p / m, e));
    }
    if (l.sorted_weights[p] != f.weight[row]) {
      fail(fmt::format("sorted weight at {} differs from row {}'s routing weight", p, row));
    }
  }
  for (std::uint32_t row = 0; row < rows; ++row) {
    if (f.expert[row] != plan::kRemoteExpert && seen[row] == 0) {
      fail(fmt::format("row {} (token {}, slot {}, expert {}) is missing from the layout", row,
                       row / s.slots(), row % s.slots(), f.expert[row]));
    }
  }
}

}  // namespace

void check_plan(const plan::MoePlan& plan) {
  check_shape(plan.shape);
  check_fused(plan.shape, plan.fused);
  check_layout(plan.shape, plan.fused, plan.layout);
}

}  // namespace tdmsim::emu
