// Uniform statistics: each block registers its counters once (name, unit,
// description) under its hierarchical name, bumps plain members on the hot
// path, and one dumper writes them all (stats.json). Derived stats are
// formulas evaluated at dump time.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace tdmsim::sim {

class StatRegistry {
 public:
  // `owner` is a hierarchical name such as "gpu.xcd[2].l2".
  void add(const std::string& owner, const std::string& name, const std::uint64_t* value,
           std::string unit, std::string description);
  void add(const std::string& owner, const std::string& name, const double* value,
           std::string unit, std::string description);
  void formula(const std::string& owner, const std::string& name, std::function<double()> f,
               std::string unit, std::string description);
  // A derived ratio a / (a + b) of two counters (0 when both are 0), e.g. a
  // hit rate from hits and misses.
  void share(const std::string& owner, const std::string& name, const std::uint64_t* a,
             const std::uint64_t* b, std::string description);

  // Every stat's value now, in registration order: taken between runs on one
  // simulated GPU so a run's own counts are the difference.
  using Snapshot = std::vector<double>;
  Snapshot snapshot() const;

  // {"gpu.xcd[0].l2.hits": {"value": 12, "unit": "count", "desc": "..."}, ...}
  // With `since`, counters are the increase since that snapshot and formulas
  // (ratios of cumulative counts) are left out.
  nlohmann::ordered_json to_json(const Snapshot* since = nullptr) const;
  // Sum of a counter over every owner whose name matches `owner_prefix`...`.name`
  // (its increase since `since`, if given).
  double sum(const std::string& owner_prefix, const std::string& name,
             const Snapshot* since = nullptr) const;

 private:
  struct Entry {
    std::string key;  // owner.name
    std::string owner;
    std::string name;
    std::string unit;
    std::string description;
    std::function<double()> read;
    bool integral;
    bool counter;  // false for formulas
  };
  std::vector<Entry> entries_;
};

}  // namespace tdmsim::sim
