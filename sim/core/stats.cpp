#include "sim/core/stats.h"

namespace tdmsim::sim {

void StatRegistry::add(const std::string& owner, const std::string& name,
                       const std::uint64_t* value, std::string unit, std::string description) {
  entries_.push_back({owner + "." + name, owner, name, std::move(unit), std::move(description),
                      [value] { return static_cast<double>(*value); }, true});
}

void StatRegistry::add(const std::string& owner, const std::string& name, const double* value,
                       std::string unit, std::string description) {
  entries_.push_back({owner + "." + name, owner, name, std::move(unit), std::move(description),
                      [value] { return *value; }, false});
}

void StatRegistry::formula(const std::string& owner, const std::string& name,
                           std::function<double()> f, std::string unit,
                           std::string description) {
  entries_.push_back({owner + "." + name, owner, name, std::move(unit), std::move(description),
                      std::move(f), false});
}

nlohmann::ordered_json StatRegistry::to_json() const {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& e : entries_) {
    const double v = e.read();
    nlohmann::ordered_json s;
    if (e.integral) s["value"] = static_cast<std::uint64_t>(v);
    else s["value"] = v;
    s["unit"] = e.unit;
    s["desc"] = e.description;
    j[e.key] = std::move(s);
  }
  return j;
}

double StatRegistry::sum(const std::string& owner_prefix, const std::string& name) const {
  double total = 0;
  for (const auto& e : entries_) {
    if (e.name == name && e.owner.rfind(owner_prefix, 0) == 0) total += e.read();
  }
  return total;
}

}  // namespace tdmsim::sim
