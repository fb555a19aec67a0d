#include "workloads/util/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

namespace tdmsim::util {
namespace fs = std::filesystem;

namespace {

std::string limit_text(std::uint64_t bytes) {
  if (bytes % (1ULL << 30) == 0) return std::to_string(bytes >> 30) + " GiB";
  if (bytes % (1ULL << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes) + " bytes";
}

// "cannot be read (file name too long)" from an errno-style code.
std::string os_reason(const std::error_code& ec) {
  if (ec == std::errc::no_such_file_or_directory || ec == std::errc::not_a_directory) {
    return "does not exist";
  }
  std::string m = ec.message();
  if (!m.empty() && m[0] >= 'A' && m[0] <= 'Z') m[0] = static_cast<char>(m[0] - 'A' + 'a');
  return "cannot be read (" + m + ")";
}

std::string type_reason(fs::file_type t) {
  switch (t) {
    case fs::file_type::directory: return "is a folder, not a file";
    case fs::file_type::fifo: return "is not a regular file (a FIFO)";
    case fs::file_type::character: return "is not a regular file (a character device)";
    case fs::file_type::block: return "is not a regular file (a block device)";
    case fs::file_type::socket: return "is not a regular file (a socket)";
    default: return "is not a regular file";
  }
}

fs::file_type type_of(mode_t mode) {
  if (S_ISREG(mode)) return fs::file_type::regular;
  if (S_ISDIR(mode)) return fs::file_type::directory;
  if (S_ISFIFO(mode)) return fs::file_type::fifo;
  if (S_ISCHR(mode)) return fs::file_type::character;
  if (S_ISBLK(mode)) return fs::file_type::block;
  if (S_ISSOCK(mode)) return fs::file_type::socket;
  return fs::file_type::unknown;
}

void check_size(const fs::path& path, std::uint64_t size, InputKind kind) {
  const std::uint64_t limit = max_input_bytes(kind);
  if (size > limit) {
    throw InputFileError(path, "is " + std::to_string(size) + " bytes, over the " +
                                   limit_text(limit) + " limit for a " +
                                   std::string(input_kind_name(kind)));
  }
}

void check_name(const fs::path& path) {
  const std::string& name = path.native();
  if (const std::size_t at = invalid_utf8_at(name); at != std::string::npos) {
    throw InputFileError(path, "has a name that is not valid UTF-8 (byte " + std::to_string(at + 1) +
                                   " of the name)");
  }
}

// Closes the descriptor on every path out of read_input_file.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// "'PATH' REASON", appended piece by piece: GCC 12 warns, falsely, of an
// overflowing memcpy in `"'" + std::string&&` (-Wstringop-overflow).
std::string quoted(const fs::path& path, const std::string& reason) {
  std::string m = "'";
  m += path.string();
  m += "' ";
  m += reason;
  return m;
}

}  // namespace

std::uint64_t max_input_bytes(InputKind kind) {
  switch (kind) {
    case InputKind::yaml: return kMaxYamlBytes;
    case InputKind::routing_trace: return kMaxRoutingTraceBytes;
    case InputKind::descriptor: return kMaxDescriptorBytes;
    case InputKind::kernel_config: return kMaxKernelConfigBytes;
    case InputKind::arrival_trace: return kMaxArrivalTraceBytes;
    case InputKind::traffic_matrix: return kMaxTrafficMatrixBytes;
  }
  return kMaxYamlBytes;
}

std::string_view input_kind_name(InputKind kind) {
  switch (kind) {
    case InputKind::yaml: return "YAML file";
    case InputKind::routing_trace: return "routing trace";
    case InputKind::descriptor: return "descriptor file";
    case InputKind::kernel_config: return "kernel config table";
    case InputKind::arrival_trace: return "arrival trace";
    case InputKind::traffic_matrix: return "traffic matrix";
  }
  return "file";
}

InputFileError::InputFileError(fs::path path, std::string reason)
    : std::runtime_error(quoted(path, reason)),
      path_(std::move(path)),
      reason_(std::move(reason)) {}

void check_input_file(const fs::path& path, InputKind kind) {
  check_name(path);
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (st.type() == fs::file_type::not_found) throw InputFileError(path, "does not exist");
  if (ec) throw InputFileError(path, os_reason(ec));
  if (st.type() != fs::file_type::regular) throw InputFileError(path, type_reason(st.type()));
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) throw InputFileError(path, os_reason(ec));
  check_size(path, size, kind);
}

std::string read_input_file(const fs::path& path, InputKind kind) {
  // Checking first gives the clearest message for a missing file or a folder;
  // the checks on the open descriptor below are what make the read safe.
  check_input_file(path, kind);
  Fd f;
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  f.fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (f.fd < 0) throw InputFileError(path, os_reason(std::error_code(errno, std::generic_category())));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) {
    throw InputFileError(path, os_reason(std::error_code(errno, std::generic_category())));
  }
  if (!S_ISREG(st.st_mode)) throw InputFileError(path, type_reason(type_of(st.st_mode)));
  check_size(path, static_cast<std::uint64_t>(st.st_size), kind);
  const std::uint64_t limit = max_input_bytes(kind);
  std::string text;
  text.reserve(static_cast<std::size_t>(st.st_size));
  char buf[1 << 16];
  while (true) {
    const ssize_t n = ::read(f.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InputFileError(path, os_reason(std::error_code(errno, std::generic_category())));
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    // The file may grow while it is read; never hold more than the limit.
    if (text.size() > limit) check_size(path, text.size(), kind);
  }
  return text;
}

bool input_exists(const fs::path& path) noexcept {
  std::error_code ec;
  return fs::status(path, ec).type() != fs::file_type::not_found && !ec;
}

std::size_t invalid_utf8_at(std::string_view s) noexcept {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) {
      ++i;
      continue;
    }
    std::size_t len = 0;
    std::uint32_t cp = 0;
    std::uint32_t min = 0;
    if (b >= 0xC2 && b <= 0xDF) {
      len = 2, cp = b & 0x1Fu, min = 0x80;
    } else if (b >= 0xE0 && b <= 0xEF) {
      len = 3, cp = b & 0x0Fu, min = 0x800;
    } else if (b >= 0xF0 && b <= 0xF4) {
      len = 4, cp = b & 0x07u, min = 0x10000;
    } else {
      return i;  // a continuation byte, C0/C1 (overlong) or F5..FF
    }
    if (i + len > s.size()) return i;
    for (std::size_t k = 1; k < len; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xC0u) != 0x80u) return i;
      cp = (cp << 6) | (c & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += len;
  }
  return std::string_view::npos;
}

}  // namespace tdmsim::util
