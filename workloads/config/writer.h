// Writes a spec, every parameter after defaults and overlays, as ordered JSON
// (the "fully resolved config" written beside every run's results) and as YAML.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "workloads/config/schema.h"

namespace tdmsim::config {

using Json = nlohmann::ordered_json;

class JsonWriter {
 public:
  template <class T, class... Opts>
  void param(T& member, std::string_view key, std::string_view, const Opts&...) {
    if constexpr (IsVector<T>::value) {
      Json arr = Json::array();
      for (const auto& e : member) arr.push_back(scalar(e));
      out[std::string(key)] = std::move(arr);
    } else {
      Json v = scalar(member);
      // An empty text is an unset value (a file writes `~` or leaves the key
      // out; `kernel.config` alone also reads "" as none): null, as the YAML
      // writer's `~`, so that both formats of `config show` and config.json
      // say the same.
      if (v.is_string() && v.get_ref<const std::string&>().empty()) v = nullptr;
      out[std::string(key)] = std::move(v);
    }
  }
  template <class S>
  void section(S& member, std::string_view key, std::string_view) {
    JsonWriter sub;
    member.visit(sub);
    out[std::string(key)] = std::move(sub.out);
  }
  template <class S>
  void section(std::optional<S>& member, std::string_view key, std::string_view doc) {
    if (member) section(*member, key, doc);
    else out[std::string(key)] = nullptr;
  }

  template <class T, class... Opts>
  void node(T& member, std::string_view key, std::string_view, const Opts&...) {
    out[std::string(key)] = NodeTraits<T>::to_json(member);
  }

  Json out = Json::object();

 private:
  // Numbers and booleans stay JSON numbers/booleans; quantities become their
  // canonical unit text ("2.1GHz") so the output reads back as input.
  template <class T>
  static Json scalar(const T& v) {
    if constexpr (std::is_same_v<T, bool> || std::is_arithmetic_v<T>) return v;
    else return ValueTraits<T>::text(v);
  }
};

template <class S>
Json to_json(S spec) {
  JsonWriter w;
  spec.visit(w);
  return std::move(w.out);
}

// YAML text of a JSON document written by JsonWriter (block style, key order kept).
std::string json_to_yaml(const Json& j);

}  // namespace tdmsim::config
