// `base:` overlay semantics: a variant is a few lines over another file.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <unistd.h>

#include "workloads/config/loader.h"
#include "workloads/config/writer.h"

using namespace tdmsim;
using namespace tdmsim::config;
namespace fs = std::filesystem;

namespace {

// A scratch workloads tree under the build's temp folder, removed afterwards.
struct Scratch {
  fs::path root;
  Scratch() {
    root = fs::temp_directory_path() / ("tdmsim_overlay_" + std::to_string(::getpid()) + "_" +
                                        std::to_string(counter()++));
    fs::create_directories(root / "machines");
  }
  ~Scratch() { fs::remove_all(root); }
  static int& counter() {
    static int c = 0;
    return c;
  }
  fs::path write(const std::string& rel, const std::string& text) const {
    const fs::path p = root / rel;
    std::ofstream(p) << text;
    return p;
  }
};

const fs::path kMi300x = fs::path(TDMSIM_SOURCE_DIR) / "workloads/machines/mi300x.yaml";

Loader loader() { return Loader({fs::path(TDMSIM_SOURCE_DIR) / "workloads"}); }

std::vector<Diagnostic> errors_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.diagnostics();
  }
  return {};
}

}  // namespace

TEST_CASE("an overlay changes only the keys it names", "[overlay]") {
  Scratch s;
  const auto variant = s.write("machines/fast.yaml", "base: " + kMi300x.string() +
                                                         "\nname: fast\nmemory:\n  hbm:\n"
                                                         "    bandwidth: 8TB/s\n");
  const auto base = loader().machine(kMi300x);
  const auto v = loader().machine(variant);
  CHECK(v.spec.name == "fast");
  CHECK(v.spec.memory.hbm.bandwidth.bytes_per_s == 8'000'000'000'000ull);
  // Everything else is the base's.
  Json a = to_json(base.spec), b = to_json(v.spec);
  a["name"] = b["name"];
  a["memory"]["hbm"]["bandwidth"] = b["memory"]["hbm"]["bandwidth"];
  CHECK(a == b);
  // Origins: overridden keys point at the variant, the rest at the base.
  CHECK(v.set_at.at("memory.hbm.bandwidth").file == variant.string());
  CHECK(v.set_at.at("memory.hbm.stacks").file == kMi300x.lexically_normal().string());
  CHECK(v.chain.size() == 2);
}

TEST_CASE("overlays chain, and ~ removes an optional section", "[overlay]") {
  Scratch s;
  s.write("machines/a.yaml", "base: " + kMi300x.string() +
                                 "\ntdm:\n  descriptor_fetch_latency: 500ns\n  slots: 64\n"
                                 "  slot_length: 2us\n  dispatch_latency: 100ns\n");
  s.write("machines/b.yaml", "base: a.yaml\nname: b\nmemory: {mall: ~}\n");
  const auto b = loader().machine(s.root / "machines/b.yaml");
  CHECK(b.chain.size() == 3);
  CHECK(b.spec.name == "b");
  CHECK_FALSE(b.spec.memory.mall.has_value());
  REQUIRE(b.spec.tdm.has_value());
  CHECK(b.spec.tdm->slots == 64u);
  CHECK(b.spec.tdm->queue_depth == 4u);  // declared default
  CHECK_FALSE(b.set_at.contains("memory.mall.size"));
}

TEST_CASE("a new optional section must give its required keys", "[overlay]") {
  Scratch s;
  const auto f = s.write("machines/a.yaml", "base: " + kMi300x.string() + "\ntdm:\n  slots: 8\n");
  const auto errs = errors_of([&] { loader().machine(f); });
  REQUIRE(errs.size() == 3);
  CHECK(errs[0].key == "tdm.descriptor_fetch_latency");
  CHECK(errs[0].where.file == f.string());
  CHECK(errs[0].where.line == 3);
}

TEST_CASE("base cycles are detected and named", "[overlay]") {
  Scratch s;
  s.write("machines/a.yaml", "base: b.yaml\nname: a\n");
  s.write("machines/b.yaml", "name: b\nbase: a.yaml\n");
  const auto errs = errors_of([&] { loader().machine(s.root / "machines/a.yaml"); });
  REQUIRE(errs.size() == 1);
  CHECK(errs[0].key == "base");
  CHECK(errs[0].where.line == 2);  // b.yaml's base line closes the cycle
  CHECK_THAT(errs[0].message, Catch::Contains("base cycle") && Catch::Contains("a.yaml -> ") &&
                                  Catch::Contains("b.yaml -> "));
}

TEST_CASE("a file that is its own base is a cycle", "[overlay]") {
  Scratch s;
  const auto f = s.write("machines/self.yaml", "base: self.yaml\n");
  const auto errs = errors_of([&] { loader().machine(f); });
  REQUIRE(errs.size() == 1);
  CHECK_THAT(errs[0].message, Catch::Contains("base cycle"));
}

