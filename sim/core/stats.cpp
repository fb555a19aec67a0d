#include "sim/core/stats.h"

#include <nlohmann/json.hpp>

#include "sim/core/json_text.h"

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

bool StatRegistry::delta(std::size_t i, const Snapshot* since, double& v) const {
  const auto& e = entries_[i];
  if (since != nullptr && !e.counter) return false;
  v = e.read();
  if (since != nullptr && i < since->size()) v -= (*since)[i];
  return true;
}

nlohmann::ordered_json StatRegistry::to_json(const Snapshot* since) const {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  j.get_ref<nlohmann::ordered_json::object_t&>().reserve(entries_.size());
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const auto& e = entries_[i];
    double v = 0;
    if (!delta(i, since, v)) continue;
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

std::string StatRegistry::to_json_text(const Snapshot* since) const {
  // As dump(1) lays out to_json(since): one stat a block of five lines.
  std::string out;
  std::size_t size = 2;
  for (const auto& e : entries_) size += e.key.size() + e.unit.size() + e.description.size() + 64;
  out.reserve(size);
  JsonText w(out);
  bool any = false;
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const auto& e = entries_[i];
    double v = 0;
    if (!delta(i, since, v)) continue;
    out.append(any ? ",\n " : "{\n ");
    any = true;
    w.string(e.key);
    w.raw(": {\n  \"value\": ");
    if (e.integral) w.number(static_cast<std::uint64_t>(v));
    else w.number(v);
    w.raw(",\n  \"unit\": ");
    w.string(e.unit);
    w.raw(",\n  \"desc\": ");
    w.string(e.description);
    w.raw("\n }");
  }
  out.append(any ? "\n}" : "{}");
  return out;
}

void StatRegistry::for_each_key(std::string_view key_prefix, std::string_view key_suffix,
                                const std::function<void(std::string_view key, double value)>& f,
                                const Snapshot* since) const {
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const std::string_view key = entries_[i].key;
    double v = 0;
    if (key.substr(0, key_prefix.size()) != key_prefix || key.size() < key_suffix.size() ||
        key.substr(key.size() - key_suffix.size()) != key_suffix || !delta(i, since, v)) {
      continue;
    }
    // (to_json holds a count as an unsigned integer.)
    f(key, entries_[i].integral ? static_cast<double>(static_cast<std::uint64_t>(v)) : v);
  }
}

double StatRegistry::sum_keys(std::string_view key_prefix, std::string_view key_suffix, const Snapshot* since) const {
  double total = 0;
  for_each_key(key_prefix, key_suffix, [&](std::string_view, double v) { total += v; }, since);
  return total;
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
