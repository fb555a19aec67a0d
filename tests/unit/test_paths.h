// Test helper: the source tree's folders the tests read (TDMSIM_SOURCE_DIR is
// defined by tests/CMakeLists.txt for every test executable).
#pragma once

#include <filesystem>

namespace tdmsim::test {

// The shipped machines, models and scenarios.
inline const std::filesystem::path kWorkloads = std::filesystem::path(TDMSIM_SOURCE_DIR) / "workloads";

}  // namespace tdmsim::test
