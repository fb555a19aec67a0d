// Pieces shared by the commands that write output: the staged folder (written
// whole or not at all), the checks on a single output file, the error for bad
// input that a command finds itself (exit code 2), and the final check that
// standard output was written.
#pragma once

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <streambuf>
#include <string>
#include <string_view>
#include <vector>

#include "workloads/config/diagnostics.h"
#include "workloads/config/units.h"

namespace tdmsim::cli {

namespace fs = std::filesystem;

// Bad input found by the command itself (not by the configuration loader),
// including an output path that cannot be used: exit code 2. Its message
// quotes the user's text, kept printable (control bytes as \xNN: a NUL would
// cut what() short, an ESC reach the terminal).
struct BadInput : std::runtime_error {
  explicit BadInput(const std::string& message) : std::runtime_error(config::printable(message)) {}
};

// The text a command prints (after "tdmsim: error: ") for an exception it
// reports as a run-time failure, exit 1: its what(), or for std::bad_alloc
// what to do about it (sim::kOutOfHostMemory, as main's handler prints it).
std::string failure_text(const std::exception& e);

// A size option's value (units::parse_byte_count: a unit or a plain number of
// bytes, above 0), or BadInput naming the option ("--bytes: must be above 0 bytes").
units::Bytes size_option(const std::string& text, const std::string& option);

// The file every output folder a tdmsim command writes carries, so that
// --force replaces a folder only where a tdmsim command wrote it (or it is
// empty): a folder of the user's own is refused whole, not emptied.
inline constexpr const char* kOutputMarker = ".tdmsim-output";
inline constexpr const char* kOutputMarkerText =
    "This folder was written by tdmsim; a tdmsim command given --force may replace it whole.\n";

// The output folder, built as a hidden temporary sibling `.NAME.tmp-PID` and
// renamed into place by commit(); removed on destruction if never committed,
// and by SIGINT/SIGTERM/SIGHUP (the process then exits 128+signal).
//
// The constructor throws BadInput (naming the path) when the target exists
// without `force`, exists and is not a folder, exists with files in it but
// without kOutputMarker (not a tdmsim output), or its parent cannot be created
// or written; it also removes stale staging siblings left by dead processes.
// commit() fsyncs every file first, so a full disk fails the run (exit 1)
// before anything is renamed into place.
class StagedDir {
 public:
  // `inputs`: every file the command reads (required, so that no command
  // forgets them); --force refuses to replace a folder holding one (the
  // replacement would delete it).
  StagedDir(fs::path target, bool force, const std::vector<fs::path>& inputs);
  ~StagedDir();
  StagedDir(const StagedDir&) = delete;
  StagedDir& operator=(const StagedDir&) = delete;

  fs::path file(const std::string& name) const { return staging_ / name; }
  const fs::path& target() const { return target_; }

  // An existing target (--force) is moved aside first and removed only after
  // the new folder is in place.
  void commit();

 private:
  fs::path target_;
  fs::path staging_;
  int slot_ = -1;  // the signal-cleanup slot holding staging_
  bool committed_ = false;
  std::vector<fs::path> made_;  // folders above target_ made for it, innermost first
};

// The first of `inputs` that lies inside folder `dir` (as named, or as links
// resolve, on either side), or none: replacing `dir` would delete it.
std::optional<fs::path> input_inside(const fs::path& dir, const std::vector<fs::path>& inputs);

// Checks a single output file before anything is computed: BadInput (naming
// the path) when it exists without `force`, is a folder or any other file that
// is not a regular one (a FIFO, a device, a socket, a symlink), is one of
// `inputs` (the files the command reads), or its folder cannot be created or
// written. Creates nothing (write_output_file makes the folder). Stale
// `.NAME.tmp.PID` siblings of dead processes go.
void check_output_file(const fs::path& path, bool force, const std::vector<fs::path>& inputs);

// Writes a file check_output_file passed, atomically, making its folder first.
void write_output_file(const fs::path& path, std::string_view bytes);

// Checks that everything written to standard output arrived. While it lives,
// std::cout writes through it into stdio's stdout (the buffer fmt::print also
// uses, so the order is kept), and it remembers the reason (errno) of the
// first failed write, which a stream would otherwise lose.
class StdoutGuard : public std::streambuf {
 public:
  StdoutGuard();
  ~StdoutGuard() override;
  StdoutGuard(const StdoutGuard&) = delete;
  StdoutGuard& operator=(const StdoutGuard&) = delete;

  // A write error reported elsewhere (fmt::print's exception).
  void note_error(int err) {
    if (error_ == 0) error_ = err;
  }
  // Flushes and checks. On failure prints "tdmsim: error: writing standard
  // output: REASON" and returns 1 (a runtime failure) if `exit_code` was 0;
  // otherwise returns `exit_code`.
  int finish(int exit_code);

 protected:
  int overflow(int ch) override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;
  int sync() override;

 private:
  bool put(const char* s, std::size_t n);
  std::streambuf* previous_;
  int error_ = 0;
};

// Removes hidden siblings `.NAME<marker>PID[...]` of `target` whose process
// PID no longer exists (left by a run that was killed). Exposed for tests.
void remove_stale_siblings(const fs::path& target, const std::string& marker);

}  // namespace tdmsim::cli