TEST_CASE("a missing base file is an error at the base key", "[overlay]") {
  Scratch s;
  const auto f = s.write("machines/a.yaml", "name: a\nbase: nowhere.yaml\n");
  const auto errs = errors_of([&] { loader().machine(f); });
  REQUIRE(errs.size() == 1);
  CHECK(errs[0].where.line == 2);
  CHECK_THAT(errs[0].message, Catch::Contains("does not exist"));
}

TEST_CASE("errors inside a base file name the base file", "[overlay]") {
  Scratch s;
  s.write("machines/broken.yaml", "base: " + kMi300x.string() + "\ncompute: {dies: 0}\n");
  const auto f = s.write("machines/top.yaml", "base: broken.yaml\nname: top\n");
  const auto errs = errors_of([&] { loader().machine(f); });
  REQUIRE(errs.size() == 1);
  CHECK_THAT(errs[0].where.file, Catch::EndsWith("broken.yaml"));
  CHECK(errs[0].key == "compute.dies");
}

TEST_CASE("a file declaring another kind is refused", "[overlay]") {
  Scratch s;
  const auto f = s.write("machines/m.yaml", "kind: model\nname: x\n");
  const auto errs = errors_of([&] { loader().machine(f); });
  REQUIRE(errs.size() == 1);
  CHECK(errs[0].key == "kind");
}

TEST_CASE("a base file's machine: and model: paths are relative to the base file, not the derived one",
          "[overlay]") {
  Scratch s;
  fs::create_directories(s.root / "bd");
  fs::create_directories(s.root / "sub");
  s.write("bd/m.yaml", "base: " + (fs::path(TDMSIM_SOURCE_DIR) / "tests/data/kernel_config/tiny-model.yaml").string() +
                           "\nname: tiny\n");
  s.write("bd/mach.yaml", "kind: machine\nbase: " + kMi300x.string() + "\nname: beside-base\n");
  s.write("bd/base.yaml",
          "kind: scenario\nname: base-sc\nmachine: mach.yaml\nmodel: m.yaml\ntokens: 20\ndtype: bf16\n");
  const auto derived = s.write("sub/derived.yaml", "kind: scenario\nname: derived\nbase: ../bd/base.yaml\n"
                                                   "tokens: 64\n");
  const auto r = loader().resolve_scenario(derived);
  CHECK(r.scenario.spec.tokens == 64);
  CHECK(r.machine.spec.name == "beside-base");
  CHECK(r.model.spec.name == "tiny");
  // The same names from the derived file are relative to it: sub/ has neither.
  const auto own = s.write("sub/own.yaml", "kind: scenario\nname: own\nbase: ../bd/base.yaml\nmodel: m.yaml\n");
  const auto errs = errors_of([&] { loader().resolve_scenario(own); });
  REQUIRE(errs.size() == 1);
  CHECK(errs[0].key == "model");
  CHECK(errs[0].where.file == own.lexically_normal().string());
  CHECK(errs[0].where.line == 4);
}

TEST_CASE("an overlay that switches the routing source keeps the base's keys of the old one, restating it does not",
          "[overlay]") {
  Scratch s;
  const std::string head = "kind: scenario\nmachine: mi300x\nmodel: mixtral-8x7b\ntokens: 8\n";
  // The base's Zipf exponent applied in the base; the overlay switched it off.
  s.write("zipf.yaml", head + "name: z\nrouting:\n  source: zipf\n  zipf_s: 1.5\n");
  const auto switched = s.write("switched.yaml", "kind: scenario\nbase: zipf.yaml\nrouting: {source: uniform}\n");
  CHECK(errors_of([&] { loader().resolve_scenario(switched); }).empty());
  // A base whose exponent changed nothing in the base itself (its source is
  // uniform): an overlay restating that source switches nothing off.
  s.write("inert.yaml", head + "name: i\nrouting:\n  source: uniform\n  zipf_s: 1.5\n");
  const auto restated = s.write("restated.yaml", "kind: scenario\nbase: inert.yaml\nrouting: {source: uniform}\n");
  const auto errs = errors_of([&] { loader().resolve_scenario(restated); });
  REQUIRE(errs.size() == 1);
  CHECK(errs[0].key == "routing.zipf_s");
  CHECK_THAT(errs[0].where.file, Catch::EndsWith("inert.yaml"));
  CHECK(errs[0].where.line == 8);
  CHECK_THAT(errs[0].message, Catch::Contains("applies to source: zipf only"));
}

TEST_CASE("an overlay that removes the L1 keeps the base's L1 keys, one that shapes no L1 is refused", "[overlay]") {
  Scratch s;
  const auto off = s.write("machines/no-l1.yaml", "base: " + kMi300x.string() + "\nname: no-l1\ncompute: {l1_per_cu: 0B}\n");
  CHECK(errors_of([&] { loader().machine(off); }).empty());
  const auto shaped = s.write("machines/shaped.yaml", "base: no-l1.yaml\nname: shaped\ncompute: {l1_line: 64B}\n");
  const auto errs = errors_of([&] { loader().machine(shaped); });
  REQUIRE(errs.size() == 1);
  CHECK(errs[0].key == "compute.l1_line");
  CHECK_THAT(errs[0].where.file, Catch::EndsWith("shaped.yaml"));
}
