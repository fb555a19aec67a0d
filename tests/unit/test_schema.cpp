// The declaration mechanism on a small spec: one declaration drives reading,
// defaults, validation, output and the reference.
#include <catch2/catch.hpp>

#include "workloads/config/reader.h"
#include "workloads/config/reference.h"
#include "workloads/config/writer.h"
#include "workloads/specs/enums.h"

using namespace tdmsim;
using namespace tdmsim::config;

namespace {

struct Inner {
  units::Bandwidth bw{};
  std::uint32_t lanes{};
  template <class V>
  void visit(V& v) {
    v.param(bw, "bw", "bandwidth", Required{});
    v.param(lanes, "lanes", "lane count", Default{4u}, Min{1u}, Max{64u});
  }
};

struct Toy {
  std::string name;
  units::Frequency clock{};
  double ratio{};
  bool fast{};
  Scoring scoring{};
  std::vector<std::uint32_t> ids;
  Inner inner;
  std::optional<Inner> extra;
  std::string note;
  std::vector<std::string> tags;
  template <class V>
  void visit(V& v) {
    v.param(name, "name", "name", Required{});
    v.param(clock, "clock", "clock", Default{"1GHz"});
    v.param(ratio, "ratio", "ratio", Default{0.5}, Min{0.0}, Max{1.0});
    v.param(fast, "fast", "fast?", Default{false});
    v.param(scoring, "scoring", "scoring", Default{Scoring::softmax});
    v.param(ids, "ids", "ids");
    v.section(inner, "inner", "inner section");
    v.section(extra, "extra", "optional section");
    v.param(note, "note", "optional string");
    v.param(tags, "tags", "strings");
  }
};

struct Result {
  Toy toy = defaults<Toy>();
  std::vector<Diagnostic> diags;
  SetMap set_at;
};

Result read(const std::string& yaml) {
  Result r;
  Diagnostics d;
  ReadContext ctx{"toy.yaml", &d, &r.set_at};
  Reader reader(YAML::Load(yaml), "", ctx);
  r.toy.visit(reader);
  reader.finish();
  if (d.empty()) {
    RequiredChecker req("", r.set_at, {"toy.yaml", 1, 1}, d);
    r.toy.visit(req);
  }
  try {
    d.throw_if_any();
  } catch (const ConfigError& e) {
    r.diags = e.diagnostics();
  }
  return r;
}

}  // namespace

