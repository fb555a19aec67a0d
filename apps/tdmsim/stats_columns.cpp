#include "apps/tdmsim/stats_columns.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

namespace tdmsim::cli {

using config::Json;

Json stats_to_columns(const Json& stats) {
  Json keys = Json::array(), values = Json::array(), meta = Json::array(), metas = Json::array();
  std::unordered_map<std::string, std::uint32_t> meta_index;
  for (const auto& [key, stat] : stats.items()) {
    if (stat.size() != 3) throw std::logic_error("internal error: stat " + key + " is not {value, unit, desc}");
    keys.push_back(key);
    values.push_back(stat.at("value"));
    const auto& unit = stat.at("unit").get_ref<const std::string&>();
    const auto& desc = stat.at("desc").get_ref<const std::string&>();
    const auto [at, added] = meta_index.try_emplace(unit + '\n' + desc, static_cast<std::uint32_t>(metas.size()));
    if (added) metas.push_back(Json::array({unit, desc}));
    meta.push_back(at->second);
  }
  return {{"keys", std::move(keys)}, {"values", std::move(values)}, {"meta", std::move(meta)},
          {"metas", std::move(metas)}};
}

Json stats_from_columns(Json&& columns) {
  auto& keys = columns.at("keys").get_ref<Json::array_t&>();
  auto& values = columns.at("values").get_ref<Json::array_t&>();
  const auto& meta = columns.at("meta").get_ref<const Json::array_t&>();
  const auto& metas = columns.at("metas");
  if (values.size() != keys.size() || meta.size() != keys.size()) {
    throw std::logic_error("internal error: stats columns of different lengths");
  }
  // Appended in their order, each into room for its three fields: the keys
  // are unique, so nothing needs looking up.
  Json stats = Json::object();
  auto& out = stats.get_ref<Json::object_t&>();
  out.reserve(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const Json& unit_desc = metas.at(meta[i].get<std::size_t>());
    Json stat = Json::object();
    auto& fields = stat.get_ref<Json::object_t&>();
    fields.reserve(3);
    fields.emplace_back("value", std::move(values[i]));
    fields.emplace_back("unit", unit_desc.at(0));
    fields.emplace_back("desc", unit_desc.at(1));
    out.emplace_back(std::move(keys[i].get_ref<std::string&>()), std::move(stat));
  }
  return stats;
}

}  // namespace tdmsim::cli
