#include "workloads/config/writer.h"

#include <cmath>
#include <string>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

namespace tdmsim::config {
namespace {

// The shortest text that reads back as the same double (0.3, not
// 0.29999999999999999), always with a point or exponent so that it reads back
// as a number with a fraction, as the JSON output writes it.
std::string double_text(double v) {
  if (std::isnan(v)) return ".nan";
  if (std::isinf(v)) return v > 0 ? ".inf" : "-.inf";
  std::string t = fmt::format("{}", v);
  if (t.find_first_of(".e") == std::string::npos) t += ".0";
  return t;
}

void emit(YAML::Emitter& e, const Json& j) {
  switch (j.type()) {
    case Json::value_t::object:
      e << YAML::BeginMap;
      for (const auto& [k, v] : j.items()) {
        e << YAML::Key << k << YAML::Value;
        // An empty string key is an unset one ("" is refused where it is read:
        // schema.h check_range); `~` reads back as unset.
        if (v.is_string() && v.get_ref<const std::string&>().empty()) e << YAML::Null;
        else emit(e, v);
      }
      e << YAML::EndMap;
      break;
    case Json::value_t::array:
      e << YAML::Flow << YAML::BeginSeq;
      for (const auto& v : j) emit(e, v);
      e << YAML::EndSeq;
      break;
    case Json::value_t::null: e << YAML::Null; break;
    case Json::value_t::boolean: e << j.get<bool>(); break;
    case Json::value_t::string: e << j.get<std::string>(); break;
    case Json::value_t::number_float: e << double_text(j.get<double>()); break;
    case Json::value_t::number_unsigned: e << j.get<std::uint64_t>(); break;
    case Json::value_t::number_integer: e << j.get<std::int64_t>(); break;
    default: e << YAML::Null; break;
  }
}

}  // namespace

std::string json_to_yaml(const Json& j) {
  YAML::Emitter e;
  emit(e, j);
  return std::string(e.c_str()) + "\n";
}

}  // namespace tdmsim::config
