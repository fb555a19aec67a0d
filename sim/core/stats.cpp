#include "sim/core/stats.h"

#include <nlohmann/json.hpp>

namespace tdmsim::sim {

void StatRegistry::add(const std::string& owner, const std::string& name,
                       const std::uint64_t* value, std::string unit, std::string description) {
  entries_.push_back({owner + "." + name, owner, name, std::move(unit), std::move(description),
                      [value] { return static_cast<double>(*value); }, true, true});
}

void StatRegistry::add(const std::string& owner, const std::string& name, const double* value,
                       std::string unit, std::string description) {
  entries_.push_back({owner + "." + name, owner, name, std::move(unit), std::move(description),
                      [value] { return *value; }, false, true});
}

void StatRegistry::formula(const std::string& owner, const std::string& name,
                           std::function<double()> f, std::string unit,
                           std::string description) {
  entries_.push_back({owner + "." + name, owner, name, std::move(unit), std::move(description),
                      std::move(f), false, false});
}

void StatRegistry::share(const std::string& owner, const std::string& name, const std::uint64_t* a,
                         const std::uint64_t* b, std::string description) {
  formula(owner, name, [a, b] {
    const double all = static_cast<double>(*a + *b);
    return all > 0 ? static_cast<double>(*a) / all : 0.0;
  }, "ratio", std::move(description));
}

StatRegistry::Snapshot StatRegistry::snapshot() const {
  Snapshot s;
  s.reserve(entries_.size());
  for (const auto& e : entries_) s.push_back(e.read());
  return s;
}

nlohmann::ordered_json StatRegistry::to_json(const Snapshot* since) const {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  j.get_ref<nlohmann::ordered_json::object_t&>().reserve(entries_.size());
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const auto& e = entries_[i];
    if (since != nullptr && !e.counter) continue;
    double v = e.read();
    if (since != nullptr && i < since->size()) v -= (*since)[i];
    // {"value", "unit", "desc"}, appended into room for three (operator[]
    // would search and grow the map key by key, thousands of times a run).
    nlohmann::ordered_json s = nlohmann::ordered_json::object();
    auto& fields = s.get_ref<nlohmann::ordered_json::object_t&>();
    fields.reserve(3);
    if (e.integral) fields.emplace_back("value", static_cast<std::uint64_t>(v));
    else fields.emplace_back("value", v);
    fields.emplace_back("unit", e.unit);
    fields.emplace_back("desc", e.description);
    // Appended, not looked up: keys are unique (one per block and name), and
    // ordered_json's operator[] searches linearly, which made a machine of
    // thousands of HBM channels take minutes here.
    j.get_ref<nlohmann::ordered_json::object_t&>().emplace_back(e.key, std::move(s));
  }
  return j;
}

double StatRegistry::sum(const std::string& owner_prefix, const std::string& name,
                         const Snapshot* since) const {
  double total = 0;
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const auto& e = entries_[i];
    if (e.name == name && e.owner.rfind(owner_prefix, 0) == 0) {
      total += e.read() - (since != nullptr && i < since->size() ? (*since)[i] : 0.0);
    }
  }
  return total;
}

}  // namespace tdmsim::sim
