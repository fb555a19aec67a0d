#include "workloads/config/reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <set>

namespace tdmsim::config {

// ---- scalar codecs (schema.h) --------------------------------------------------

std::string scalar_text(const YAML::Node& node) { return node.Scalar(); }

units::Parsed<bool> parse_bool(std::string_view text) {
  if (text == "true") return {true, {}};
  if (text == "false") return {false, {}};
  return {false, "expected true or false, got '" + std::string(text) + "'"};
}

units::Parsed<std::uint64_t> parse_unsigned(std::string_view text, std::uint64_t max) {
  units::Parsed<std::uint64_t> out;
  if (!text.empty() && text.front() == '-') {
    out.error = "must not be negative, got '" + std::string(text) + "'";
    return out;
  }
  std::uint64_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec == std::errc::result_out_of_range || (ec == std::errc{} && ptr == end && v > max)) {
    out.error = "'" + std::string(text) + "' is too large (at most " + std::to_string(max) + ")";
    return out;
  }
  if (ec != std::errc{} || ptr != end) {
    out.error = "expected a whole number, got '" + std::string(text) + "'";
    return out;
  }
  out.value = v;
  return out;
}

units::Parsed<double> parse_real(std::string_view text) {
  units::Parsed<double> out;
  static constexpr std::string_view kNonFinite[] = {".nan", ".NaN", ".NAN", ".inf", ".Inf",
                                                    ".INF", "+.inf", "-.inf", "-.Inf", "+.Inf"};
  for (auto s : kNonFinite) {
    if (text == s) {
      out.error = "must be a finite number, got '" + std::string(text) + "'";
      return out;
    }
  }
  double v = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  if (begin != end && *begin == '+') ++begin;
  auto [ptr, ec] = std::from_chars(begin, end, v);
  if (ec == std::errc::result_out_of_range) {
    out.error = "'" + std::string(text) + "' is out of the range of a double";
    return out;
  }
  if (ec != std::errc{} || ptr != end || begin == end) {
    out.error = "expected a number, got '" + std::string(text) + "'";
    return out;
  }
  if (!std::isfinite(v)) {
    out.error = "must be a finite number, got '" + std::string(text) + "'";
    return out;
  }
  out.value = v;
  return out;
}

std::string format_real(double v) {
  char buf[64];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, v);
  (void)ec;
  return std::string(buf, ptr);
}

std::string one_of_message(const std::vector<std::string>& names, std::string_view got) {
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  return "expected one of " + list + ", got '" + std::string(got) + "'" +
         did_you_mean(got, names);
}

// ---- Reader ---------------------------------------------------------------------

Location location_of(const std::string& file, const YAML::Node& node) {
  const YAML::Mark m = node.Mark();
  if (m.is_null()) return {file, 0, 0};
  return {file, m.line + 1, m.column + 1};
}

std::string node_kind(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Null: return "no value";
    case YAML::NodeType::Scalar: return "'" + node.Scalar() + "'";
    default: return "nothing";
  }
}

std::string key_name_problem(const YAML::Node& key) {
  const bool null = key.IsNull() || key.Tag() == "tag:yaml.org,2002:null";
  if (key.IsScalar() && !null) return "";
  return "a key must be a name, got " + std::string(null ? "null (~)" : node_kind(key));
}

Location nearest_location(const SetMap& set_at, std::string path, const Location& fallback) {
  while (true) {
    if (auto it = set_at.find(path); it != set_at.end()) return it->second;
    const auto cut = path.back() == ']' ? path.rfind('[') : path.rfind('.');
    if (cut == std::string::npos) return fallback;
    path.resize(cut);
  }
}

Reader::Reader(const YAML::Node& map, std::string prefix, ReadContext& ctx,
               std::vector<std::string> reserved)
    : map_(map), prefix_(std::move(prefix)), ctx_(ctx), reserved_(std::move(reserved)) {
  if (!map_.IsMap()) return;
  std::map<std::string, int> first_line;
  for (auto it = map_.begin(); it != map_.end(); ++it) {
    // (Told once, in finish(); not compared as a duplicate of another.)
    if (!key_name_problem(it->first).empty()) continue;
    const std::string key = it->first.Scalar();
    const Location at = location_of(ctx_.file, it->first);
    auto [pos, inserted] = first_line.emplace(key, at.line);
    if (!inserted) {
      ctx_.diags->add(at, prefix_ + key,
                      "duplicate key (first given at line " + std::to_string(pos->second) + ")");
    }
  }
}

YAML::Node Reader::lookup(std::string_view key) {
  // An optional section is looked up twice (to see whether it is there, then
  // to read it): listed once among the keys an unknown one is told of.
  if (std::find(known_.begin(), known_.end(), key) == known_.end()) known_.emplace_back(key);
  if (!map_.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  for (auto it = map_.begin(); it != map_.end(); ++it) {
    if (key_name_problem(it->first).empty() && it->first.Scalar() == key) return it->second;
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

void Reader::error(const YAML::Node& at, const std::string& path, std::string message) {
  ctx_.diags->add(location_of(ctx_.file, at), path, std::move(message));
}

void Reader::erase_below(const std::string& path) {
  auto& set = *ctx_.set_at;
  for (auto it = set.lower_bound(path); it != set.end() && it->first.starts_with(path);) {
    const bool child = path.back() == '[' || it->first.size() == path.size() ||
                       it->first[path.size()] == '.' || it->first[path.size()] == '[';
    it = child ? set.erase(it) : std::next(it);
  }
}

void Reader::finish() {
  if (map_.IsNull() || !map_.IsDefined()) return;
  if (!map_.IsMap()) {
    ctx_.diags->add(location_of(ctx_.file, map_), prefix_.empty() ? "" : prefix_.substr(0, prefix_.size() - 1),
                    "expected a mapping of keys, got " + node_kind(map_));
    return;
  }
  for (auto it = map_.begin(); it != map_.end(); ++it) {
    if (const std::string why = key_name_problem(it->first); !why.empty()) {
      const std::string at = prefix_.empty() ? "" : prefix_.substr(0, prefix_.size() - 1);
      ctx_.diags->add(location_of(ctx_.file, it->first), at, why);
      continue;
    }
    const std::string key = it->first.Scalar();
    bool ok = false;
    for (const auto& k : known_) ok |= (k == key);
    for (const auto& k : reserved_) ok |= (k == key);
    if (ok) continue;
    std::string msg = "unknown key '" + key + "'";
    const std::string hint = did_you_mean(key, known_);
    if (!hint.empty()) {
      msg += hint;
    } else {
      msg += "; expected one of: ";
      for (std::size_t i = 0; i < known_.size(); ++i) msg += (i ? ", " : "") + known_[i];
    }
    ctx_.diags->add(location_of(ctx_.file, it->first), prefix_ + key, msg);
  }
}

}  // namespace tdmsim::config
