// The lock on a sweep's output folder: one sweep at a time writes into a
// folder. It is an flock() on `.sweep.lock` inside the folder, held for the
// sweep's life; the kernel releases it when the process dies, however it dies,
// so a killed sweep never leaves the folder locked. The file holds who took it
// last (pid, host, start time), which a sweep that finds it taken reports.
// Only the process that writes the folder takes it (under MPI, rank 0).
#pragma once

#include <filesystem>
#include <string>

namespace tdmsim::cli {

namespace fs = std::filesystem;

class SweepLock {
 public:
  static constexpr const char* kFile = ".sweep.lock";

  // Creates `dir` if missing and takes its lock without waiting. Throws
  // BadInput if `dir` is not a folder, cannot be created, or another process
  // holds the lock (naming it).
  explicit SweepLock(fs::path dir);
  ~SweepLock();
  SweepLock(const SweepLock&) = delete;
  SweepLock& operator=(const SweepLock&) = delete;

  // Writes this process's pid, host and start time into the lock file: call
  // once the sweep is going to use the folder.
  void record_holder();

  // The sweep will not use the folder (bad input): removes what taking the
  // lock created (the lock file, the folder if it was new and is empty), so
  // the folder is left as it was.
  void abandon();

  // Throws the BadInput the constructor would if a process holds `dir`'s
  // lock now, creating and changing nothing (`sweep --dry-run --output`): a
  // shared lock tried and dropped at once, which fails only against a
  // holder's exclusive one.
  static void check_free(const fs::path& dir);

 private:
  fs::path dir_;
  int fd_ = -1;
  bool created_dir_ = false;
  bool created_file_ = false;
};

// Removes what interrupted writers left behind: inside `dir` (whose lock the
// caller holds, so no live process writes there), every hidden temporary
// `.NAME.tmp.PID` / `.NAME.tmp-PID` (and `-PID.old`); beside it, the hidden
// staging folders `.DIR.tmp-PID` (and `.old`) and files `.DIR.tmp.PID` of
// processes that no longer run (remove_stale_siblings, as every output does).
void remove_stale_temporaries(const fs::path& dir);

}  // namespace tdmsim::cli
