// Uniform statistics: each block registers its counters once (name, unit,
// description) under its hierarchical name, bumps plain members on the hot
// path, and one dumper writes them all (stats.json). Derived stats are
// formulas evaluated at dump time.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
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
  // The text to_json(since).dump(1) gives, written directly (json_text.h):
  // no tree of thousands of objects is built.
  std::string to_json_text(const Snapshot* since = nullptr) const;
  // The sum of the values to_json(since) gives whose key starts with
  // `key_prefix` and ends with `key_suffix`, added in its order, each value as
  // that object holds it (a count as an integer).
  double sum_keys(std::string_view key_prefix, std::string_view key_suffix, const Snapshot* since = nullptr) const;
  // Calls f(key, value) for every stat to_json(since) holds whose key starts
  // with `key_prefix` and ends with `key_suffix`, in its order, each value as
  // that object holds it: what a caller would read from the tree, without it.
  void for_each_key(std::string_view key_prefix, std::string_view key_suffix,
                    const std::function<void(std::string_view key, double value)>& f,
                    const Snapshot* since = nullptr) const;
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
  // Entry i's value as to_json(since) gives it; false if to_json leaves it out.
  bool delta(std::size_t i, const Snapshot* since, double& v) const;
  std::vector<Entry> entries_;
};

}  // namespace tdmsim::sim
