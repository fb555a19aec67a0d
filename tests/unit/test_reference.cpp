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
  for (auto& k : all_keys<KernelProfileSpec>()) keys.push_back(k);
  for (auto& k : all_keys<ModelSpec>()) keys.push_back(k);
  for (auto& k : all_keys<ScenarioSpec>()) keys.push_back(k);
  for (auto& k : all_keys<SweepSpec>()) keys.push_back(k);
  CHECK(keys.size() > 80);
  const std::string profile = "kernels.";
  for (const auto& k : keys) {
    INFO(k);
    // A machine's kernels.KEY is documented once, as the kernel profile's KEY.
    const bool in_profile = k.compare(0, profile.size(), profile) == 0;
    const std::string shown = in_profile ? k.substr(profile.size()) : k;
    CHECK(doc.find("| `" + shown + "` |") != std::string::npos);
  }
}

TEST_CASE("the YAML reference lists the kernel profile's keys once", "[reference]") {
  const std::string doc = cli::reference_document();
  // Not again under the machine's kernels section, which points to them.
  CHECK(doc.find("| `kernels.") == std::string::npos);
  CHECK(doc.find("| **`kernels.") == std::string::npos);
  CHECK(doc.find("| **`kernels`** | section |") != std::string::npos);
  CHECK(doc.find("\"Kernel profile\" below") != std::string::npos);
  for (const auto& k : all_keys<KernelProfileSpec>()) {
    INFO(k);
    const std::string row = "| `" + k + "` |";
    const auto first = doc.find(row);
    REQUIRE(first != std::string::npos);
    // name and description are also the machine's (and model's) own keys.
    if (k != "name" && k != "description") CHECK(doc.find(row, first + 1) == std::string::npos);
  }
}
