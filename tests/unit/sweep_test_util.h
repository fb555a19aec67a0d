// Test helper: a sweep file written from text into a scratch folder, removed
// when it goes out of scope.
#pragma once

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "workloads/config/diagnostics.h"

namespace tdmsim::test {

struct SweepFile {
  std::filesystem::path path;
  // `name` is the sweep's name and the file's stem; `text` follows the
  // `kind: sweep` and `name:` lines.
  SweepFile(const std::string& name, const std::string& text) {
    const auto dir = std::filesystem::temp_directory_path() / ("tdmsim_sweep_tests_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    path = dir / (name + ".yaml");
    std::ofstream(path) << "kind: sweep\nname: " << name << "\n" << text;
  }
  // The file, then its folder once no other SweepFile of this process uses it
  // (remove() leaves a folder that is not empty).
  ~SweepFile() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
    std::filesystem::remove(path.parent_path(), ec);
  }
  SweepFile(const SweepFile&) = delete;
  SweepFile& operator=(const SweepFile&) = delete;
};

// The first diagnostic of the ConfigError that `resolve` throws; a failed test
// (and an empty diagnostic) when it throws none.
template <class F>
config::Diagnostic first_config_error(F&& resolve) {
  try {
    resolve();
  } catch (const config::ConfigError& e) {
    return e.diagnostics().front();
  }
  FAIL("accepted: expected a ConfigError");
  return {};
}

}  // namespace tdmsim::test
