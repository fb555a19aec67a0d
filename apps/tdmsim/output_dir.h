// Pieces shared by the commands that write an output folder: the staged
// folder (written whole or not at all) and the error for bad input that a
// command finds itself (exit code 2).
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

#include <unistd.h>

namespace tdmsim::cli {

namespace fs = std::filesystem;

// Bad input found by the command itself (not by the configuration loader).
struct BadInput : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The output folder, built as a hidden temporary sibling and renamed into
// place by commit(); removed on destruction if never committed.
class StagedDir {
 public:
  StagedDir(fs::path target, bool force) : target_(std::move(target)) {
    if (target_.filename().empty()) target_ = target_.parent_path();
    if (fs::exists(target_) && !force) {
      throw BadInput("output folder " + target_.string() +
                     " already exists (use --force to replace it)");
    }
    const fs::path parent = target_.has_parent_path() ? target_.parent_path() : fs::path(".");
    fs::create_directories(parent);
    staging_ = parent / ("." + target_.filename().string() + ".tmp-" + std::to_string(::getpid()));
    fs::remove_all(staging_);
    fs::create_directory(staging_);
  }
  ~StagedDir() {
    std::error_code ec;
    if (!committed_) fs::remove_all(staging_, ec);
  }
  StagedDir(const StagedDir&) = delete;
  StagedDir& operator=(const StagedDir&) = delete;

  fs::path file(const std::string& name) const { return staging_ / name; }
  const fs::path& target() const { return target_; }

  // An existing target (--force) is moved aside first and removed only after
  // the new folder is in place.
  void commit() {
    fs::path old;
    if (fs::exists(target_)) {
      old = staging_;
      old += ".old";
      fs::rename(target_, old);
    }
    fs::rename(staging_, target_);
    committed_ = true;
    if (!old.empty()) fs::remove_all(old);
  }

 private:
  fs::path target_;
  fs::path staging_;
  bool committed_ = false;
};

}  // namespace tdmsim::cli