TEST_CASE("defaults come from the declaration", "[schema]") {
  const Toy t = defaults<Toy>();
  CHECK(t.clock.hz == 1'000'000'000ull);
  CHECK(t.ratio == 0.5);
  CHECK(t.inner.lanes == 4u);
  CHECK_FALSE(t.extra.has_value());
}

TEST_CASE("a valid document reads every kind of value", "[schema]") {
  const auto r = read("name: a\nclock: 2.1GHz\nratio: 0.25\nfast: true\nscoring: sigmoid\n"
                      "ids: [3, 1]\ninner: {bw: 5.3TB/s}\nextra: {bw: 1TB/s, lanes: 8}\n");
  REQUIRE(r.diags.empty());
  CHECK(r.toy.clock.hz == 2'100'000'000ull);
  CHECK(r.toy.ratio == 0.25);
  CHECK(r.toy.fast);
  CHECK(r.toy.scoring == Scoring::sigmoid);
  CHECK(r.toy.ids == std::vector<std::uint32_t>{3, 1});
  CHECK(r.toy.inner.bw.bytes_per_s == 5'300'000'000'000ull);
  REQUIRE(r.toy.extra.has_value());
  CHECK(r.toy.extra->lanes == 8u);
  CHECK(r.set_at.at("inner.bw").line == 7);
}

TEST_CASE("errors carry file, line, column, key path and expectation", "[schema]") {
  auto r = read("name: a\ninner:\n  bw: 5TB/s\n  lanse: 3\n");
  REQUIRE(r.diags.size() == 1);
  CHECK(r.diags[0].where.file == "toy.yaml");
  CHECK(r.diags[0].where.line == 4);
  CHECK(r.diags[0].where.column == 3);
  CHECK(r.diags[0].key == "inner.lanse");
  CHECK_THAT(r.diags[0].message, Catch::Contains("did you mean 'lanes'"));

  r = read("name: a\ninner: {bw: 5TB/s, lanes: 0}\n");
  REQUIRE(r.diags.size() == 1);
  CHECK(r.diags[0].key == "inner.lanes");
  CHECK_THAT(r.diags[0].message, Catch::Contains("must be at least 1, got 0"));

  r = read("name: a\nratio: .nan\ninner: {bw: 5TB/s}\n");
  REQUIRE(r.diags.size() == 1);
  CHECK(r.diags[0].key == "ratio");

  r = read("name: a\nratio: nan\ninner: {bw: 5TB/s}\n");
  REQUIRE(r.diags.size() == 1);
  CHECK_THAT(r.diags[0].message, Catch::Contains("finite"));

  r = read("name: a\nscoring: softmx\ninner: {bw: 5TB/s}\n");
  REQUIRE(r.diags.size() == 1);
  CHECK_THAT(r.diags[0].message, Catch::Contains("did you mean 'softmax'"));

  r = read("name: a\nfast: yes\ninner: {bw: 5TB/s}\n");
  REQUIRE(r.diags.size() == 1);
  CHECK_THAT(r.diags[0].message, Catch::Contains("expected true or false"));

  r = read("name: a\nids: [1, -2]\ninner: {bw: 5TB/s}\n");
  REQUIRE(r.diags.size() == 1);
  CHECK(r.diags[0].key == "ids[1]");
  CHECK_THAT(r.diags[0].message, Catch::Contains("must not be negative"));
}

TEST_CASE("unknown keys without a close match list the valid keys", "[schema]") {
  const auto r = read("name: a\ninner: {bw: 5TB/s}\nzzzzzzzz: 1\n");
  REQUIRE(r.diags.size() == 1);
  CHECK_THAT(r.diags[0].message, Catch::Contains("expected one of: name, clock"));
  // A file that has the optional section lists it once (it is looked up twice).
  const auto with_extra = read("name: a\ninner: {bw: 5TB/s}\nextra: {bw: 1TB/s}\nzzzzzzzz: 1\n");
  REQUIRE(with_extra.diags.size() == 1);
  const std::string& msg = with_extra.diags[0].message;
  const auto first = msg.find("extra");
  REQUIRE(first != std::string::npos);
  CHECK(msg.find("extra", first + 1) == std::string::npos);
}

TEST_CASE("every problem in a file is reported, not just the first", "[schema]") {
  const auto r = read("name: a\nclock: 3\nratio: 2\ninner: {bw: 5TB/s}\nfoo: 1\n");
  REQUIRE(r.diags.size() == 3);
  CHECK(r.diags[0].key == "clock");
  CHECK(r.diags[1].key == "ratio");
  CHECK(r.diags[2].key == "foo");
}

TEST_CASE("the same error at the same place is said once", "[schema]") {
  // (A sweep axis value refused at every point that takes it.)
  Diagnostics d;
  d.add({"s.yaml", 7, 29}, "axes.scenario.routing.zipf_s", "value '0.5': applies to source: zipf only");
  d.add({"s.yaml", 7, 29}, "axes.scenario.routing.zipf_s", "value '0.5': applies to source: zipf only");
  d.add({"s.yaml", 7, 34}, "axes.scenario.routing.zipf_s", "value '1.5': applies to source: zipf only");
  d.add({"t.yaml", 7, 29}, "axes.scenario.routing.zipf_s", "value '0.5': applies to source: zipf only");
  CHECK(d.size() == 4);  // every add counts (a sweep point fails by adding)
  try {
    d.throw_if_any();
    FAIL("no ConfigError");
  } catch (const ConfigError& e) {
    CHECK(e.diagnostics().size() == 3);
  }
}

TEST_CASE("duplicate keys are errors", "[schema]") {
  const auto r = read("name: a\ninner: {bw: 5TB/s}\nname: b\n");
  REQUIRE_FALSE(r.diags.empty());
  CHECK(r.diags[0].where.line == 3);
  CHECK_THAT(r.diags[0].message, Catch::Contains("duplicate key (first given at line 1)"));
}

TEST_CASE("missing required keys name the key and its meaning", "[schema]") {
  const auto r = read("name: a\ninner: {lanes: 2}\n");
  REQUIRE(r.diags.size() == 1);
  CHECK(r.diags[0].key == "inner.bw");
  CHECK(r.diags[0].where.line == 2);
  CHECK_THAT(r.diags[0].message, Catch::Contains("missing required key 'bw'"));
}

TEST_CASE("the resolved output reads back to the same spec", "[schema]") {
  const auto r = read("name: a\nclock: 2.1GHz\nratio: 0.1\nids: [7]\ninner: {bw: 5.3TB/s}\n"
                      "extra: {bw: 2TiB/s}\n");
  REQUIRE(r.diags.empty());
  const Json j = to_json(r.toy);
  CHECK(j["clock"] == "2.1GHz");
  CHECK(j["inner"]["bw"] == "5.3TB/s");
  const auto again = read(json_to_yaml(j));
  REQUIRE(again.diags.empty());
  CHECK(to_json(again.toy) == j);
}

TEST_CASE("an empty string is refused, with what to write instead, and ~ unsets an optional one", "[schema]") {
  const auto optional = read("name: a\ninner: {bw: 1TB/s}\nnote: \"\"\n");
  REQUIRE(optional.diags.size() == 1);
  CHECK(optional.diags[0].key == "note");
  CHECK(optional.diags[0].where.line == 3);
  CHECK(optional.diags[0].message == "expected a non-empty string; leave the key out (or ~) for none");
  // A required key or a list's entry cannot be left out: no such advice.
  const auto required = read("name: ''\ninner: {bw: 1TB/s}\ntags: [x, '']\n");
  REQUIRE(required.diags.size() == 2);
  CHECK(required.diags[0].key == "name");
  CHECK(required.diags[0].message == "expected a non-empty string");
  CHECK(required.diags[1].key == "tags[1]");
  CHECK(required.diags[1].message == "expected a non-empty string");
  const auto unset = read("name: a\ninner: {bw: 1TB/s}\nnote: ~\n");
  CHECK(unset.diags.empty());
  CHECK(unset.toy.note.empty());
  CHECK_FALSE(read("name: ~\ninner: {bw: 1TB/s}\n").diags.empty());
  // The resolved output writes an unset string as null in JSON and ~ in YAML
  // (the two formats of `config show`), and both read back.
  const Json j = to_json(unset.toy);
  CHECK(j["note"].is_null());
  const std::string yaml = json_to_yaml(j);
  CHECK_THAT(yaml, Catch::Contains("note: ~"));
  const auto again = read(yaml);
  REQUIRE(again.diags.empty());
  CHECK(to_json(again.toy) == j);
  const auto from_json = read(j.dump());
  REQUIRE(from_json.diags.empty());
  CHECK(to_json(from_json.toy) == j);
}

TEST_CASE("the reference lists every key with type, default and range", "[schema]") {
  const auto rows = reference_rows<Toy>();
  std::vector<std::string> keys;
  for (const auto& r : rows) keys.push_back(r.key);
  CHECK(keys == std::vector<std::string>{"name", "clock", "ratio", "fast", "scoring", "ids",
                                         "inner", "inner.bw", "inner.lanes", "extra", "extra.bw",
                                         "extra.lanes", "note", "tags"});
  CHECK(rows[1].default_text == "`1GHz`");
  CHECK(rows[0].default_text == "required");
  CHECK(rows[8].range == "1 .. 64");
  CHECK_THAT(rows[4].type, Catch::Contains("softmax, sigmoid"));
}
