// Writes a whole file or nothing: the text goes to a temporary file beside the
// target, which is renamed over it only once complete and on disk, so an
// interrupted or failed run never leaves half-written output.
#pragma once

#include <cstddef>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tdmsim::util {

// A file that could not be created or written: the message names the path;
// error() is the errno, so that a caller can tell a location the user must
// fix (no such folder, no permission: exit 2) from the machine failing (a
// full disk, an I/O error: exit 1).
class FileError : public std::runtime_error {
 public:
  FileError(const std::string& what, int err) : std::runtime_error(what), err_(err) {}
  int error() const { return err_; }

 private:
  int err_;
};

// Throws FileError (naming the path) if the file cannot be written.
void write_file_atomic(const std::filesystem::path& path, std::string_view text);

// The longest name a folder entry may have on the file systems we write to
// (NAME_MAX of ext4, xfs, btrfs, tmpfs).
inline constexpr std::size_t kMaxNameBytes = 255;

// The start of the hidden temporary names kept beside `target` while it is
// written (".NAME" then ".tmp.PID", ".tmp-PID" or ".tmp-PID.old"): ".NAME"
// itself where that leaves room for the longest suffix within kMaxNameBytes,
// else the name's first bytes, "~" and a hash of the whole name, so that a
// target whose own name is legal always has a legal temporary.
std::string temporary_stem(const std::filesystem::path& target);

// A file written with checked POSIX calls: every write, the fsync and the
// close are checked, so a full disk (ENOSPC), a quota or an I/O error is an
// exception naming the path, not a silently short file. Buffered std::ofstream
// reports neither the close error nor an error in its destructor's flush.
//
// Test hook: when the environment variable TDMSIM_TEST_FAIL_WRITE_AFTER is a
// byte count N, a write that would take a file past N bytes fails as if the
// disk were full (ENOSPC). It lets the test suite prove that a failed write
// leaves no partial output without needing a full file system.
class OutFile {
 public:
  explicit OutFile(std::filesystem::path path);  // creates or truncates
  ~OutFile();                                    // closes (unchecked) if close() was not called
  OutFile(const OutFile&) = delete;
  OutFile& operator=(const OutFile&) = delete;

  void write(const void* data, std::size_t size);
  void write(std::string_view text) { write(text.data(), text.size()); }
  // fsync and close; the file is complete and on disk when this returns.
  void close();

 private:
  [[noreturn]] void fail(const char* what, int err);
  std::filesystem::path path_;
  int fd_ = -1;
  std::size_t written_ = 0;
  std::size_t fail_after_ = 0;  // 0: the test hook is off
};

// fsync a file or folder by path (a folder's fsync makes renames in it durable).
void fsync_path(const std::filesystem::path& path);

}  // namespace tdmsim::util
