// The stats' crossing from a path's process in columns (apps/tdmsim/stats_columns.h)
// gives the object that crossing as it is (the reference) gives.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "apps/tdmsim/stats_columns.h"

using tdmsim::config::Json;

namespace {

// An object as StatRegistry::to_json writes one: integral and real values,
// (unit, description) pairs repeated over blocks, keys in registration order
// (not sorted).
Json sample_stats() {
  Json s = Json::object();
  auto& o = s.get_ref<Json::object_t&>();
  for (std::uint32_t cu = 0; cu < 40; ++cu) {
    const std::string me = "gpu.xcd[" + std::to_string(cu % 8) + "].cu[" + std::to_string(cu) + "]";
    Json a = Json::object();
    a.get_ref<Json::object_t&>().emplace_back("value", std::uint64_t{cu} * 1234567u);
    a.get_ref<Json::object_t&>().emplace_back("unit", "count");
    a.get_ref<Json::object_t&>().emplace_back("desc", "workgroups executed");
    o.emplace_back(me + ".workgroups", std::move(a));
    Json b = Json::object();
    b.get_ref<Json::object_t&>().emplace_back("value", 0.1 * cu + 1e-17);
    b.get_ref<Json::object_t&>().emplace_back("unit", "ps");
    b.get_ref<Json::object_t&>().emplace_back("desc", cu % 3 == 0 ? "busy time" : "busy time, \"quoted\"\n");
    o.emplace_back(me + ".busy_time", std::move(b));
  }
  Json z = Json::object();
  z.get_ref<Json::object_t&>().emplace_back("value", std::uint64_t{0});
  z.get_ref<Json::object_t&>().emplace_back("unit", "count");
  z.get_ref<Json::object_t&>().emplace_back("desc", "workgroups executed");
  o.emplace_back("a.first.key.after.the.rest", std::move(z));
  return s;
}

}  // namespace

TEST_CASE("stats in columns come back as the object sent whole, through CBOR as between processes") {
  const Json stats = sample_stats();
  // The reference: the object itself through CBOR.
  const Json whole = Json::from_cbor(Json::to_cbor(stats));
  const Json back = tdmsim::cli::stats_from_columns(Json::from_cbor(Json::to_cbor(tdmsim::cli::stats_to_columns(stats))));
  CHECK(back == whole);
  CHECK(back.dump(1) == whole.dump(1));  // key order and number kinds too
  CHECK(back.dump(1) == stats.dump(1));
  // The (unit, description) pairs cross once each.
  CHECK(tdmsim::cli::stats_to_columns(stats).at("metas").size() == 3);  // count, ps, ps with the other desc
}

TEST_CASE("stats columns: an empty object, and a stat of another shape is refused") {
  CHECK(tdmsim::cli::stats_from_columns(tdmsim::cli::stats_to_columns(Json::object())) == Json::object());
  Json odd = Json::object();
  odd["x"] = {{"value", 1}};
  CHECK_THROWS_AS(tdmsim::cli::stats_to_columns(odd), std::logic_error);
}
