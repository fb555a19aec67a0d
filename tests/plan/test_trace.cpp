// Routing traces: the shipped examples, and every kind of bad trace reported
// at the trace's file and line (a missing file at the scenario's key).
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "descriptors/plan/routing.h"
#include "plan_test_util.h"
#include "workloads/config/loader.h"

using namespace tdmsim;
using namespace tdmsim::plan;
using namespace tdmsim::plan::test;

namespace {

config::Diagnostic first_error(const std::string& text, std::uint32_t tokens,
                               const ModelSpec& model) {
  std::istringstream in(text);
  try {
    parse_trace(in, "bad.trace", model, tokens, 1);
  } catch (const config::ConfigError& e) {
    REQUIRE(!e.diagnostics().empty());
    return e.diagnostics().front();
  }
  FAIL("no error for:\n" << text);
  return {};
}

const char* kHeader = "# tdmsim-routing-trace v1 experts=8 top_k=2\n";

}  // namespace

TEST_CASE("a good trace: ids, optional weights, comments and blank lines", "[trace]") {
  const ModelSpec m = make_model(8, 2);
  std::istringstream ids_only(std::string(kHeader) + "# comment\n0 7\n\n3 1  # trailing\n");
  const Routing a = parse_trace(ids_only, "a.trace", m, 2, 1);
  CHECK(a.ids == std::vector<std::uint32_t>{0, 7, 3, 1});
  CHECK(a.weights[0] + a.weights[1] == Approx(1.0).epsilon(1e-6));  // model gating
  std::istringstream weighted(std::string(kHeader) + "0:0.75 7:0.25\r\n3:1 1:0\n");
  const Routing b = parse_trace(weighted, "b.trace", m, 2, 1);
  CHECK(b.ids == std::vector<std::uint32_t>{0, 7, 3, 1});
  CHECK(b.weights == std::vector<float>{0.75f, 0.25f, 1.0f, 0.0f});  // used as given
}

