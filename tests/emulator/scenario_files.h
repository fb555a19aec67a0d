// Writes a small model + scenario pair into a fresh temporary folder, so API
// and CLI tests run real configuration files of a size that takes
// milliseconds (the shipped models take seconds per layer).
#pragma once

#include <filesystem>
#include <string>

namespace tdmsim::emu::test {

// A folder under the system temp directory, removed with its contents on
// destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& tag);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Writes `tiny.yaml` (H 64, I 96, 8 experts top-2, one shared expert of 96)
// and `scenario.yaml` (mi300x, the given tokens, bf16, router routing, plus
// `extra` YAML lines) into dir; returns the scenario's path.
std::filesystem::path write_tiny_scenario(const std::filesystem::path& dir, unsigned tokens,
                                          const std::string& extra = "");

}  // namespace tdmsim::emu::test
