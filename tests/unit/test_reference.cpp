// The generated reference covers every declared key of every spec kind.
#include <catch2/catch.hpp>

#include "apps/tdmsim/config_commands.h"
#include "workloads/config/loader.h"

using namespace tdmsim;
using namespace tdmsim::config;

TEST_CASE("the YAML reference documents every declared key", "[reference]") {
  const std::string doc = cli::reference_document();
  std::vector<std::string> keys;
  for (auto& k : all_keys<MachineSpec>()) keys.push_back(k);
  for (auto& k : all_keys<ModelSpec>()) keys.push_back(k);
  for (auto& k : all_keys<ScenarioSpec>()) keys.push_back(k);
  for (auto& k : all_keys<SweepSpec>()) keys.push_back(k);
  CHECK(keys.size() > 80);
  for (const auto& k : keys) {
    INFO(k);
    CHECK(doc.find("`" + k + "`") != std::string::npos);
  }
}
