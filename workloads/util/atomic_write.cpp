#include "workloads/util/atomic_write.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include <fcntl.h>
#include <unistd.h>

namespace tdmsim::util {

namespace {

FileError io_error(const std::filesystem::path& path, const char* what, int err) {
  return FileError("cannot " + std::string(what) + " '" + path.string() +
                            "': " + std::strerror(err), err);
}

std::size_t fail_after_from_env() {
  const char* v = std::getenv("TDMSIM_TEST_FAIL_WRITE_AFTER");
  if (v == nullptr || *v == '\0') return 0;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v, &end, 10);
  return (end != nullptr && *end == '\0') ? static_cast<std::size_t>(n) : 0;
}

}  // namespace

OutFile::OutFile(std::filesystem::path path) : path_(std::move(path)), fail_after_(fail_after_from_env()) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd_ < 0) throw io_error(path_, "create", errno);
}

OutFile::~OutFile() {
  if (fd_ >= 0) ::close(fd_);
}

void OutFile::fail(const char* what, int err) {
  ::close(fd_);
  fd_ = -1;
  throw io_error(path_, what, err);
}

void OutFile::write(const void* data, std::size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    if (fail_after_ != 0 && written_ + size > fail_after_) fail("write", ENOSPC);
    const ssize_t n = ::write(fd_, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write", errno);
    }
    p += n;
    size -= static_cast<std::size_t>(n);
    written_ += static_cast<std::size_t>(n);
  }
}

void OutFile::close() {
  // Some file systems (NFS, quotas, delayed allocation) report ENOSPC only here.
  if (::fsync(fd_) != 0 && errno != EINVAL) fail("write", errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) throw io_error(path_, "write", errno);
}

void fsync_path(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw io_error(path, "open", errno);
  // EINVAL: the file system cannot sync this kind of file; nothing to lose.
  if (::fsync(fd) != 0 && errno != EINVAL) {
    const int err = errno;
    ::close(fd);
    throw io_error(path, "write", err);
  }
  ::close(fd);
}

std::string temporary_stem(const std::filesystem::path& target) {
  const std::string name = target.filename().string();
  // ".tmp-" + a pid of up to 10 digits + ".old": 19 bytes at most.
  constexpr std::size_t kSuffix = 19;
  if (1 + name.size() + kSuffix <= kMaxNameBytes) return "." + name;
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a: a name, not a secret
  for (const unsigned char c : name) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return "." + name.substr(0, kMaxNameBytes - kSuffix - 1 - 1 - 16) + "~" + hex;
}

void write_file_atomic(const std::filesystem::path& path, std::string_view text) {
  namespace fs = std::filesystem;
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::error_code ec;
  fs::create_directories(dir, ec);
  const fs::path tmp = dir / (temporary_stem(path) + ".tmp." + std::to_string(::getpid()));
  try {
    OutFile out(tmp);
    out.write(text);
    out.close();
  } catch (const FileError& e) {
    fs::remove(tmp, ec);
    // Name the file the user asked for, with the reason from the temporary one.
    throw FileError("cannot write '" + path.string() + "': " + std::strerror(e.error()), e.error());
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    const int err = ec.value();
    fs::remove(tmp, ec);
    throw FileError("cannot write '" + path.string() + "': " + std::strerror(err), err);
  }
}

}  // namespace tdmsim::util
