#include "tests/emulator/scenario_files.h"

#include <chrono>
#include <fstream>
#include <system_error>

#include <unistd.h>

namespace tdmsim::emu::test {

TempDir::TempDir(const std::string& tag) {
  // Process id and a clock tick keep concurrent test processes apart.
  const auto tick = std::chrono::steady_clock::now().time_since_epoch().count();
  path_ = std::filesystem::temp_directory_path() /
          ("tdmsim-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(tick));
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::filesystem::path write_tiny_scenario(const std::filesystem::path& dir, unsigned tokens,
                                          const std::string& extra) {
  std::ofstream(dir / "tiny.yaml") << R"(kind: model
name: tiny-emu
source: written by the emulator tests
hidden_size: 64
intermediate_size: 96
experts: 8
top_k: 2
shared_experts: 1
shared_intermediate_size: 96
gating:
  scoring: softmax
  renormalize: true
activation: silu
layers:
  moe: 1
  total: 1
)";
  const auto scenario = dir / "scenario.yaml";
  std::ofstream(scenario) << "kind: scenario\nname: tiny-emu\nmachine: mi300x\nmodel: tiny.yaml\n"
                          << "tokens: " << tokens << "\ndtype: bf16\nseed: 5\n"
                          << (extra.find("routing:") == std::string::npos
                                  ? "routing:\n  source: router\n"
                                  : "")
                          << extra;
  return scenario;
}

}  // namespace tdmsim::emu::test