TEST_CASE("bad traces name the trace file, line and column", "[trace]") {
  const ModelSpec m = make_model(8, 2);
  struct Case {
    const char* what;
    std::string text;
    std::uint32_t tokens;
    int line;
    const char* message;
  };
  const std::string h = kHeader;
  const std::vector<Case> cases = {
      {"not a trace", "0 1\n", 1, 1, "not a routing trace"},
      {"empty", "", 1, 1, "empty routing trace"},
      {"no version", "# tdmsim-routing-trace experts=8 top_k=2\n0 1\n", 1, 1, "version"},
      {"experts mismatch", "# tdmsim-routing-trace v1 experts=9 top_k=2\n", 1, 1, "experts=9"},
      {"top_k mismatch", "# tdmsim-routing-trace v1 experts=8 top_k=3\n", 1, 1, "top_k=3"},
      {"unknown header key", "# tdmsim-routing-trace v1 experts=8 top_k=2 foo=1\n", 1, 1,
       "unknown header key"},
      {"too few tokens", h + "0 1\n1 2\n", 3, 3, "2 token lines"},
      {"too many tokens", h + "0 1\n1 2\n2 3\n", 2, 4, "more token lines"},
      {"id out of range", h + "0 1\n8 2\n", 2, 3, "expert 8 does not exist"},
      {"duplicate id", h + "5 5\n", 1, 2, "appears twice"},
      {"wrong count", h + "0 1\n2\n", 2, 3, "has 1 experts, top_k is 2"},
      {"bad id", h + "0 x1\n", 1, 2, "bad expert id 'x1'"},
      {"negative id", h + "-1 2\n", 1, 2, "bad expert id"},
      {"bad weight", h + "0:0.5 1:abc\n", 1, 2, "bad weight 'abc'"},
      {"negative weight", h + "0:-0.5 1:1\n", 1, 2, "bad weight"},
      {"weight beyond fp32", h + "0:1e39 1:0.5\n", 1, 2, "bad weight '1e39'"},
      {"mixed weights", h + "0:0.5 1\n", 1, 2, "mixed"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const config::Diagnostic d = first_error(c.text, c.tokens, m);
    CHECK(d.where.file == "bad.trace");
    CHECK(d.where.line == c.line);
    CHECK_THAT(d.message, Catch::Contains(c.message));
  }
  // Columns point at the entry (and at the weight after its colon).
  CHECK(first_error(h + "0 x1\n", 1, m).where.column == 3);
  CHECK(first_error(h + "0:0.5 1:abc\n", 1, m).where.column == 9);
}

TEST_CASE("the shipped trace scenario plans, with an expert left empty", "[trace][shipped]") {
  const config::Loader loader({kWorkloads});
  const auto r = loader.resolve_scenario(kWorkloads / "scenarios/mixtral-8x7b-trace-mi300x.yaml");
  REQUIRE(r.scenario.spec.routing.source == RoutingSource::trace);
  CHECK(trace_path(r) == kWorkloads / "scenarios/../traces/mixtral-8x7b-16tok.trace");
  const MoePlan plan = build_plan(r);
  REQUIRE(plan.routing.ids.size() == 32);
  CHECK(plan.routing.ids[0] == 1);
  CHECK(plan.routing.ids[1] == 6);
  CHECK(plan.routing.ids[30] == 6);
  CHECK(plan.routing.ids[31] == 1);
  CHECK(plan.layout.expert_rows[5] == 0);
  CHECK(plan.layout.expert_first_block[5] == plan.layout.expert_first_block[6]);
  CHECK(plan.layout.expert_rows[1] == 10);
  CHECK(plan.layout.expert_rows[6] == 10);
}

TEST_CASE("the shipped weighted trace parses with its weights", "[trace][shipped]") {
  const config::Loader loader({kWorkloads});
  const ModelSpec qwen = loader.model(kWorkloads / "models/qwen3-30b-a3b.yaml").spec;
  const auto path = kWorkloads / "traces/qwen3-30b-a3b-8tok-weighted.trace";
  std::ifstream in(path);
  const Routing r = parse_trace(in, path.string(), qwen, 8, 1);
  CHECK(r.ids[0] == 42);
  CHECK(r.weights[0] == 0.4874f);
  for (std::size_t t = 0; t < 8; ++t) {
    double sum = 0;
    for (std::size_t j = 0; j < 8; ++j) sum += r.weights[t * 8 + j];
    CHECK(sum == Approx(1.0).margin(1e-3));
  }
}

TEST_CASE("a missing trace file is reported at the scenario's routing.trace", "[trace]") {
  const config::Loader loader({kWorkloads});
  auto r = loader.resolve_scenario(kWorkloads / "scenarios/mixtral-8x7b-trace-mi300x.yaml");
  r.scenario.spec.routing.trace = "../traces/no-such-file.trace";
  try {
    (void)build_plan(r);
    FAIL("no error");
  } catch (const config::ConfigError& e) {
    const config::Diagnostic& d = e.diagnostics().front();
    CHECK_THAT(d.where.file, Catch::EndsWith("mixtral-8x7b-trace-mi300x.yaml"));
    CHECK(d.where.line == 14);  // the `trace:` line of the scenario
    CHECK(d.key == "routing.trace");
    CHECK_THAT(d.message, Catch::Contains("no-such-file.trace"));
  }
  // A trace with the wrong token count for the scenario names the trace file.
  r.scenario.spec.routing.trace = "../traces/mixtral-8x7b-16tok.trace";
  r.scenario.spec.tokens = 17;
  try {
    (void)build_plan(r);
    FAIL("no error");
  } catch (const config::ConfigError& e) {
    CHECK_THAT(e.diagnostics().front().where.file, Catch::EndsWith("mixtral-8x7b-16tok.trace"));
    CHECK_THAT(e.what(), Catch::Contains("16 token lines"));
  }
}

TEST_CASE("a trace that is not a regular file is refused at routing.trace", "[trace]") {
  const config::Loader loader({kWorkloads});
  auto r = loader.resolve_scenario(kWorkloads / "scenarios/mixtral-8x7b-trace-mi300x.yaml");
  // As if the file had been swapped for a device after the scenario loaded:
  // reading /dev/zero unbounded grew past 4 GB.
  r.scenario.spec.routing.trace = "/dev/zero";
  try {
    (void)build_plan(r);
    FAIL("/dev/zero was read as a trace");
  } catch (const config::ConfigError& e) {
    const auto& d = e.diagnostics().front();
    CHECK(d.key == "routing.trace");
    CHECK(d.where.line == 14);
    CHECK(d.message == "routing trace '/dev/zero' is not a regular file (a character device)");
  }
}
