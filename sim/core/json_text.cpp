#include "sim/core/json_text.h"

#include <nlohmann/json.hpp>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace tdmsim::sim {

using OrderedJson = nlohmann::ordered_json;

struct JsonText::Serializer {
  explicit Serializer(std::string& out)
      : s(nlohmann::detail::output_adapter<char, std::string>(out), ' ', nlohmann::detail::error_handler_t::strict) {}
  nlohmann::detail::serializer<OrderedJson> s;
};

JsonText::JsonText(std::string& out) : out_(out), serializer_(std::make_unique<Serializer>(out)) {}
JsonText::~JsonText() = default;

namespace {

// Whether nlohmann would write every byte of `s` as it is: printable ASCII
// other than '"' and '\\'. The plain loop is the reference; on x86-64 (SSE2
// is part of the base ISA) 16 bytes are checked at once, since the byte loop
// was not vectorised and the stats' keys and descriptions (half a MB for a
// 256-CU GPU) cost 13 instructions a byte.
bool plain_bytes(std::string_view s) {
  std::size_t i = 0;
#if defined(__SSE2__)
  const __m128i below = _mm_set1_epi8(0x20), del = _mm_set1_epi8(0x7f);
  const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
  for (; i + 16 <= s.size(); i += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s.data() + i));
    // Signed bytes: below 0x20 or 0x80 and above are both less than 0x20.
    const __m128i bad = _mm_or_si128(_mm_or_si128(_mm_cmplt_epi8(v, below), _mm_cmpeq_epi8(v, del)),
                                     _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)));
    if (_mm_movemask_epi8(bad) != 0) return false;
  }
#endif
  bool plain = true;
  for (; i < s.size(); ++i) {
    const auto u = static_cast<unsigned char>(s[i]);
    plain &= (u - 0x20u < 0x5fu) & (u != '"') & (u != '\\');
  }
  return plain;
}

}  // namespace

void JsonText::string(std::string_view s) {
  // Printable ASCII other than '"' and '\\' is written as it is by nlohmann
  // (ensure_ascii off); everything else goes through its escaping.
  if (!plain_bytes(s)) {
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
