// JSON text written directly (sim/core/json_text.h, StatRegistry::to_json_text
// and sum_keys) against the reference: nlohmann's dump of the same tree.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/core/json_text.h"
#include "sim/core/stats.h"

using Json = nlohmann::ordered_json;
using tdmsim::sim::JsonText;
using tdmsim::sim::StatRegistry;

namespace {

std::string text_of(double v) {
  std::string s;
  JsonText(s).number(v);
  return s;
}

}  // namespace

TEST_CASE("JsonText writes numbers and strings as nlohmann's dump does", "[host-speed]") {
  for (const double v : {0.0, -0.0, 1.0, 0.1, 1e-17, 123456789.125, 1e300, -2.5e-310, 5e-324, 1.0 / 3.0,
                         std::numeric_limits<double>::max(), std::numeric_limits<double>::quiet_NaN(),
                         std::numeric_limits<double>::infinity(), 9007199254740993.0, 4.35e15}) {
    CHECK(text_of(v) == Json(v).dump());
  }
  for (const std::uint64_t v : {std::uint64_t{0}, std::uint64_t{7}, std::uint64_t{1234567890123},
                                std::numeric_limits<std::uint64_t>::max()}) {
    std::string s;
    JsonText(s).number(v);
    CHECK(s == Json(v).dump());
  }
  for (const std::string& v : {std::string(), std::string("count"), std::string("busy time, \"quoted\"\n"),
                              std::string("back\\slash\ttab"), std::string("\x01\x1f\x7f"),
                              std::string("\xc2\xb5s per row"), std::string("gpu.xcd[0].cu[17].l1.hits")}) {
    std::string s;
    JsonText(s).string(v);
    CHECK(s == Json(v).dump());
  }
}

TEST_CASE("JsonText::string's 16-byte check finds every byte nlohmann escapes, wherever it sits", "[host-speed]") {
  // Plain bytes next to the escaped ones ('!' and '#' around '"', '[' and
  // ']' around '\\', ' ' and '~' at the ends of the printable range).
  const std::string plain = " !#[]~az09.";
  const std::vector<std::string> odd = {"\x01", "\x1f", "\x7f", "\"", "\\", "\n", "\xc2\xb5"};
  for (std::size_t len = 0; len <= 70; ++len) {
    std::string base;
    for (std::size_t i = 0; i < len; ++i) base.push_back(plain[(i * 7 + len) % plain.size()]);
    std::string s;
    JsonText(s).string(base);
    CHECK(s == Json(base).dump());
    for (std::size_t pos = 0; pos < len; ++pos) {
      for (const std::string& o : odd) {
        const std::string v = base.substr(0, pos) + o + base.substr(pos + 1);
        std::string t;
        JsonText(t).string(v);
        INFO("length " << len << ", odd byte at " << pos);
        CHECK(t == Json(v).dump());
      }
    }
  }
}

TEST_CASE("json_object_text nests dumped values as dump(1) and dump(2) nest them", "[host-speed]") {
  Json a = Json::object();
  a["x"] = {{"value", 1}, {"list", {1, 2.5, "s\n"}}, {"empty", Json::object()}};
  a["y"] = Json::object();
  a["z \"q\""] = 3.25;
  for (const unsigned step : {1u, 2u}) {
    std::vector<std::pair<std::string, std::string>> members;
    for (const auto& [k, v] : a.items()) members.emplace_back(k, v.dump(static_cast<int>(step)));
    CHECK(tdmsim::sim::json_object_text(members, step) == a.dump(static_cast<int>(step)));
    // And one level deeper.
    Json outer = Json::object();
    outer["software"] = a;
    outer["tdm"] = Json::object();
    const std::vector<std::pair<std::string, std::string>> top = {
        {"software", tdmsim::sim::json_object_text(members, step)}, {"tdm", "{}"}};
    CHECK(tdmsim::sim::json_object_text(top, step) == outer.dump(static_cast<int>(step)));
  }
  CHECK(tdmsim::sim::json_object_text({}, 1) == Json::object().dump(1));
}

TEST_CASE("StatRegistry::to_json_text is to_json().dump(1), sum_keys and for_each_key give what to_json holds", "[host-speed]") {
  StatRegistry r;
  std::vector<std::uint64_t> counts(12);
  std::vector<double> times(12);
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const std::string me = "gpu.xcd[" + std::to_string(i % 3) + "].cu[" + std::to_string(i) + "]";
    r.add(me, "hits", &counts[i], "count", "hits");
    r.add(me, "busy_time", &times[i], "ps", i % 4 == 0 ? "busy time, \"quoted\"\n" : "busy time");
    r.share(me, "hit_rate", &counts[i], &counts[(i + 1) % counts.size()], "a ratio: left out of deltas");
  }
  CHECK(r.to_json_text() == r.to_json().dump(1));  // all zero
  const StatRegistry::Snapshot before = r.snapshot();
  for (std::size_t i = 0; i < counts.size(); ++i) {
    counts[i] = 1000003 * i + (i % 5);
    times[i] = 0.1 * static_cast<double>(i) + 1e-17;
  }
  CHECK(r.to_json_text() == r.to_json().dump(1));
  const StatRegistry::Snapshot mid = r.snapshot();
  for (std::size_t i = 0; i < counts.size(); ++i) {
    counts[i] += 3 * i;
    times[i] *= 1.5;
  }
  for (const auto* since : {static_cast<const StatRegistry::Snapshot*>(nullptr), &before, &mid}) {
    const Json j = r.to_json(since);
    CHECK(r.to_json_text(since) == j.dump(1));
    for (const auto& [prefix, suffix] : std::vector<std::pair<std::string, std::string>>{
             {"", ".hits"}, {"", ".busy_time"}, {"gpu.xcd[1]", ".hits"}, {"gpu.", "_rate"}, {"zzz", ""}}) {
      double want = 0;
      std::vector<std::pair<std::string, double>> want_items;
      for (const auto& [key, v] : j.items()) {
        if (key.rfind(prefix, 0) == 0 && key.size() >= suffix.size() &&
            key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0) {
          want += v["value"].get<double>();
          want_items.emplace_back(key, v["value"].get<double>());
        }
      }
      CHECK(r.sum_keys(prefix, suffix, since) == want);
      std::vector<std::pair<std::string, double>> items;
      r.for_each_key(prefix, suffix, [&](std::string_view key, double v) { items.emplace_back(std::string(key), v); }, since);
      CHECK(items == want_items);
    }
  }
  StatRegistry empty;
  CHECK(empty.to_json_text() == empty.to_json().dump(1));
}
