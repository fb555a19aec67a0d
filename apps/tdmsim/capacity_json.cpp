#include "apps/tdmsim/capacity_json.h"

#include <string>

#include <fmt/core.h>

#include "workloads/config/schema.h"

namespace tdmsim::cli {

using config::Json;

Json capacity_summary(const plan::CapacityReport& c) {
  const double pairs = static_cast<double>(c.pairs);
  return {{"enabled", c.enabled},
          {"capacity_factor", c.enabled ? Json(c.factor) : Json()},
          {"overflow", c.enabled ? Json(std::string(config::enum_name(c.overflow))) : Json()},
          {"capacity", c.enabled ? Json(c.capacity) : Json()},
          {"pairs", c.pairs},
          {"overflowed_pairs", c.overflowed},
          {"dropped_pairs", c.dropped},
          {"dropped_fraction", c.pairs ? static_cast<double>(c.dropped) / pairs : 0.0},
          {"rerouted_pairs", c.rerouted},
          {"rerouted_fraction", c.pairs ? static_cast<double>(c.rerouted) / pairs : 0.0},
          {"tokens_with_drops", c.tokens_with_drops},
          {"tokens_dropped", c.tokens_dropped},
          {"experts_over_capacity", c.experts_over},
          {"max_expert_demand", c.max_demand}};
}

std::string capacity_line(const plan::CapacityReport& c) {
  const auto pct = [&](std::uint64_t n) { return 100.0 * static_cast<double>(n) / static_cast<double>(c.pairs); };
  return fmt::format("capacity factor {} ({} picks per expert, {} experts asked for more, at most {}), overflow {}: "
                     "{} of {} token-expert picks dropped ({:.1f}%), {} rerouted ({:.1f}%); {} tokens lost a pick, "
                     "{} lost all",
                     config::format_real(c.factor), c.capacity, c.experts_over, c.max_demand,
                     config::enum_name(c.overflow), c.dropped, c.pairs, pct(c.dropped), c.rerouted, pct(c.rerouted),
                     c.tokens_with_drops, c.tokens_dropped);
}

}  // namespace tdmsim::cli
