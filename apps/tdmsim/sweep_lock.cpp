#include "apps/tdmsim/sweep_lock.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <optional>
#include <system_error>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/core.h>

#include "apps/tdmsim/output_dir.h"

namespace tdmsim::cli {
namespace {

// The pid in a hidden temporary's name: ".NAME.tmp.PID" (util::write_file_atomic),
// ".NAME.tmp-PID" (StagedDir) or ".NAME.tmp-PID.old" (StagedDir's replaced
// folder).
std::optional<pid_t> temporary_pid(std::string name) {
  if (name.size() < 2 || name.front() != '.') return std::nullopt;
  if (name.ends_with(".old")) name.resize(name.size() - 4);
  const auto tmp = name.rfind(".tmp");
  if (tmp == std::string::npos || tmp + 5 >= name.size() || (name[tmp + 4] != '.' && name[tmp + 4] != '-')) {
    return std::nullopt;
  }
  pid_t pid = 0;
  for (std::size_t i = tmp + 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || pid > 100000000) return std::nullopt;
    pid = pid * 10 + (name[i] - '0');
  }
  return pid;
}

std::string read_fd(int fd) {
  std::string text;
  char buf[512];
  for (off_t at = 0;;) {
    const ssize_t n = ::pread(fd, buf, sizeof buf, at);
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    at += n;
    if (text.size() > 4096) break;
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

// What a sweep that finds the folder's lock taken is told.
BadInput in_use(const fs::path& dir, const std::string& holder) {
  return BadInput(fmt::format(
      "output folder {} is in use by another sweep ({}); wait for it to finish, stop it, or choose another folder",
      dir.string(), holder.empty() ? "holder not yet recorded" : holder));
}

}  // namespace

SweepLock::SweepLock(fs::path dir) : dir_(std::move(dir)) {
  std::error_code ec;
  if (fs::exists(dir_, ec) && !fs::is_directory(dir_, ec)) {
    throw BadInput("output " + dir_.string() + " exists and is not a folder");
  }
  if (!fs::exists(dir_, ec)) {
    created_dir_ = fs::create_directories(dir_, ec);
    if (ec) throw BadInput("cannot create output folder " + dir_.string() + ": " + ec.message());
  }
  const fs::path file = dir_ / kFile;
  created_file_ = !fs::exists(file, ec);
  // O_CLOEXEC: the point processes must not inherit (and so hold) the lock.
  fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    const std::string why = std::strerror(errno);
    abandon();
    throw BadInput("cannot open the lock file " + file.string() + ": " + why);
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const std::string holder = read_fd(fd_);
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK) throw in_use(dir_, holder);
    throw BadInput("cannot lock " + file.string() + ": " + std::strerror(err));
  }
}

void SweepLock::check_free(const fs::path& dir) {
  const fs::path file = dir / kFile;
  // (O_NONBLOCK: a FIFO put in its place must not block the dry run.)
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return;  // no lock file: nobody holds it (one taking it now would be a race either way)
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {  // no sweep's lock file: not held by one
    ::close(fd);
    return;
  }
  // (The shared lock is held for microseconds; a sweep taking the folder in
  // that instant is told the folder is in use, and may start again.)
  if (::flock(fd, LOCK_SH | LOCK_NB) != 0) {
    const int err = errno;
    const std::string holder = read_fd(fd);
    ::close(fd);
    if (err == EWOULDBLOCK) throw in_use(dir, holder);
    throw BadInput("cannot lock " + file.string() + ": " + std::strerror(err));
  }
  ::close(fd);  // (releases the shared lock)
}

SweepLock::~SweepLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

void SweepLock::record_holder() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "?");
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  char when[32] = {};
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &utc);
  const std::string text = fmt::format("pid {} on host {}, started {}\n", ::getpid(), host, when);
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    throw std::runtime_error("cannot write " + (dir_ / kFile).string() + ": " + std::strerror(errno));
  }
}

void SweepLock::abandon() {
  std::error_code ec;
  // Unlinked while still held: a sweep that opened the file meanwhile fails
  // to lock it and stops, and one that opens it later creates a new one.
  if (created_file_) fs::remove(dir_ / kFile, ec);
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (created_dir_ && fs::is_empty(dir_, ec)) fs::remove(dir_, ec);
}

void remove_stale_temporaries(const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const auto pid = temporary_pid(e.path().filename().string());
    if (pid && *pid != ::getpid()) fs::remove_all(e.path(), ec);
  }
  fs::path target = dir;
  if (target.filename().empty()) target = target.parent_path();
  remove_stale_siblings(target, ".tmp-");
  remove_stale_siblings(target, ".tmp.");
}

}  // namespace tdmsim::cli
