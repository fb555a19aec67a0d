// Configuration errors: every one names the file, line, column, key path and
// what was expected, e.g.
//   workloads/machines/x.yaml:12:13: memory.hbm.stacks: must be at least 1, got 0
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tdmsim::config {

// A position in a YAML file; line and column are 1-based (0 = unknown).
struct Location {
  std::string file;
  int line = 0;
  int column = 0;
};

// Text quoted from a user's file, made safe to print: control characters (C0
// but tab and newline, and DEL) as \xNN, a byte-order mark as \ufeff (a raw
// ESC would reach the terminal as an escape sequence, a NUL cut the line).
std::string printable(std::string_view text);

// A file as diagnostics name it: its path, lexically normalised.
std::string display_path(const std::filesystem::path& p);

// Where each key path got its value, across all layers of a file read so far.
using SetMap = std::map<std::string, Location>;

// The nearest recorded location for `path` or one of its parents.
Location nearest_location(const SetMap& set_at, std::string path, const Location& fallback);

struct Diagnostic {
  Location where;
  std::string key;  // dotted key path, e.g. "memory.hbm.stacks"; empty for syntax errors
  std::string message;
  std::string to_string() const;
};

// Thrown by the loader after a file has been read completely, carrying every
// problem found (capped), so a user fixes them all in one pass.
class ConfigError : public std::runtime_error {
 public:
  // Control characters in a key or message (text quoted from a user's file)
  // are written \xNN: a raw ESC would reach the terminal as an escape sequence.
  explicit ConfigError(std::vector<Diagnostic> diagnostics);
  const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }

 private:
  ConfigError(std::vector<Diagnostic> printable_diagnostics, int);
  std::vector<Diagnostic> diagnostics_;
};

// Collects diagnostics while a file is read.
class Diagnostics {
 public:
  static constexpr std::size_t kMaxReported = 50;
  void add(Location where, std::string key, std::string message);
  bool empty() const { return items_.empty(); }
  std::size_t size() const { return items_.size(); }
  const std::vector<Diagnostic>& items() const { return items_; }
  // Throws ConfigError if anything was collected.
  void throw_if_any() const;

 private:
  std::vector<Diagnostic> items_;
};

// " (did you mean 'x'?)" for the closest candidate within a small edit
// distance of `word`, or "" if none is close.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

// Levenshtein distance, used for did-you-mean suggestions.
std::size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace tdmsim::config
