// The results of a sweep in its output folder: results.jsonl (the journal:
// one JSON object a line, one line per point and path) and results.csv (the
// same rows as a table). A finished point is appended at once, each file with
// one write() of whole lines to a file opened O_APPEND, so a sweep killed at
// any moment keeps every point it finished. On reopening, a torn last line
// (or a point with only some of its rows) is dropped and results.csv is
// rebuilt from the journal. finish() rewrites both files ordered by point,
// so a complete sweep's files do not depend on the order points finished in.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "workloads/config/writer.h"

namespace tdmsim::cli {

namespace fs = std::filesystem;

class ResultsJournal {
 public:
  // Opens (creating if absent) the results in `dir`. `axis_columns`: the CSV
  // columns holding the axis values (axis keys). `current`, if given, says
  // whether a journal row still holds its point's result (its inputs are
  // unchanged); a point with a row that is not is dropped, to run again.
  // `repeat_columns`: the sweep has repeat > 1, and the CSV the columns of
  // the draws' statistics (rows with "repeat"). `jitter_point`, if given (a
  // mode oat sweep with `jitter`), says which points run a jitter value: the
  // CSV ends with a `jitter` column, yes or no.
  ResultsJournal(fs::path dir, std::vector<std::string> axis_columns,
                 std::function<bool(const config::Json&)> current = {}, bool repeat_columns = false,
                 std::function<bool(std::uint64_t)> jitter_point = {});
  ~ResultsJournal();
  ResultsJournal(const ResultsJournal&) = delete;
  ResultsJournal& operator=(const ResultsJournal&) = delete;

  // Points whose rows are all in the journal.
  const std::set<std::uint64_t>& done() const { return done_; }

  // Points dropped on opening because `current` refused their rows.
  std::size_t stale_points() const { return stale_; }

  // Appends one point's rows (each a journal object with "point" and
  // "rows_in_point"). Thread-safe.
  void append(const std::vector<config::Json>& rows);

  // Appends "point,wall_s" to timing.csv: how long each point's process took
  // (informational, kept apart so the results do not depend on the machine).
  void note_wall_time(std::uint64_t point, double wall_s);

  // Rewrites both files ordered by (point, row), atomically.
  void finish();

  // The CSV header and one row as CSV text (no newline).
  std::string csv_header() const;
  std::string csv_row(const config::Json& row) const;

 private:
  void load();
  void open_for_append();
  fs::path dir_;
  std::vector<std::string> axis_columns_;
  std::function<bool(const config::Json&)> current_;
  bool repeat_columns_ = false;
  std::function<bool(std::uint64_t)> jitter_point_;
  std::set<std::uint64_t> done_;
  std::size_t stale_ = 0;
  std::vector<config::Json> rows_;  // every complete row, in journal order
  int jsonl_fd_ = -1;
  int csv_fd_ = -1;
  int timing_fd_ = -1;
  std::mutex mu_;
};

// Writes all of `text` with one write() (retrying only the unwritten rest if
// the kernel returns a short count) and fdatasync()s the file.
void append_whole(int fd, const std::string& text, const fs::path& what);

}  // namespace tdmsim::cli
