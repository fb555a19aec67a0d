// The malformed-input corpus: each file under tests/data/bad/<kind>s/ states
// in its header the exact error it must produce, e.g.
//   # expect-line: 12
//   # expect-key: memory.hbm.stacks
//   # expect-message: must be at least 1
//   # expect-file: other.yaml        (optional: the error is in another file)
//   # expect-errors: 1               (optional: how many errors in all)
// and the first reported diagnostic must match every stated field.
#include <catch2/catch.hpp>

#include <charconv>
#include <filesystem>
#include <fstream>

#include "workloads/config/loader.h"

using namespace tdmsim;
using namespace tdmsim::config;
namespace fs = std::filesystem;

namespace {

struct Expectation {
  std::string file;
  int line = -1;
  int column = -1;
  std::string key;
  bool key_given = false;
  std::string message;
  int errors = -1;  // -1: not stated
};

int to_int(const std::string& text, const fs::path& f) {
  int v = -1;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || p != text.data() + text.size()) {
    FAIL(f.string() << ": corpus header has a bad number '" << text << "'");
  }
  return v;
}

Expectation read_expectation(const fs::path& f) {
  Expectation e;
  e.file = f.filename().string();
  std::ifstream in(f);
  std::string line;
  const auto value = [&](const std::string& tag, std::string& out) {
    const std::string p = "# " + tag + ": ";
    if (line.rfind(p, 0) != 0) return false;
    out = line.substr(p.size());
    return true;
  };
  while (std::getline(in, line)) {
    std::string v;
    if (value("expect-line", v)) e.line = to_int(v, f);
    if (value("expect-column", v)) e.column = to_int(v, f);
    if (value("expect-key", v)) {
      e.key = v == "(none)" ? "" : v;
      e.key_given = true;
    }
    if (value("expect-message", v)) e.message = v;
    if (value("expect-file", v)) e.file = v;
    if (value("expect-errors", v)) e.errors = to_int(v, f);
  }
  return e;
}

void load_any(const Loader& loader, const fs::path& f) {
  switch (loader.kind_of(f)) {
    case SpecKind::machine: loader.machine(f); break;
    case SpecKind::model: loader.model(f); break;
    case SpecKind::scenario: loader.resolve_scenario(f); break;
    case SpecKind::sweep: loader.resolve_sweep(f); break;
    case SpecKind::kernel_profile: loader.kernel_profile(f); break;
    case SpecKind::tenants: loader.resolve_tenants(f); break;
  }
}

}  // namespace

TEST_CASE("every malformed file fails with exactly its stated error", "[corpus]") {
  const fs::path dir = fs::path(TDMSIM_TEST_DATA_DIR) / "bad";
  const Loader loader({fs::path(TDMSIM_SOURCE_DIR) / "workloads"});
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().extension() == ".yaml" && e.path().filename().string().front() != '_') {
      files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  CHECK(files.size() >= 25);
  for (const auto& f : files) {
    const Expectation want = read_expectation(f);
    INFO(f.string());
    REQUIRE(want.line >= 0);  // every corpus file states its expected line
    REQUIRE_FALSE(want.message.empty());
    std::vector<Diagnostic> got;
    try {
      load_any(loader, f);
    } catch (const ConfigError& e) {
      got = e.diagnostics();
    }
    REQUIRE_FALSE(got.empty());
    const Diagnostic& d = got.front();
    INFO("got: " << d.to_string());
    CHECK(fs::path(d.where.file).filename().string() == want.file);
    CHECK(d.where.line == want.line);
    if (want.column >= 0) CHECK(d.where.column == want.column);
    if (want.key_given) CHECK(d.key == want.key);
    CHECK_THAT(d.message, Catch::Contains(want.message));
    if (want.errors >= 0) CHECK(got.size() == static_cast<std::size_t>(want.errors));
  }
}
