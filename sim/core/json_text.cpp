#include "sim/core/json_text.h"

#include <nlohmann/json.hpp>

namespace tdmsim::sim {

using OrderedJson = nlohmann::ordered_json;

struct JsonText::Serializer {
  explicit Serializer(std::string& out)
      : s(nlohmann::detail::output_adapter<char, std::string>(out), ' ', nlohmann::detail::error_handler_t::strict) {}
  nlohmann::detail::serializer<OrderedJson> s;
};

JsonText::JsonText(std::string& out) : out_(out), serializer_(std::make_unique<Serializer>(out)) {}
JsonText::~JsonText() = default;

void JsonText::string(std::string_view s) {
  // Printable ASCII other than '"' and '\\' is written as it is by nlohmann
  // (ensure_ascii off); everything else goes through its escaping.
  // (No early exit, so that the compiler checks many bytes an instruction.)
  bool plain = true;
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    plain &= (u - 0x20u < 0x5fu) & (u != '"') & (u != '\\');
  }
  if (!plain) {
    serializer_->s.dump(OrderedJson(std::string(s)), false, false, 0);
    return;
  }
  out_.push_back('"');
  out_.append(s);
  out_.push_back('"');
}

void JsonText::number(std::uint64_t v) { serializer_->s.dump(OrderedJson(v), false, false, 0); }
void JsonText::number(double v) { serializer_->s.dump(OrderedJson(v), false, false, 0); }

std::string json_object_text(const std::vector<std::pair<std::string, std::string>>& members,
                             unsigned indent_step) {
  if (members.empty()) return "{}";
  std::string out;
  std::size_t size = 2;
  for (const auto& [key, value] : members) size += key.size() + value.size() * 11 / 10 + 8 + indent_step;
  out.reserve(size);
  JsonText w(out);
  out.push_back('{');
  for (std::size_t i = 0; i < members.size(); ++i) {
    w.newline(indent_step);
    w.string(members[i].first);
    out.append(": ");
    // The value's own lines, one level deeper (raw newlines in JSON text are
    // only ever between tokens: strings escape theirs).
    const std::string& v = members[i].second;
    std::size_t from = 0;
    for (std::size_t nl = v.find('\n'); nl != std::string::npos; nl = v.find('\n', from)) {
      out.append(v, from, nl - from);
      w.newline(indent_step);
      from = nl + 1;
    }
    out.append(v, from, std::string::npos);
    if (i + 1 < members.size()) out.push_back(',');
  }
  out.push_back('\n');
  out.push_back('}');
  return out;
}

}  // namespace tdmsim::sim
