// Every shipped scenario builds a plan that satisfies the layout invariants,
// and the same file builds the same plan twice.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>

#include "plan_checks.h"
#include "plan_test_util.h"
#include "workloads/config/loader.h"

using namespace tdmsim;
using namespace tdmsim::plan;
using namespace tdmsim::plan::test;

TEST_CASE("every shipped scenario plans", "[shipped]") {
  const config::Loader loader({kWorkloads});
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(kWorkloads / "scenarios")) {
    // (A tenants file names other scenarios: those are planned here.)
    if (e.path().extension() == ".yaml" && loader.kind_of(e.path()) == config::SpecKind::scenario) {
      files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 5);
  for (const auto& f : files) {
    INFO(f);
    const MoePlan p = build_plan(loader.resolve_scenario(f));
    check_plan(p);
    CHECK(!p.kernel.reason.empty());
    CHECK(!p.stage1.empty());
  }
}

TEST_CASE("shipped DeepSeek-V3 decode: grouped router routing and a fused shared expert",
          "[shipped]") {
  const config::Loader loader({kWorkloads});
  const MoePlan p =
      build_plan(loader.resolve_scenario(kWorkloads / "scenarios/deepseek-v3-decode-mi355x.yaml"));
  CHECK(p.shape.experts_fused() == 257);
  CHECK(p.shape.slots() == 9);
  CHECK(p.layout.expert_rows[256] == 64);  // the shared expert: every token
  for (std::uint32_t t = 0; t < 64; ++t) {
    double sum = 0;
    for (std::uint32_t j = 0; j < 8; ++j) {
      CHECK(p.routing.ids[t * 8 + j] / 32 < 8);  // 8 groups of 32
      sum += p.routing.weights[t * 8 + j];
    }
    CHECK(sum == Approx(2.5).epsilon(1e-5));  // renormalised, routed_scaling 2.5
  }
}
